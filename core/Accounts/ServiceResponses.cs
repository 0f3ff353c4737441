using System.Collections.Concurrent;
using System.Text;
using NatsBroker.Configuration;
using NatsBroker.Routing;
using NatsBroker.Subscriptions;

namespace NatsBroker.Accounts;

/// <summary>
/// Reply mappings for requests that came into this (exporting) account through service imports. Each request gets
/// a reply subject <c>_R_.&lt;prefix&gt;.&lt;id&gt;</c>; one wildcard subscription <c>_R_.&lt;prefix&gt;.&gt;</c> in the
/// exporter's router catches the responses and republishes them to the requester's original reply in the
/// importing account. Singleton mappings end with the first response; streamed and chunked ones live until they
/// expire (nats-server's default response threshold, 2 minutes: server/accounts.go DEFAULT_SERVICE_EXPORT_RESPONSE_THRESHOLD).
/// </summary>
internal sealed class ServiceResponses : ISubscriber
{
    public static readonly TimeSpan ResponseThreshold = TimeSpan.FromMinutes(2);
    // nats-server's reply subjects look like _R_.<6 base62>.<6 base62>; ours encode a counter in the second part.
    private const string Base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    private const int IdDigits = 11; // 62^11 > 2^64
    private static ReadOnlySpan<byte> JsAckPrefix => "$JS.ACK."u8;

    private readonly Account _exporter;
    private readonly ConcurrentDictionary<ulong, Pending> _pending = new();
    private readonly byte[] _prefix;
    private long _nextId;
    private long _nextSweepTicks;

    private record Pending(Account Importer, byte[] Reply, ServiceResponseType Type, long ExpiresTicks);

    // A sampled request (latency tracking): a subtype so untracked requests allocate no more than before.
    private sealed record TrackedPending(Account Importer, byte[] Reply, ServiceResponseType Type, long ExpiresTicks, LatencyTracking Tracking, string ReplyText)
        : Pending(Importer, Reply, Type, ExpiresTicks);

    public ServiceResponses(Account exporter)
    {
        _exporter = exporter;
        Span<char> p = stackalloc char[6];
        for (int i = 0; i < p.Length; i++) p[i] = Base62[Random.Shared.Next(Base62.Length)];
        string prefix = "_R_." + new string(p) + ".";
        _prefix = Encoding.ASCII.GetBytes(prefix);
        exporter.Router.Subscribe(prefix + ">", this);
    }

    /// <summary>Mappings waiting for a response (for monitoring and tests).</summary>
    public int Count => _pending.Count;

    /// <summary>Maps one request's reply; returns the reply subject to use in the exporter and the mapping's id.</summary>
    public (byte[] Reply, ulong Id) Add(Account importer, ReadOnlySpan<byte> reply, ServiceResponseType type, LatencyTracking? tracking = null)
    {
        long now = Environment.TickCount64;
        SweepIfDue(now);
        ulong id = (ulong)Interlocked.Increment(ref _nextId);
        long expires = now + (long)ResponseThreshold.TotalMilliseconds;
        if (tracking is null)
        {
            _pending[id] = new Pending(importer, reply.ToArray(), type, expires);
        }
        else
        {
            string replyText = Encoding.UTF8.GetString(reply);
            _pending[id] = new TrackedPending(importer, reply.ToArray(), type, expires, tracking, replyText);
            importer.TrackedReplies.Add(replyText, this, id);
        }
        // At least 6 digits (as nats-server's), more as the counter grows; parsed back without allocating.
        Span<byte> digits = stackalloc byte[IdDigits];
        int count = 0;
        for (ulong v = id; v > 0 || count < 6; v /= 62) digits[count++] = (byte)Base62[(int)(v % 62)];
        var subject = new byte[_prefix.Length + count];
        _prefix.CopyTo(subject, 0);
        for (int i = 0; i < count; i++) subject[_prefix.Length + i] = digits[count - 1 - i];
        return (subject, id);
    }

