using System.Text.Json;
using System.Text.Json.Nodes;
using NATS.Client.Core;

namespace NatsBroker.Tests.JetStream;

/// <summary>
/// The client side of STREAM.SNAPSHOT / STREAM.RESTORE as the nats CLI drives it (jsm.go snapshots.go
/// createSnapshot / restoreSnapshot), with NATS.Net core requests and subscriptions: NATS.Net 3.3.2 has the request
/// and response models but no snapshot API.
/// </summary>
internal static class SnapshotClient
{
    /// <summary>What a backup received: the API response, the data, and the end marker's status.</summary>
    public sealed record Backup(JsonObject Response, byte[] Data, int EndStatus, string? EndDescription, int Chunks);

    /// <summary>
    /// Requests a snapshot to a fresh inbox and collects its chunks, acknowledging each chunk that has a reply
    /// (unless <paramref name="ack"/> is false), until the empty end message; returns its status code.
    /// </summary>
    public static async Task<Backup> BackupAsync(NatsConnection nc, string stream, bool consumers = true, int? chunkSize = null, int? windowSize = null, bool ack = true, bool check = false, CancellationToken ct = default)
    {
        string inbox = nc.NewInbox();
        await using var sub = await nc.SubscribeCoreAsync<byte[]>(inbox, cancellationToken: ct);
        var request = new JsonObject { ["deliver_subject"] = inbox, ["no_consumers"] = !consumers };
        if (chunkSize is { } c) request["chunk_size"] = c;
        if (windowSize is { } w) request["window_size"] = w;
        if (check) request["jsck"] = true;
        var response = await RequestJsonAsync(nc, $"$JS.API.STREAM.SNAPSHOT.{stream}", request.ToJsonString(), ct);
        if (response["error"] is not null) return new Backup(response, [], 0, null, 0);
        var data = new MemoryStream();
        int chunks = 0;
        while (true)
        {
            var m = await sub.Msgs.ReadAsync(ct);
            if (m.Data is null || m.Data.Length == 0)
                return new Backup(response, data.ToArray(), (int?)m.Headers?.Code ?? 0, m.Headers?.MessageText, chunks);
            chunks++;
            data.Write(m.Data);
            if (ack && m.ReplyTo is { } reply) await nc.PublishAsync(reply, cancellationToken: ct);
        }
    }

    /// <summary>
    /// Restores: the RESTORE request with <paramref name="config"/> (and the state the backup kept), then each
    /// 64 KiB chunk as a request (answered by an empty ack or an error), then the empty end request whose answer is
    /// returned (a stream_create_response). Returns the first error answer instead when one comes earlier.
    /// </summary>
    public static async Task<JsonObject> RestoreAsync(NatsConnection nc, string stream, JsonNode config, JsonNode? state, byte[] data, CancellationToken ct = default)
    {
        var response = await RestoreRequestAsync(nc, stream, config, state, ct);
        if (response["error"] is not null) return response;
        return await SendRestoreDataAsync(nc, response["deliver_subject"]!.GetValue<string>(), data, ct);
    }

    /// <summary>The STREAM.RESTORE request alone (its answer names the deliver subject for the data).</summary>
    public static Task<JsonObject> RestoreRequestAsync(NatsConnection nc, string stream, JsonNode config, JsonNode? state, CancellationToken ct = default)
    {
        var request = new JsonObject { ["config"] = config.DeepClone(), ["state"] = state?.DeepClone() ?? new JsonObject() };
        return RequestJsonAsync(nc, $"$JS.API.STREAM.RESTORE.{stream}", request.ToJsonString(), ct);
    }

    /// <summary>Sends a restore's data in 64 KiB chunks and the empty end request; its answer, or the first error answer.</summary>
    public static async Task<JsonObject> SendRestoreDataAsync(NatsConnection nc, string deliver, byte[] data, CancellationToken ct = default)
    {
        for (int offset = 0; offset < data.Length; offset += 64 * 1024)
        {
            var chunk = data.AsMemory(offset, Math.Min(64 * 1024, data.Length - offset)).ToArray();
            var ackMsg = await nc.RequestAsync<byte[], byte[]>(deliver, chunk, cancellationToken: ct);
            if (ackMsg.Data is { Length: > 0 } answer) return JsonNode.Parse(answer)!.AsObject();
        }
        var final = await nc.RequestAsync<byte[], byte[]>(deliver, [], replyOpts: new NatsSubOpts { Timeout = TimeSpan.FromSeconds(30) }, cancellationToken: ct);
        return JsonNode.Parse(final.Data!)!.AsObject();
    }

    public static async Task<JsonObject> RequestJsonAsync(NatsConnection nc, string subject, string json, CancellationToken ct)
    {
        var reply = await nc.RequestAsync<byte[], byte[]>(subject, System.Text.Encoding.UTF8.GetBytes(json), cancellationToken: ct);
        return JsonNode.Parse(reply.Data!)!.AsObject();
    }

    public static int ErrCode(JsonObject response) => response["error"]?["err_code"]?.GetValue<int>() ?? 0;

    public static string Describe(JsonObject response) => response.ToJsonString(new JsonSerializerOptions { WriteIndented = false });
}
