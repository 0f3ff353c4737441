using System.Collections.Concurrent;
using NatsBroker.Subjects;
using System.Runtime.CompilerServices;

namespace NatsBroker.Subscriptions;

/// <summary>
/// The subscription trie (nats-server server/sublist.go): tokens split on '.', '*' matches one token, '>' matches one
/// or more trailing tokens. Match results are cached per literal subject in a bounded shared cache that writers
/// patch (insert) or invalidate (remove) so it never serves a stale result once a write has returned.
/// </summary>
/// <remarks>
/// <para>Concurrency and lock ordering.</para>
/// <list type="bullet">
/// <item>Shared-cache hit (the steady-state publish path): no lock, no atomic. A lock-free
/// <see cref="ConcurrentDictionary{TKey, TValue}"/> read through a span alternate lookup, plus striped plain
/// counters.</item>
/// <item>Cache miss: takes <c>_lock</c> for read, walks the trie, and adds the result to the cache <em>while still
/// holding the read lock</em>. Writers need the write lock, so no insert/remove can slip in between the walk and the
/// cache add; that is what keeps a stale result from being cached (nats-server re-locks between the two steps).
/// Misses from many threads proceed in parallel.</item>
/// <item>Insert/Remove: take <c>_lock</c> for write, change the trie, patch/invalidate cache entries, then bump
/// <see cref="Generation"/> last, so a reader that observes the new generation also observes the patched cache.</item>
/// <item>Cache sweep (size over <see cref="CacheMax"/>): runs without <c>_lock</c>, because dropping an entry can never
/// make the cache wrong; a flag keeps it to one sweeper at a time. Writers patch with TryUpdate so they never
/// resurrect an entry a sweeper just dropped.</item>
/// </list>
/// <para>Order: <c>_lock</c> (read or write) → the ConcurrentDictionary's internal bucket locks. Nothing is ever
/// acquired while holding a bucket lock, and the sweeper takes only bucket locks, so there is no cycle.</para>
/// <para>Counters: inserts/removes/count are plain fields written under the write lock. Match/hit counts use
/// <see cref="MatchCounters"/> (no Interlocked, approximate under contention). The miss path uses Interlocked for
/// the cache size only; it already allocates a result and takes the read lock, so it is not the hot path.</para>
/// </remarks>
public sealed partial class SubList
{
    /// <summary>Shared cache bound; above it a sweep trims to <see cref="CacheSweep"/> (nats slCacheMax/slCacheSweep).</summary>
    public const int CacheMax = 1024;

    public const int CacheSweep = 256;

    private readonly ReaderWriterLockSlim _lock = new(LockRecursionPolicy.NoRecursion);
    private readonly Level _root = new();

    private readonly ConcurrentDictionary<byte[], SubListResult> _cache = new(ByteArrayComparer.Instance);
    private readonly ConcurrentDictionary<byte[], SubListResult>.AlternateLookup<ReadOnlySpan<byte>> _cacheBySpan;
    private int _cacheCount; // ConcurrentDictionary.Count takes every bucket lock, so track the size ourselves
    private int _sweeping;

    private readonly MatchCounters _counters = new();

    // Written only under the write lock.
    private long _generation;
    private int _count;
    private long _inserts;
    private long _removes;
    private readonly List<PathEntry> _removePath = [];
    private readonly List<byte[]> _wildcardRemovals = [];

    public SubList() => _cacheBySpan = _cache.GetAlternateLookup<ReadOnlySpan<byte>>();

    /// <summary>
    /// Bumped on every successful insert or remove (once per <see cref="RemoveBatch"/>). Per-connection L1 caches
    /// compare it to decide whether their entries are still valid.
    /// </summary>
    public long Generation => Volatile.Read(ref _generation);

    /// <summary>Number of subscriptions in the trie.</summary>
    public int Count => Volatile.Read(ref _count);

    private IInterestObserver? _observer;

