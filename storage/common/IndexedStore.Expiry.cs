using NatsBroker.Contracts;

namespace NatsBroker.Storage.Internal;

/// <summary>
/// Age (max_age) and per-message TTL expiry: the 1 s timer that runs while either can happen, and the removal
/// from the front / from the TTL heap it and the writers trigger.
/// </summary>
internal abstract partial class IndexedStore
{
    /// <summary>Starts the 1 s expiry timer if age or TTL expiry can happen (idle streams without them cost nothing).</summary>
    protected void StartExpiryTimer()
    {
        if (_expiryTimer is not null || IsClosed || (Limits.MaxAge <= TimeSpan.Zero && _ttl.Count == 0)) return;
        _expiryTimer = Config.Clock.CreateTimer(static s => ((IndexedStore)s!).ExpireTick(), this, TimeSpan.FromSeconds(1), TimeSpan.FromSeconds(1));
    }

    private void ExpireTick()
    {
        lock (Sync)
        {
            if (IsClosed) return;
            ExpireLocked(NowNanos());
        }
        RunDeferredWork();
    }

    /// <summary>Age expiry from the front (no scan: stops at the first young message) and per-message TTL via a heap.</summary>
    protected bool ExpireLocked(long now)
    {
        bool any = false;
        var maxAge = Limits.MaxAge;
        if (maxAge > TimeSpan.Zero && Msgs > 0)
        {
            long cutoff = now - (maxAge.Ticks * 100);
            while (Msgs > 0 && Index.Get(First).Timestamp <= cutoff)
            {
                RemoveLocked(First, RemoveKind.Lazy);
                any = true;
            }
        }
        while (_ttl.TryPeek(out ulong seq, out long expires) && expires <= now)
        {
            _ttl.Dequeue();
            if (seq >= First && seq <= Last && Index.Get(seq).IsLive)
            {
                RemoveLocked(seq, RemoveKind.Lazy);
                any = true;
            }
        }
        return any;
    }
}
