namespace NatsBroker.Cluster;

/// <summary>
/// The connections to one peer server (route.go <c>s.routes[id]</c> and <c>s.accRoutes[acc][id]</c>): the pool's
/// slots (one slot, carrying every account, for a peer that does not pool) and the dedicated connections of pinned
/// accounts. Mutated by <see cref="RouteManager"/> under its lock only.
/// </summary>
internal sealed class RemoteServer(string id, int slots, bool noPool)
{
    public string Id { get; } = id;
    /// <summary>The peer does not pool (2.9, or either side's pool_size -1): one connection carries everything.</summary>
    public bool NoPool { get; } = noPool;
    public RouteConnection?[] Slots { get; private set; } = new RouteConnection?[slots];
    public Dictionary<string, RouteConnection> Pinned { get; } = new(StringComparer.Ordinal);
    /// <summary>The peer's client URLs, counted once for the peer (from its first connection).</summary>
    public string[] ClientUrls { get; set; } = [];
    private TaskCompletionSource _changed = new(TaskCreationOptions.RunContinuationsAsynchronously);

    public int Count => Slots.Count(s => s is not null) + Pinned.Count;

    public bool PoolFull => Array.TrueForAll(Slots, s => s is not null);

    /// <summary>Completes at the next change (a connection added or gone): solicit loops wait on it.</summary>
    public Task Changed => _changed.Task;

    public void Grow(int slots)
    {
        if (slots <= Slots.Length) return;
        var grown = new RouteConnection?[slots];
        Slots.CopyTo(grown, 0);
        Slots = grown;
    }

    public void Signal() => Interlocked.Exchange(ref _changed, new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously)).TrySetResult();

    /// <summary>One registered connection, for what goes once to each peer (gossip, lame duck INFO).</summary>
    public RouteConnection? Any => Array.Find(Slots, s => s is not null) ?? Pinned.Values.FirstOrDefault();

    public IEnumerable<RouteConnection> All => Slots.Where(s => s is not null).Select(s => s!).Concat(Pinned.Values);

    public bool Remove(RouteConnection route)
    {
        for (int i = 0; i < Slots.Length; i++)
        {
            if (!ReferenceEquals(Slots[i], route)) continue;
            Slots[i] = null;
            return true;
        }
        if (route.PinnedAccountName is { } acc && Pinned.TryGetValue(acc, out var p) && ReferenceEquals(p, route))
        {
            Pinned.Remove(acc);
            return true;
        }
        return false;
    }
}