    /// <summary>
    /// Sets who is told of local interest changes (the cluster's per-account interest, core/Cluster), or null.
    /// Called under the write lock, so no change slips between the observer's snapshot (<paramref name="attached"/>,
    /// also under the lock: the local subscriptions present now) and its first notification.
    /// </summary>
    public void SetInterestObserver(IInterestObserver? observer, Action<IEnumerable<Subscription>>? attached = null)
    {
        _lock.EnterWriteLock();
        try
        {
            _observer = observer;
            attached?.Invoke(SnapshotLocked());
        }
        finally
        {
            _lock.ExitWriteLock();
        }
    }

    /// <summary>
    /// Adds a subscription. Returns false, changing nothing, when the subject cannot go in the trie (empty, an empty
    /// token, or '>' not last); the caller answers -ERR 'Invalid Subject'. Inserting the same instance twice is a
    /// no-op that returns true.
    /// </summary>
    public bool Insert(Subscription sub)
    {
        var subject = sub.Subject;
        if (!IsValidForTrie(subject)) return false;

        _lock.EnterWriteLock();
        try
        {
            var level = _root;
            Node node;
            int start = 0;
            while (true)
            {
                int dot = subject.AsSpan(start).IndexOf(Subject.Separator);
                int end = dot < 0 ? subject.Length : start + dot;
                node = level.GetOrAdd(subject.AsSpan(start, end - start));
                if (dot < 0) break;
                level = node.Next ??= new Level();
                start = end + 1;
            }

            if (!node.Add(sub)) return true;
            _count++;
            _inserts++;
            AddToCache(sub);
            Volatile.Write(ref _generation, _generation + 1);
            if (_observer is { } observer && sub.Scope == SubscriptionScope.Local) observer.OnInserted(sub);
            return true;
        }
        finally
        {
            _lock.ExitWriteLock();
        }
    }

    /// <summary>Removes a subscription; false when it was not in the trie.</summary>
    public bool Remove(Subscription sub)
    {
        _lock.EnterWriteLock();
        try
        {
            if (!RemoveFromTrie(sub)) return false;
            _count--;
            _removes++;
            if (Subject.IsLiteral(sub.Subject))
            {
                RemoveCacheEntry(sub.Subject);
            }
            else
            {
                _wildcardRemovals.Add(sub.Subject);
                RemoveWildcardCacheEntries();
            }
            Volatile.Write(ref _generation, _generation + 1);
            if (_observer is { } observer && sub.Scope == SubscriptionScope.Local) observer.OnRemoved(sub);
            return true;
        }
        finally
        {
            _lock.ExitWriteLock();
        }
    }

    /// <summary>
    /// Removes many subscriptions (a closing client) under one write lock, one cache pass for all wildcard subjects,
    /// and one generation bump. Subscriptions not present are ignored.
    /// </summary>
    public void RemoveBatch(IReadOnlyList<Subscription> subs)
    {
        if (subs.Count == 0) return;
        _lock.EnterWriteLock();
        try
        {
            int removed = 0;
            for (int i = 0; i < subs.Count; i++)
            {
                var sub = subs[i];
                if (!RemoveFromTrie(sub)) continue;
                removed++;
                if (_observer is { } observer && sub.Scope == SubscriptionScope.Local) observer.OnRemoved(sub);
                if (Subject.IsLiteral(sub.Subject)) RemoveCacheEntry(sub.Subject);
                else _wildcardRemovals.Add(sub.Subject);
            }
            if (removed == 0) return;
            RemoveWildcardCacheEntries();
            _count -= removed;
            _removes += removed;
            Volatile.Write(ref _generation, _generation + 1);
        }
        finally
        {
            _lock.ExitWriteLock();
        }
    }

    /// <summary>
    /// All subscriptions interested in a literal subject. Thread-safe; a shared-cache hit takes no lock and allocates
    /// nothing. A subject with an empty token matches nothing (and is not cached).
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    public SubListResult Match(ReadOnlySpan<byte> subject)
    {
        if (IsOneShot(subject)) return MatchUncached(subject);
        if (_cacheBySpan.TryGetValue(subject, out var cached))
        {
            _counters.Record(hit: true);
            return cached;
        }
        _counters.Record(hit: false);
        return MatchAndCache(subject);
    }

