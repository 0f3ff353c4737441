using System.Diagnostics;
using Microsoft.Extensions.Logging;
using NatsBroker.JetStream.Api;
using NatsBroker.JetStream.Snapshots;

namespace NatsBroker.JetStream;

// $JS.API.STREAM.SNAPSHOT.<stream> and $JS.API.STREAM.RESTORE.<stream> (nats-server jetstream_api.go
// jsStreamSnapshotRequest / streamSnapshot, jsStreamRestoreRequest / processStreamRestore). The wire protocol is
// nats-server's; the snapshot bytes are this server's own format (Snapshots/SnapshotFormat.cs, README "Snapshots").
public sealed partial class JetStreamService
{
    /// <summary>nats-server defaultSnapshotChunkSize / defaultSnapshotWindowSize.</summary>
    private const int DefaultSnapshotChunk = 128 * 1024, DefaultSnapshotWindow = 8 * 1024 * 1024;

    private bool StreamSnapshot(ApiRequest req, string name)
    {
        const string type = "stream_snapshot_response";
        if (IsEmptyRequest(req.Body)) return Fail(req, type, JsErrors.BadRequest);
        if (!req.JetStream.TryGet(name, out var stream)) return Fail(req, type, JsErrors.StreamNotFound);
        // Decoded strictly (unmarshalRequest), after the stream lookup as in jsStreamSnapshotRequest.
        if (!JsJson.TryParseStrict(req.Body, SnapshotJsonContext.Default.StreamSnapshotRequest, GoSchemas.StreamSnapshotRequest, out var r, out var perr)) return Fail(req, type, perr!);
        if (r!.DeliverSubject is not { Length: > 0 } deliver || !Scheduling.MsgSchedulePattern.IsValidPublishSubject(deliver))
            return Fail(req, type, SnapshotErrors.DeliverSubjectInvalid);
        var source = StreamSnapshotSource.Capture(stream, includeConsumers: r.NoConsumers != true);
        if (r.CheckMsgs == true && source.CheckMessages() is { } bad)
        {
            Logger.LogWarning("Snapshot of stream '{Account} > {Stream}' failed: {Error}", req.JetStream.Name, name, bad);
            return Fail(req, type, SnapshotErrors.StreamSnapshot(bad));
        }
        var info = stream.Info();
        Respond(req, JsJson.Serialize(new StreamSnapshotResponse { Type = P + type, Config = stream.Config, State = info.State }, SnapshotJsonContext.Default.StreamSnapshotResponse));
        var origin = req.Origin;
        req.JetStream.Advisories.SnapshotCreated(name, info.State, origin);
        // streamSnapshot's sizes: chunk clamped to 1 KiB..1 MiB, window to 1 KiB..32 MiB and at least one chunk.
        int chunk = Math.Clamp(r.ChunkSize is > 0 and var c ? c : DefaultSnapshotChunk, 1024, 1024 * 1024);
        int window = Math.Max(chunk, Math.Clamp(r.WindowSize is > 0 and var w ? w : DefaultSnapshotWindow, 1024, 32 * 1024 * 1024));
        var js = req.JetStream;
        _ = Task.Run(() => SendSnapshotAsync(js, stream, source, deliver, chunk, window / chunk, origin));
        return true;
    }

