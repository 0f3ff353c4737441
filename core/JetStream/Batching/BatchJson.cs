using System.Text.Json.Serialization;
using NatsBroker.JetStream.Api;

namespace NatsBroker.JetStream.Batching;

/// <summary>nats-server JSStreamBatchAbandonedAdvisory (jetstream_events.go), sent on $JS.EVENT.ADVISORY.STREAM.BATCH_ABANDONED.&lt;stream&gt;.</summary>
internal sealed class BatchAbandonedAdvisory
{
    public string Type { get; set; } = "io.nats.jetstream.advisory.v1.stream_batch_abandoned";
    public string Id { get; set; } = "";
    [JsonConverter(typeof(GoTimeConverter))] public DateTime Timestamp { get; set; }
    public string Stream { get; set; } = "";
    public string? Domain { get; set; }
    public string Batch { get; set; } = "";
    /// <summary>timeout, large, incomplete or unsupported (nats-server BatchAbandonReason).</summary>
    public string Reason { get; set; } = "";
}

/// <summary>nats-server BatchFlowErr (stream.go): a fast-ingest message refused by a check, sent on the batch's reply.</summary>
internal sealed class BatchFlowErr
{
    public string Type { get; set; } = "err";
    public ulong Seq { get; set; }
    public ApiError? Error { get; set; }
}

[JsonSourceGenerationOptions(PropertyNamingPolicy = JsonKnownNamingPolicy.SnakeCaseLower, DefaultIgnoreCondition = JsonIgnoreCondition.WhenWritingNull)]
[JsonSerializable(typeof(BatchAbandonedAdvisory))]
[JsonSerializable(typeof(BatchFlowErr))]
internal sealed partial class BatchJsonContext : JsonSerializerContext;