    /// <summary>
    /// Match through a connection's L1 cache: reads <see cref="Generation"/> first, so a result computed after a
    /// concurrent write is filed under the older generation and simply discarded on the next lookup. L1 hits are not
    /// counted in <see cref="GetStats"/> matches (as in nats-server, where they never reach the sublist).
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    public SubListResult Match(ReadOnlySpan<byte> subject, SubjectResultCache l1)
    {
        if (IsOneShot(subject)) return MatchUncached(subject);
        long generation = Generation;
        if (l1.TryGet(subject, generation, out var result)) return result;
        result = Match(subject);
        l1.Add(subject, result, generation);
        return result;
    }

    /// <summary>Whether anyone is subscribed to the literal subject; never allocates or populates the cache.</summary>
    public bool HasInterest(ReadOnlySpan<byte> subject)
    {
        if (_cacheBySpan.TryGetValue(subject, out var cached)) return !cached.IsEmpty;
        if (!IsValidLiteralShape(subject)) return false;
        _lock.EnterReadLock();
        try
        {
            return LevelHasInterest(_root, subject);
        }
        finally
        {
            _lock.ExitReadLock();
        }
    }

    /// <summary>A copy of all subscriptions (for monitoring); taken under the read lock.</summary>
    public IEnumerable<Subscription> Snapshot()
    {
        var all = new List<Subscription>(Count);
        _lock.EnterReadLock();
        try
        {
            Collect(_root, all);
        }
        finally
        {
            _lock.ExitReadLock();
        }
        return all;
    }

    private List<Subscription> SnapshotLocked()
    {
        var all = new List<Subscription>(Count);
        Collect(_root, all);
        return all;
    }

    /// <summary>/subsz numbers. Fan-out is computed over the cached results, as nats-server does.</summary>
    public SubListStats GetStats()
    {
        var (matches, hits) = _counters.Read();
        long cached = 0, totalFanout = 0, maxFanout = 0;
        foreach (var entry in _cache)
        {
            cached++;
            int fanout = entry.Value.Fanout;
            totalFanout += fanout;
            if (fanout > maxFanout) maxFanout = fanout;
        }
        return new SubListStats
        {
            NumSubscriptions = Count,
            NumCache = cached,
            NumInserts = Volatile.Read(ref _inserts),
            NumRemoves = Volatile.Read(ref _removes),
            NumMatches = matches,
            CacheHitRate = matches == 0 ? 0 : Math.Min(1.0, (double)hits / matches),
            MaxFanout = maxFanout,
            AvgFanout = cached == 0 ? 0 : (double)totalFanout / cached,
        };
    }

    private SubListResult MatchAndCache(ReadOnlySpan<byte> subject)
    {
        if (!IsValidLiteralShape(subject)) return SubListResult.Empty;

        SubListResult result;
        bool added;
        _lock.EnterReadLock();
        try
        {
            var builder = ResultBuilder.ForCurrentThread();
            MatchLevel(_root, subject, builder);
            result = builder.Build();
            // Still under the read lock: see the class remarks. If another reader raced us, its entry was computed
            // from the same trie state, so either result is correct.
            added = _cacheBySpan.TryAdd(subject, result);
        }
        finally
        {
            _lock.ExitReadLock();
        }

        if (added && Interlocked.Increment(ref _cacheCount) > CacheMax) Sweep();
        return result;
    }

