using System.Text.Json.Serialization;

namespace NatsBroker.JetStream.Api;

/// <summary>
/// A DIRECT.GET request (nats-server JSApiMsgGetRequest, 2.11): one message by seq / last_by_subj /
/// next_by_subj, a batch (with max_bytes, start_time), or the last messages of several subjects (multi_last,
/// up_to_seq, up_to_time); no_hdr leaves the stored headers out.
/// </summary>
public sealed class DirectGetRequest
{
    public ulong? Seq { get; set; }
    public string? LastBySubj { get; set; }
    public string? NextBySubj { get; set; }
    public int? Batch { get; set; }
    public int? MaxBytes { get; set; }
    public DateTime? StartTime { get; set; }
    public string[]? MultiLast { get; set; }
    public ulong? UpToSeq { get; set; }
    public DateTime? UpToTime { get; set; }
    [JsonPropertyName("no_hdr")] public bool? NoHeaders { get; set; }
}

/// <summary>$JS.API.CONSUMER.PAUSE request (2.11): a zero or missing time resumes.</summary>
public sealed class ConsumerPauseRequest
{
    public DateTime? PauseUntil { get; set; }
}

/// <summary>$JS.API.CONSUMER.RESET request (2.14): no seq (or 0) = back to the ack floor.</summary>
public sealed class ConsumerResetRequest
{
    public ulong? Seq { get; set; }
}

/// <summary>io.nats.jetstream.api.v1.consumer_pause_response.</summary>
public sealed class ConsumerPauseResponse : ApiResponse
{
    public bool Paused { get; set; }
    [JsonIgnore(Condition = JsonIgnoreCondition.Never)] public DateTime PauseUntil { get; set; }
    public long? PauseRemaining { get; set; }
}

[JsonSourceGenerationOptions(
    PropertyNamingPolicy = JsonKnownNamingPolicy.SnakeCaseLower,
    DefaultIgnoreCondition = JsonIgnoreCondition.WhenWritingNull,
    Converters = [typeof(GoTimeConverter), typeof(GoNullableTimeConverter)])]
[JsonSerializable(typeof(DirectGetRequest))]
[JsonSerializable(typeof(ConsumerPauseRequest))]
[JsonSerializable(typeof(ConsumerPauseResponse))]
[JsonSerializable(typeof(ConsumerResetRequest))]
internal sealed partial class JsDirectJsonContext : JsonSerializerContext;
