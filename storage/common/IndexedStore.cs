using NatsBroker.Contracts;

namespace NatsBroker.Storage.Internal;

/// <summary>A read an engine finishes outside the store lock (see <see cref="IndexedStore.ReadMessage"/>).</summary>
internal struct DeferredRead
{
    /// <summary>Set by the caller: the engine may defer this read.</summary>
    public bool Allowed { get; set; }
    /// <summary>Set by the caller: the load may not read the disk at all (the engine defers instead, and the caller gives up).</summary>
    public bool CachedOnly { get; set; }
    /// <summary>Set by the engine: the read was deferred.</summary>
    public bool Pending { get; set; }
    public object? Source { get; set; }
    public long Offset { get; set; }
    public int Length { get; set; }
    public ulong Sequence { get; set; }
    /// <summary>Engine-owned buffer for the deferred read (e.g. a block cache being loaded).</summary>
    public byte[]? Buffer { get; set; }
    /// <summary>Set by the store: an index page (chunk <see cref="PageChunk"/>) must be read first, outside the lock.</summary>
    public bool PagePending { get; set; }
    public ulong PageChunk { get; set; }
    /// <summary>Index pages read outside the lock so far for this load (bounded: see <see cref="IndexedStore"/>).</summary>
    public int PagesFetched { get; set; }
}

/// <summary>How a removal must be made durable by a persistent engine.</summary>
internal enum RemoveKind
{
    /// <summary>Needs a tombstone (explicit remove, purge by subject in the middle of the stream).</summary>
    Durable,
    /// <summary>Like Durable, and the stored bytes must be overwritten.</summary>
    Erase,
    /// <summary>
    /// No tombstone: re-derived at recovery (limits, age, TTL re-applied) or covered by a floor record that
    /// the operation persists (compact, purge from the front).
    /// </summary>
    Lazy,
}

/// <summary>
/// The engine-independent part of a store: sequence index, subject index, limits, TTL, purge, load-next and
/// consumer registry. Engines implement where message bytes live (<see cref="WriteMessage"/>,
/// <see cref="ReadMessage"/>) and how removals persist (<see cref="OnRemoved"/>). Every member except
/// <see cref="CompleteRead"/> (disk reads deferred out of the lock, so readers never stall appends) runs under
/// <see cref="Sync"/>. Appends cost O(1) (plus O(removed) for limit enforcement) and allocate nothing once the
/// subject set is stable.
/// <para>
/// This file holds the state, the fail-stop and the engine hooks; the rest is split by concern:
/// IndexedStore.Append.cs, .Limits.cs, .Expiry.cs, .Removal.cs, .Purge.cs, .Loads.cs, .State.cs, .Recovery.cs
/// and .Lifetime.cs.
/// </para>
/// </summary>
internal abstract partial class IndexedStore : IStreamStore
{
    protected readonly Lock Sync = new();
    protected readonly SequenceIndex Index = new();
    protected readonly SubjectTable Subjects = new();
    protected ulong First = 1;
    protected ulong Last;
    protected long LastTs;
    protected ulong Msgs;
    protected ulong Bytes;
    protected StreamLimits Limits;
    protected bool IsClosed;
    /// <summary>Set when a removal moved the first sequence and the engine should persist a new floor.</summary>
    protected bool FloorDirty;
    private readonly PriorityQueue<ulong, long> _ttl = new();
    private readonly Dictionary<string, IConsumerStore> _consumers = new(StringComparer.Ordinal);
    private readonly List<string> _report = [];
    private ITimer? _expiryTimer;

    /// <param name="readsDefer">
    /// False for an engine whose reads never wait on a disk and that has no index pager (the memory engine): its
    /// loads then skip the deferred-read state (a <see cref="DeferredRead"/> set up and checked per load, the
    /// paging checks), which cost its load rows 3-10% against the code before that state existed.
    /// </param>
    protected IndexedStore(StreamStoreConfig config, bool readsDefer = true)
    {
        Config = config;
        Limits = config.Limits;
        _readsDefer = readsDefer;
    }

    private readonly bool _readsDefer;

    public abstract string EngineName { get; }
    public StreamStoreConfig Config { get; }
    public string? LastError { get; protected set; }
    public IReadOnlyList<string> RecoveryReport => _report;