    /// <summary>
    /// A match that no cache keeps (see <see cref="IsOneShot"/>): the trie walk under the read lock, and the result
    /// this thread built for the previous one-shot subject when the walk found the same subscriptions, so an ack
    /// allocates nothing.
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    private SubListResult MatchUncached(ReadOnlySpan<byte> subject)
    {
        _counters.Record(hit: false);
        if (!IsValidLiteralShape(subject)) return SubListResult.Empty;
        _lock.EnterReadLock();
        try
        {
            var builder = ResultBuilder.ForCurrentThread();
            MatchLevel(_root, subject, builder);
            return builder.BuildOneShot();
        }
        finally
        {
            _lock.ExitReadLock();
        }
    }

    /// <summary>
    /// Subjects published once and never again, which caching would only churn: JetStream ack subjects
    /// (<c>$JS.ACK.&lt;stream&gt;.&lt;consumer&gt;.&lt;delivered&gt;.&lt;sseq&gt;.&lt;dseq&gt;.&lt;ts&gt;.&lt;pending&gt;</c>, one per delivered
    /// message, nats-server consumer.go ackReplyT). Cached, each ack cost two key copies, a result and a dictionary
    /// node, and pushed the subjects that are published again out of both caches (a sweep every ~770 acks): a
    /// durable pull consumer's acks were a third of the server's CPU (perf, js-fetch-128).
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private static bool IsOneShot(ReadOnlySpan<byte> subject) => subject.StartsWith("$JS.ACK."u8);

    /// <summary>
    /// Walks the trie for the remaining tokens of <paramref name="subject"/> (nats matchLevel): at each level '>'
    /// matches everything left, '*' consumes this token and recurses, and the literal token continues the loop.
    /// </summary>
    private static void MatchLevel(Level? level, ReadOnlySpan<byte> subject, ResultBuilder builder)
    {
        Node? literal = null, partial = null;
        while (level is not null)
        {
            int dot = subject.IndexOf(Subject.Separator);
            var token = dot < 0 ? subject : subject[..dot];
            if (level.Full is { } full) builder.AddNode(full);
            partial = level.Partial;
            literal = level.Find(token);
            if (dot < 0)
            {
                // Last token: subs ending here via the literal token or '*'.
                if (literal is not null) builder.AddNode(literal);
                if (partial is not null) builder.AddNode(partial);
                return;
            }
            var rest = subject[(dot + 1)..];
            if (partial?.Next is { } afterPartial) MatchLevel(afterPartial, rest, builder);
            level = literal?.Next;
            subject = rest;
        }
    }

    /// <summary>Same walk as <see cref="MatchLevel"/>, stopping at the first node with subscriptions.</summary>
    private static bool LevelHasInterest(Level? level, ReadOnlySpan<byte> subject)
    {
        while (level is not null)
        {
            int dot = subject.IndexOf(Subject.Separator);
            var token = dot < 0 ? subject : subject[..dot];
            if (level.Full is { HasSubscriptions: true }) return true;
            var partial = level.Partial;
            var literal = level.Find(token);
            if (dot < 0) return literal is { HasSubscriptions: true } || partial is { HasSubscriptions: true };
            var rest = subject[(dot + 1)..];
            if (partial?.Next is { } afterPartial && LevelHasInterest(afterPartial, rest)) return true;
            level = literal?.Next;
            subject = rest;
        }
        return false;
    }

    private static void Collect(Level level, List<Subscription> into)
    {
        foreach (var node in level.Literals) CollectNode(node, into);
        if (level.Partial is { } partial) CollectNode(partial, into);
        if (level.Full is { } full) CollectNode(full, into);
    }

    private static void CollectNode(Node node, List<Subscription> into)
    {
        into.AddRange(node.Plain);
        if (node.Queues is { } queues)
        {
            foreach (var members in queues.Values) into.AddRange(members);
        }
        if (node.Next is { } next) Collect(next, into);
    }

    /// <summary>One step of a removal walk, so emptied nodes can be pruned bottom-up afterwards.</summary>
    private readonly record struct PathEntry(Level Level, Node Node, int Start, int Length);

