using System.Runtime.InteropServices;
using NatsBroker.Configuration;

namespace NatsBroker.Auth;

/// <summary>
/// allow_responses for one connection (server/client.go c.replies, deliverMsg, pubAllowedFullCheck,
/// pruneReplyPerms). Every message delivered to the client with a reply subject records that reply; the client
/// may then publish to it, even where its publish permissions deny, up to MaxMsgs times within Expires of the
/// delivery (either limit ≤ 0 means unlimited). Re-delivering the same reply restarts its count and clock.
/// <para>Defaults (server/const.go): <c>allow_responses: true</c> = MaxMsgs 1, Expires 2 minutes; 0 in a map
/// means the default.</para>
/// <para>Bounded: past <see cref="PruneThreshold"/> entries (nats-server's replyPermLimit) spent and expired
/// replies are dropped, as nats-server does. nats-server stops there and can grow without limit when a client
/// receives more than that many live replies; this tracker additionally evicts the oldest entries beyond
/// <see cref="MaxEntries"/>, so in that extreme case the oldest replies lose their permission early.</para>
/// </summary>
public sealed class ResponseTracker
{
    public const int PruneThreshold = 4096;
    public const int DefaultMaxEntries = 16 * 1024;

    private readonly Lock _lock = new();
    private readonly Dictionary<byte[], Entry> _replies = new(ByteKeyComparer.Instance);
    private readonly Dictionary<byte[], Entry>.AlternateLookup<ReadOnlySpan<byte>> _lookup;
    private readonly TimeProvider _time;
    private readonly long _expiresTicks; // in TimeProvider timestamp units; ≤ 0 = never
    private int _nextPrune;

    private struct Entry
    {
        public long Delivered;
        public int Count;
    }

    public ResponseTracker(ResponsePermission permission, TimeProvider? time = null, int maxEntries = DefaultMaxEntries)
    {
        ArgumentNullException.ThrowIfNull(permission);
        ArgumentOutOfRangeException.ThrowIfLessThan(maxEntries, 1);
        _time = time ?? TimeProvider.System;
        MaxMsgs = permission.MaxMsgs == 0 ? ResponsePermission.DefaultMaxMsgs : permission.MaxMsgs;
        Expires = permission.Expires == TimeSpan.Zero ? ResponsePermission.DefaultExpires : permission.Expires;
        _expiresTicks = Expires <= TimeSpan.Zero ? 0 : (long)(Expires.TotalSeconds * _time.TimestampFrequency);
        MaxEntries = maxEntries;
        _nextPrune = Math.Min(PruneThreshold, maxEntries);
        _lookup = _replies.GetAlternateLookup<ReadOnlySpan<byte>>();
    }

    /// <summary>Responses allowed per reply; ≤ 0 = unlimited.</summary>
    public int MaxMsgs { get; }
    /// <summary>How long after delivery a reply may be used; ≤ 0 = forever.</summary>
    public TimeSpan Expires { get; }
    /// <summary>Hard bound on tracked replies (our addition, see the class remarks).</summary>
    public int MaxEntries { get; }

    public int Count
    {
        get
        {
            lock (_lock) return _replies.Count;
        }
    }

    /// <summary>A message with reply subject <paramref name="reply"/> was handed to this client.</summary>
    public void OnDelivered(ReadOnlySpan<byte> reply)
    {
        if (reply.IsEmpty) return;
        long now = _time.GetTimestamp();
        lock (_lock)
        {
            ref var e = ref CollectionsMarshal.GetValueRefOrAddDefault(_lookup, reply, out _);
            e.Delivered = now;
            e.Count = 0;
            if (_replies.Count > _nextPrune) PruneLocked(now);
        }
    }

    /// <summary>
    /// The client publishes to <paramref name="subject"/> and its rules deny it: is it a reply it may still
    /// answer? Counts the response; a spent or expired reply is forgotten.
    /// </summary>
    public bool TryConsume(ReadOnlySpan<byte> subject)
    {
        long now = _time.GetTimestamp();
        lock (_lock)
        {
            ref var e = ref CollectionsMarshal.GetValueRefOrNullRef(_lookup, subject);
            if (System.Runtime.CompilerServices.Unsafe.IsNullRef(ref e)) return false;
            e.Count++;
            if ((MaxMsgs > 0 && e.Count > MaxMsgs) || IsExpired(e, now))
            {
                _lookup.Remove(subject);
                return false;
            }
            return true;
        }
    }

    /// <summary>Drops spent and expired replies (client.go pruneReplyPerms).</summary>
    public void Prune()
    {
        lock (_lock) PruneLocked(_time.GetTimestamp());
    }

    private bool IsExpired(in Entry e, long now) => _expiresTicks > 0 && now - e.Delivered > _expiresTicks;

    private void PruneLocked(long now)
    {
        foreach (var (key, e) in _replies)
        {
            if ((MaxMsgs > 0 && e.Count >= MaxMsgs) || IsExpired(e, now)) _replies.Remove(key);
        }
        if (_replies.Count > MaxEntries)
        {
            // Beyond the hard bound: keep the newest three quarters of MaxEntries.
            int keep = MaxEntries * 3 / 4;
            var oldest = _replies.OrderBy(kv => kv.Value.Delivered).Take(_replies.Count - keep).Select(kv => kv.Key).ToList();
            foreach (var key in oldest) _replies.Remove(key);
        }
        // Prune again only after the live set has doubled, so a burst of fresh replies costs amortised O(1).
        _nextPrune = Math.Min(MaxEntries, Math.Max(PruneThreshold, _replies.Count * 2));
    }
}