    /// <summary>Sequence-index chunks allocated (1024 entries of 48 B each); tests bound the index memory with it.</summary>
    internal int IndexChunks
    {
        get
        {
            lock (Sync) return Index.AllocatedChunks;
        }
    }

    /// <summary>
    /// Approximate managed bytes of the sequence index (dense and sparse chunks, their pools, the per-chunk ring):
    /// follows the live messages, not the sequence span (SequenceIndex.Sparse.cs); tests bound the index memory with it.
    /// </summary>
    internal long IndexBytes
    {
        get
        {
            lock (Sync) return Index.MemoryBytes;
        }
    }

    /// <summary>Sequence-index chunks still on disk (file engine after a fast open), not in memory.</summary>
    internal int PagedIndexChunks
    {
        get
        {
            lock (Sync) return Index.PagedChunks;
        }
    }

    private volatile string? _failure;

    /// <summary>Non-null once the engine failed to make something durable; every later write is refused (fail-stop).</summary>
    public string? Failure => _failure;

    /// <summary>
    /// Turns the store read-only for good: after a failed write or fsync nothing can be acknowledged any more
    /// (the kernel may have dropped the dirty pages, so a retried fsync could "succeed" without the data).
    /// Thread-safe; the first reason wins.
    /// </summary>
    protected void FailStop(string reason)
    {
        Interlocked.CompareExchange(ref _failure, reason, null);
        LastError = _failure;
    }

    /// <summary>Status for a write attempted on a closed or failed store, or Ok.</summary>
    private StoreStatus WriteRefusal()
    {
        if (IsClosed) return StoreStatus.Closed;
        if (_failure is null) return StoreStatus.Ok;
        LastError = _failure;
        return StoreStatus.IoError;
    }
    protected void Report(string problem) => _report.Add(problem);

    // Engine hooks (called under Sync).
    protected abstract StoreStatus WriteMessage(ulong seq, long ts, long ttl, ReadOnlySpan<byte> subject, ReadOnlySpan<byte> headers, ReadOnlySpan<byte> payload, ref IndexEntry entry);
    /// <summary>
    /// Reads a message (under <see cref="Sync"/>). An engine that needs disk I/O may instead fill
    /// <paramref name="deferred"/> (when <see cref="DeferredRead.Allowed"/>) and return Ok; the caller then
    /// finishes the read with <see cref="CompleteRead"/> after releasing the lock, so a cold read never blocks appends.
    /// </summary>
    protected abstract StoreStatus ReadMessage(ulong seq, in IndexEntry entry, SubjectInfo subject, StoredMessage into, ref DeferredRead deferred);

    /// <summary>Finishes a deferred read outside the lock; <paramref name="retry"/> asks for the whole load again under the lock.</summary>
    protected virtual StoreStatus CompleteRead(ref DeferredRead deferred, StoredMessage into, out bool retry)
    {
        retry = true;
        return StoreStatus.Ok;
    }
    protected abstract void OnRemoved(ulong seq, ref IndexEntry entry, RemoveKind kind);
    /// <summary>Everything was removed; the next sequence is <paramref name="nextSeq"/>.</summary>
    protected abstract StoreStatus OnPurgedAll(ulong nextSeq);
    /// <summary>An explicit operation finished (purge, compact, remove, skip): persist floor/tombstones per sync policy.</summary>
    protected abstract StoreStatus OnOperationDone(bool floorChanged);
    protected abstract IConsumerStore CreateConsumerStore(string name);
    protected abstract void CloseEngine();

    /// <summary>Called by <see cref="Dispose"/> before it takes the store lock (an engine lets its background work finish).</summary>
    protected virtual void BeforeClose()
    {
    }

    protected abstract StoreStatus DeleteEngine();
    public abstract ValueTask<StoreStatus> FlushAsync(CancellationToken cancellationToken = default);

    /// <inheritdoc cref="IStreamStore.NeedsCommit"/>
    public virtual bool NeedsCommit => false;

    /// <inheritdoc cref="IStreamStore.Commit"/>
    public virtual StoreStatus Commit() => StoreStatus.Ok;

    protected long NowNanos() => (Config.Clock.GetUtcNow().UtcTicks - DateTime.UnixEpoch.Ticks) * 100;
}