    public void Remove(ulong id)
    {
        if (_pending.TryRemove(id, out var p)) Untrack(p, id);
    }

    /// <summary>
    /// The requester no longer listens on the reply (<see cref="TrackedReplies"/>): a sampled request still waiting
    /// reports 408 and its mapping ends (accounts.go sendReplyInterestLostTrackLatency).
    /// </summary>
    public void InterestLost(ulong id)
    {
        if (_pending.TryRemove(id, out var p) && p is TrackedPending tracked) tracked.Tracking.InterestLost();
    }

    private void Untrack(Pending p, ulong id)
    {
        if (p is TrackedPending tracked) tracked.Importer.TrackedReplies.Remove(tracked.ReplyText, this, id);
    }

    public DeliveryOutcome Deliver(Subscription sub, ref RoutedMessage msg, DeliveryBatch batch)
    {
        if (!TryParseId(msg.RouteSubject, out ulong id) || !_pending.TryGetValue(id, out var p)) return DeliveryOutcome.Skipped;
        if (Environment.TickCount64 > p.ExpiresTicks)
        {
            if (_pending.TryRemove(id, out _) && p is TrackedPending expired)
            {
                Untrack(p, id);
                expired.Tracking.TimedOut();
            }
            return DeliveryOutcome.Skipped;
        }
        if (p.Type == ServiceResponseType.Singleton && !_pending.TryRemove(id, out _)) return DeliveryOutcome.Skipped;
        Untrack(p, id);
        // Only singleton requests are tracked (TrackServiceExportWithSampling refuses other response types).
        if (p is TrackedPending tracked) tracked.Tracking.Responded(msg.Origin, batch);
        // A JetStream pull delivery (MSG.NEXT through an imported $JS.API) is routed to the requester's reply and
        // keeps the stored subject and its $JS.ACK reply, so the importer can ack through its $JS.ACK import
        // (client.go processServiceImport: pa.deliver passed on, a $JS.ACK reply not remapped). Other responses
        // go out without a reply, as before.
        if (msg.IsRedirected || msg.Reply.StartsWith(JsAckPrefix))
            p.Importer.Router.Publish(msg.Origin, p.Reply, msg.IsRedirected ? msg.Subject : p.Reply, msg.Reply, msg.HeaderSize, msg.Payload, null, batch);
        else
            p.Importer.Router.Publish(msg.Origin, p.Reply, default, msg.HeaderSize, msg.Payload, null, batch);
        return DeliveryOutcome.Delivered;
    }

    private bool TryParseId(ReadOnlySpan<byte> subject, out ulong id)
    {
        id = 0;
        if (!subject.StartsWith(_prefix)) return false;
        var digits = subject[_prefix.Length..];
        if (digits.Length is 0 or > IdDigits) return false;
        foreach (byte b in digits)
        {
            int d = b is >= (byte)'0' and <= (byte)'9' ? b - '0'
                : b is >= (byte)'A' and <= (byte)'Z' ? b - 'A' + 10
                : b is >= (byte)'a' and <= (byte)'z' ? b - 'a' + 36 : -1;
            if (d < 0) return false;
            id = unchecked(id * 62 + (uint)d);
        }
        return true;
    }

    /// <summary>Drops expired mappings, at most once a second, from the request path (no timer of its own).</summary>
    private void SweepIfDue(long now)
    {
        long due = Volatile.Read(ref _nextSweepTicks);
        if (now < due || Interlocked.CompareExchange(ref _nextSweepTicks, now + 1000, due) != due) return;
        foreach (var (id, p) in _pending)
        {
            // rsiTimeout: a sampled request that got no response within the threshold reports a 504.
            if (now > p.ExpiresTicks && _pending.TryRemove(id, out _) && p is TrackedPending tracked)
            {
                Untrack(p, id);
                tracked.Tracking.TimedOut();
            }
        }
    }
}
