using System.Text;
using System.Text.Json.Serialization;
using NatsBroker.JetStream.Api;

namespace NatsBroker.JetStream;

// Snapshot and restore advisories (nats-server jetstream_events.go JSSnapshotCreateAdvisory ... JSRestoreCompleteAdvisory,
// sent by jsStreamSnapshotRequest and processStreamRestore), only when someone listens.
internal sealed partial class JsAdvisories
{
    public const string SnapshotCreate = "$JS.EVENT.ADVISORY.STREAM.SNAPSHOT_CREATE";
    public const string SnapshotComplete = "$JS.EVENT.ADVISORY.STREAM.SNAPSHOT_COMPLETE";
    public const string RestoreCreate = "$JS.EVENT.ADVISORY.STREAM.RESTORE_CREATE";
    public const string RestoreComplete = "$JS.EVENT.ADVISORY.STREAM.RESTORE_COMPLETE";
    private static readonly SnapshotAdvisoryJsonContext SnapshotJson = SnapshotAdvisoryJsonContext.Default;

    /// <summary>snapshot_create, after the snapshot response.</summary>
    public void SnapshotCreated(string stream, StreamStateInfo state, object? origin)
    {
        var subject = Encoding.UTF8.GetBytes(SnapshotCreate + "." + stream);
        if (!js.HasInterest(subject)) return;
        Send(subject, new JsSnapshotCreateAdvisory { Type = AdvisoryType + "snapshot_create", Stream = stream, State = state, Client = ClientInfo(origin), Domain = Domain },
            SnapshotJson.JsSnapshotCreateAdvisory);
    }

    /// <summary>snapshot_complete, when the transfer ended (<paramref name="error"/> when it failed).</summary>
    public void SnapshotCompleted(string stream, DateTime start, DateTime end, object? origin, string? error)
    {
        var subject = Encoding.UTF8.GetBytes(SnapshotComplete + "." + stream);
        if (!js.HasInterest(subject)) return;
        Send(subject, new JsSnapshotCompleteAdvisory { Type = AdvisoryType + "snapshot_complete", Stream = stream, Start = start, End = end, Client = ClientInfo(origin), Domain = Domain, Error = error },
            SnapshotJson.JsSnapshotCompleteAdvisory);
    }

    /// <summary>restore_create, before the restore response (as nats-server).</summary>
    public void RestoreCreated(string stream, object? origin)
    {
        var subject = Encoding.UTF8.GetBytes(RestoreCreate + "." + stream);
        if (!js.HasInterest(subject)) return;
        Send(subject, new JsRestoreCreateAdvisory { Type = AdvisoryType + "restore_create", Stream = stream, Client = ClientInfo(origin), Domain = Domain },
            SnapshotJson.JsRestoreCreateAdvisory);
    }

    /// <summary>restore_complete, when the restore ended, failed or not (as nats-server's finish).</summary>
    public void RestoreCompleted(string stream, DateTime start, DateTime end, long bytes, object? origin)
    {
        var subject = Encoding.UTF8.GetBytes(RestoreComplete + "." + stream);
        if (!js.HasInterest(subject)) return;
        Send(subject, new JsRestoreCompleteAdvisory { Type = AdvisoryType + "restore_complete", Stream = stream, Start = start, End = end, Bytes = bytes, Client = ClientInfo(origin), Domain = Domain },
            SnapshotJson.JsRestoreCompleteAdvisory);
    }
}

/// <summary>io.nats.jetstream.advisory.v1.snapshot_create.</summary>
public sealed class JsSnapshotCreateAdvisory : TypedEvent
{
    public string Stream { get; set; } = "";
    public StreamStateInfo State { get; set; } = new();
    /// <summary>Always written (Go: a pointer without omitempty).</summary>
    [JsonIgnore(Condition = JsonIgnoreCondition.Never)] public AdvisoryClientInfo? Client { get; set; }
    public string? Domain { get; set; }
}

/// <summary>io.nats.jetstream.advisory.v1.snapshot_complete.</summary>
public sealed class JsSnapshotCompleteAdvisory : TypedEvent
{
    public string Stream { get; set; } = "";
    public DateTime Start { get; set; }
    public DateTime End { get; set; }
    [JsonIgnore(Condition = JsonIgnoreCondition.Never)] public AdvisoryClientInfo? Client { get; set; }
    public string? Domain { get; set; }
    public string? Error { get; set; }
}

/// <summary>io.nats.jetstream.advisory.v1.restore_create.</summary>
public sealed class JsRestoreCreateAdvisory : TypedEvent
{
    public string Stream { get; set; } = "";
    [JsonIgnore(Condition = JsonIgnoreCondition.Never)] public AdvisoryClientInfo? Client { get; set; }
    public string? Domain { get; set; }
}

/// <summary>io.nats.jetstream.advisory.v1.restore_complete.</summary>
public sealed class JsRestoreCompleteAdvisory : TypedEvent
{
    public string Stream { get; set; } = "";
    public DateTime Start { get; set; }
    public DateTime End { get; set; }
    public long Bytes { get; set; }
    [JsonIgnore(Condition = JsonIgnoreCondition.Never)] public AdvisoryClientInfo? Client { get; set; }
    public string? Domain { get; set; }
}

[JsonSourceGenerationOptions(
    PropertyNamingPolicy = JsonKnownNamingPolicy.SnakeCaseLower,
    DefaultIgnoreCondition = JsonIgnoreCondition.WhenWritingNull,
    Converters = [typeof(GoTimeConverter), typeof(GoNullableTimeConverter)])]
[JsonSerializable(typeof(JsSnapshotCreateAdvisory))]
[JsonSerializable(typeof(JsSnapshotCompleteAdvisory))]
[JsonSerializable(typeof(JsRestoreCreateAdvisory))]
[JsonSerializable(typeof(JsRestoreCompleteAdvisory))]
internal sealed partial class SnapshotAdvisoryJsonContext : JsonSerializerContext;