    /// <summary>Removes from the trie and prunes nodes/levels left empty. Write lock held.</summary>
    private bool RemoveFromTrie(Subscription sub)
    {
        var subject = sub.Subject;
        if (!IsValidForTrie(subject)) return false;

        var path = _removePath;
        path.Clear();
        Level? level = _root;
        Node? node = null;
        int start = 0;
        while (true)
        {
            if (level is null) return false;
            int dot = subject.AsSpan(start).IndexOf(Subject.Separator);
            int end = dot < 0 ? subject.Length : start + dot;
            node = level.Get(subject.AsSpan(start, end - start));
            if (node is null) return false;
            path.Add(new PathEntry(level, node, start, end - start));
            if (dot < 0) break;
            level = node.Next;
            start = end + 1;
        }

        if (!node.Remove(sub)) return false;

        for (int i = path.Count - 1; i >= 0; i--)
        {
            var entry = path[i];
            if (entry.Node.Next is { IsEmpty: true }) entry.Node.Next = null;
            if (!entry.Node.IsEmpty) break;
            entry.Level.Prune(subject.AsSpan(entry.Start, entry.Length));
        }
        path.Clear();
        return true;
    }

    /// <summary>
    /// Patches cached results the new subscription matches (copy-on-write), instead of dropping them, so a SUB does
    /// not cost hot subjects a miss. Write lock held.
    /// </summary>
    private void AddToCache(Subscription sub)
    {
        if (Subject.IsLiteral(sub.Subject))
        {
            if (_cache.TryGetValue(sub.Subject, out var current)) _cache.TryUpdate(sub.Subject, current.WithAdded(sub), current);
            return;
        }
        foreach (var (key, current) in _cache)
        {
            if (Subject.Matches(sub.Subject, key)) _cache.TryUpdate(key, current.WithAdded(sub), current);
        }
    }

    /// <summary>Drops the cache entry for a literal subject. Write lock held (or sweeping).</summary>
    private void RemoveCacheEntry(byte[] subject)
    {
        if (_cache.TryRemove(subject, out _)) Interlocked.Decrement(ref _cacheCount);
    }

    /// <summary>One pass over the cache dropping entries matched by any queued wildcard removal. Write lock held.</summary>
    private void RemoveWildcardCacheEntries()
    {
        if (_wildcardRemovals.Count == 0) return;
        foreach (var (key, _) in _cache)
        {
            foreach (var pattern in _wildcardRemovals)
            {
                if (Subject.Matches(pattern, key))
                {
                    RemoveCacheEntry(key);
                    break;
                }
            }
        }
        _wildcardRemovals.Clear();
    }

    /// <summary>Trims the cache to <see cref="CacheSweep"/> entries; arbitrary victims, as in nats-server.</summary>
    private void Sweep()
    {
        if (Interlocked.CompareExchange(ref _sweeping, 1, 0) != 0) return;
        try
        {
            foreach (var (key, _) in _cache)
            {
                if (Volatile.Read(ref _cacheCount) <= CacheSweep) break;
                RemoveCacheEntry(key);
            }
        }
        finally
        {
            Volatile.Write(ref _sweeping, 0);
        }
    }

    /// <summary>SUB subject shape the trie accepts: non-empty tokens, '>' only as the last token.</summary>
    private static bool IsValidForTrie(ReadOnlySpan<byte> subject)
    {
        if (subject.IsEmpty) return false;
        int start = 0;
        while (true)
        {
            int dot = subject[start..].IndexOf(Subject.Separator);
            int end = dot < 0 ? subject.Length : start + dot;
            if (end == start) return false;
            if (dot < 0) return true;
            if (IsFullToken(subject[start..end])) return false;
            start = end + 1;
        }
    }

    /// <summary>Cheap check that a PUB subject has no empty token (the parser validates the rest).</summary>
    private static bool IsValidLiteralShape(ReadOnlySpan<byte> subject) =>
        !subject.IsEmpty
        && subject[0] != Subject.Separator
        && subject[^1] != Subject.Separator
        && subject.IndexOf(".."u8) < 0;
}
