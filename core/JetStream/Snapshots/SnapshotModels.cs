using System.Text.Json.Serialization;
using NatsBroker.JetStream.Api;

namespace NatsBroker.JetStream.Snapshots;

/// <summary>STREAM.SNAPSHOT request (nats-server jetstream_api.go JSApiStreamSnapshotRequest).</summary>
public sealed class StreamSnapshotRequest
{
    public string? DeliverSubject { get; set; }
    public bool? NoConsumers { get; set; }
    /// <summary>Bytes per chunk; 0 = 128 KiB, clamped to 1 KiB..1 MiB (nats-server streamSnapshot).</summary>
    public int? ChunkSize { get; set; }
    /// <summary>Bytes of unacknowledged chunks; 0 = 8 MiB, clamped to 1 KiB..32 MiB and at least one chunk.</summary>
    public int? WindowSize { get; set; }
    /// <summary>Check every message before the snapshot is answered ("jsck").</summary>
    [JsonPropertyName("jsck")] public bool? CheckMsgs { get; set; }
}

/// <summary>STREAM.SNAPSHOT response (JSApiStreamSnapshotResponse): the stream's config and state at the snapshot.</summary>
public sealed class StreamSnapshotResponse : ApiResponse
{
    public StreamConfig? Config { get; set; }
    public StreamStateInfo? State { get; set; }
}

/// <summary>STREAM.RESTORE request (JSApiStreamRestoreRequest): the config the restored stream gets, and the state the client kept (informational).</summary>
public sealed class StreamRestoreRequest
{
    public StreamConfig? Config { get; set; }
    public StreamStateInfo? State { get; set; }
}

/// <summary>STREAM.RESTORE response (JSApiStreamRestoreResponse): where the client publishes the snapshot's chunks.</summary>
public sealed class StreamRestoreResponse : ApiResponse
{
    /// <summary>Always written, as nats-server's field has no omitempty.</summary>
    [JsonIgnore(Condition = JsonIgnoreCondition.Never)] public string DeliverSubject { get; set; } = "";
}

/// <summary>Source-generated JSON for the snapshot endpoints, with the API context's options (snake_case, nulls skipped, Go times).</summary>
[JsonSourceGenerationOptions(
    PropertyNamingPolicy = JsonKnownNamingPolicy.SnakeCaseLower,
    DefaultIgnoreCondition = JsonIgnoreCondition.WhenWritingNull,
    Converters = [typeof(GoTimeConverter), typeof(GoNullableTimeConverter)])]
[JsonSerializable(typeof(StreamSnapshotRequest))]
[JsonSerializable(typeof(StreamSnapshotResponse))]
[JsonSerializable(typeof(StreamRestoreRequest))]
[JsonSerializable(typeof(StreamRestoreResponse))]
internal sealed partial class SnapshotJsonContext : JsonSerializerContext;
