using System.Globalization;

namespace NatsBroker.JetStream;

// Taking pull requests in, as nats-server's processNextMsgRequest: the refusals decided by the config alone (also
// for +NXT acks), then on the consumer's loop the pin, no_wait and max_waiting decisions against its state.
internal sealed partial class JsConsumer
{
    private static readonly byte[] NoMessages = NatsHeaders.Status(404, "No Messages");
    private static readonly byte[] RequestsPending = NatsHeaders.Status(408, "Requests Pending");
    private static readonly byte[] ExceededMaxWaiting = NatsHeaders.Status(409, "Exceeded MaxWaiting");

    /// <summary>
    /// The statuses a parsed request gets before it is queued, in nats-server's order: 409 over max_batch /
    /// max_expires / max_bytes, then the priority group 400s; null when it may wait.
    /// </summary>
    internal byte[]? RefusePull(in PullFields f)
    {
        var cfg = Config;
        if (cfg.MaxBatch is > 0 && f.Batch > cfg.MaxBatch)
            return NatsHeaders.Status(409, $"Exceeded MaxRequestBatch of {cfg.MaxBatch}");
        // Go compares deadlines taken a moment apart, so an expiry equal to the limit passes.
        if (f.Expires != 0 && cfg.MaxExpires is > 0 and var maxExpires && f.Expires > maxExpires)
            return NatsHeaders.Status(409, "Exceeded MaxRequestExpires of " + GoDurationFormat.Format(maxExpires));
        if (f.MaxBytes > 0 && cfg.MaxBytes is > 0 && f.MaxBytes > cfg.MaxBytes)
            return NatsHeaders.Status(409, $"Exceeded MaxRequestMaxBytes of {cfg.MaxBytes}");
        return f.Json ? RefusePriorityFields(f) : null;
    }

    /// <summary>A waiting request for <paramref name="f"/> answered on <paramref name="reply"/>.</summary>
    internal static PullRequest NewPull(byte[] reply, in PullFields f, long now) => new()
    {
        Reply = reply,
        Remaining = f.Batch,
        BytesRemaining = Math.Max(0, f.MaxBytes),
        // Go's deadline is time.Now().Add(expires): a negative one is already past.
        ExpiresAt = f.Expires == 0 ? long.MaxValue : now + (f.Expires > 0 ? Math.Max(1, f.Expires / 1_000_000) : f.Expires / 1_000_000 - 1),
        HasExpiry = f.Expires != 0,
        NoWait = f.NoWait,
        HeartbeatMs = f.Heartbeat > 0 ? Math.Max(1, f.Heartbeat / 1_000_000) : 0,
        HasPriorityGroup = f.Json,
        Group = f.Group,
        MinPending = f.MinPending,
        MinAckPending = f.MinAckPending,
        PinId = f.Id,
        Priority = (int)Math.Clamp(f.Priority, 0, 9),
    };

    /// <summary>
    /// On the loop: a request taken from the inbox (or a +NXT ack) either waits or is answered now
    /// (processNextMsgRequest): 423 for another pin; no_wait with nothing to deliver and no expiry 404; no_wait asking
    /// less than the waiting requests already want 408 "Requests Pending"; a full queue 409 "Exceeded MaxWaiting",
    /// except for requests with idle heartbeats (nats-server leaves those to time out, so clients do not spin).
    /// </summary>
    private void Admit(PullRequest req, long now)
    {
        _lastActiveTick = now;
        if (!AdmitPinned(req, now)) return;
        int maxWaiting = Config.MaxWaiting ?? 512;
        if (_waiting.Count >= maxWaiting || req.NoWait) ProcessWaiting(now, endOfStream: false);
        if (req.NoWait)
        {
            long msgsPending = Math.Max(0, Interlocked.Read(ref _numPending)) + _redeliver.Count;
            if (msgsPending == 0 && !req.HasExpiry)
            {
                _stream.Js.Publish(req.Reply, default, NoMessages, default);
                return;
            }
            if (msgsPending > 0)
            {
                long wanted = 0;
                foreach (var w in _waiting) wanted += w.Remaining;
                if (msgsPending < wanted)
                {
                    _stream.Js.Publish(req.Reply, default, RequestsPending, default);
                    return;
                }
            }
        }
        if (_waiting.Count >= maxWaiting)
        {
            if (req.HeartbeatMs == 0) _stream.Js.Publish(req.Reply, default, ExceededMaxWaiting, default);
            return;
        }
        if (req.HeartbeatMs > 0) req.NextHeartbeatAt = now + req.HeartbeatMs;
        AddWaiting(req);
    }

    /// <summary>A status with the request's Nats-Pending-Messages / Nats-Pending-Bytes (nats-server wr.n / wr.b).</summary>
    private static byte[] PendingStatus(int code, string text, PullRequest r) => NatsHeaders.Status(code, text,
        ("Nats-Pending-Messages", r.Remaining.ToString(CultureInfo.InvariantCulture)),
        ("Nats-Pending-Bytes", r.BytesRemaining.ToString(CultureInfo.InvariantCulture)));
}