    /// <summary>Streams one snapshot to its deliver subject; ends with the 204 marker or an error status. Never throws.</summary>
    private async Task SendSnapshotAsync(JsAccount js, JsStream stream, StreamSnapshotSource source, string deliver, int chunk, int maxInflight, object? origin)
    {
        var started = Stopwatch.GetTimestamp();
        var startedAt = DateTime.UtcNow;
        string? error = null;
        var ct = _stop.Token;
        await using var sender = new SnapshotChunkSender(js, stream.Name, deliver, chunk, maxInflight);
        try
        {
            await sender.WaitForInterestAsync(ct).ConfigureAwait(false);
            await using (var frames = new S2FrameWriter(sender))
            {
                await source.WriteAsync(new SnapshotWriter(frames), ct).ConfigureAwait(false);
                await frames.FlushAsync(ct).ConfigureAwait(false);
            }
            sender.Finish();
            Logger.LogInformation("Completed snapshot of {Bytes} bytes for stream '{Account} > {Stream}' in {Elapsed}",
                sender.BytesSent, js.Name, stream.Name, Stopwatch.GetElapsedTime(started));
        }
        catch (SnapshotAbortedException ex)
        {
            error = ex.Status;
            sender.Abort(ex.Status);
            Logger.LogWarning("Snapshot for stream '{Account} > {Stream}' failed after {Elapsed}: {Error}", js.Name, stream.Name, Stopwatch.GetElapsedTime(started), ex.Status);
        }
        catch (OperationCanceledException)
        {
            error = "server shutting down";
            sender.Abort("500 " + error);
        }
        catch (Exception ex)
        {
            error = ex.Message;
            sender.Abort("500 " + ex.Message);
            Logger.LogError(ex, "Snapshot for stream '{Account} > {Stream}' failed", js.Name, stream.Name);
        }
        js.Advisories.SnapshotCompleted(stream.Name, startedAt, DateTime.UtcNow, origin, error);
    }

    private bool StreamRestore(ApiRequest req, string name)
    {
        const string type = "stream_restore_response";
        if (IsEmptyRequest(req.Body)) return Fail(req, type, JsErrors.BadRequest);
        if (!JsJson.TryParseStrict(req.Body, SnapshotJsonContext.Default.StreamRestoreRequest, GoSchemas.StreamRestoreRequest, out var r, out var perr)) return Fail(req, type, perr!);
        var cfg = r!.Config ?? new StreamConfig();
        if (string.IsNullOrEmpty(cfg.Name)) cfg.Name = name;
        if (cfg.Name != name) return Fail(req, type, JsErrors.StreamMismatch);
        if (name.AsSpan().IndexOfAny('/', '\\') >= 0) return Fail(req, type, JsErrors.StreamNameContainsPathSeparators);
        // checkStreamCfg at the start of the restore, not at its end (nats-server), then the account's limits.
        if (JsConfigCheck.CheckStream(cfg, req.JetStream) is { } err) return Fail(req, type, err);
        AssetVersioning.SetStatic(cfg);
        // Subjects overlapping another stream are not refused here (checkStreamCfg does not look at other streams):
        // nats-server accepts the request and fails when the restored stream is added (AddRestored).
        if (req.JetStream.CheckRestoreRequest(cfg) is { } refused) return Fail(req, type, refused);
        var session = new RestoreSession(req.JetStream, cfg, req.Origin);
        req.JetStream.Advisories.RestoreCreated(name, req.Origin);
        Logger.LogInformation("Starting restore for stream '{Account} > {Stream}'", req.JetStream.Name, name);
        Respond(req, JsJson.Serialize(new StreamRestoreResponse { Type = P + type, DeliverSubject = session.DeliverSubject }, SnapshotJsonContext.Default.StreamRestoreResponse));
        _ = Task.Run(() => session.RunAsync(_stop.Token));
        return true;
    }

    /// <summary>nats-server isEmptyRequest: no body, or a JSON object without members.</summary>
    private static bool IsEmptyRequest(ReadOnlySpan<byte> body)
    {
        if (body.IsEmpty || body.SequenceEqual("{}"u8)) return true;
        var reader = new System.Text.Json.Utf8JsonReader(body);
        try
        {
            return reader.Read() && reader.TokenType == System.Text.Json.JsonTokenType.StartObject
                && reader.Read() && reader.TokenType == System.Text.Json.JsonTokenType.EndObject && !reader.Read();
        }
        catch (System.Text.Json.JsonException)
        {
            return false; // not JSON: the parse that follows answers "invalid JSON"
        }
    }

    /// <summary>The stream_create_response a restore ends with (nats-server: the created stream's info).</summary>
    internal static byte[] StreamCreateResponseJson(StreamInfo info) => StreamInfoJson("stream_create_response", info);
}
