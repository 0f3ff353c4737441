using System.Runtime.CompilerServices;
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
/// </summary>
internal abstract class IndexedStore : IStreamStore
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
    private int[] _matchGen = new int[64];
    private bool[] _matchVal = new bool[64];
    private int _gen;
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

    /// <summary>
    /// What the loads of an engine that never defers hand to <see cref="ReadMessage"/>: never written (not
    /// <see cref="DeferredRead.Allowed"/>, so no engine may defer through it), read only under the lock.
    /// </summary>
    private DeferredRead _noDeferral;

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

    // ---- engine hooks (called under Sync) ----
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

    protected void RegisterConsumer(string name, IConsumerStore store) => _consumers[name] = store;
    internal void ForgetConsumer(string name)
    {
        lock (Sync) _consumers.Remove(name);
    }

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

    protected long NowNanos() => (Config.Clock.GetUtcNow().UtcTicks - DateTime.UnixEpoch.Ticks) * 100;

    // ---- append ----

    public AppendResult Append(ReadOnlySpan<byte> subject, ReadOnlySpan<byte> headers, ReadOnlySpan<byte> payload, long timestamp = 0, long ttl = 0)
    {
        ulong seq;
        StoreStatus st;
        long ticket;
        lock (Sync)
        {
            // One clock read per append at most: a caller's timestamp (JetStream passes one) saves it, and expiry
            // reads the clock itself when it has anything to expire (AppendLocked).
            long now = 0;
            if (timestamp == 0) timestamp = now = NowNanos();
            seq = Last + 1;
            st = AppendLocked(seq, timestamp, now, subject, headers, payload, ttl);
            ticket = TakeDurabilityTicket();
        }
        // Durability waits happen outside the lock, so concurrent appenders share one fsync (group commit).
        if (ticket != 0 && st == StoreStatus.Ok) st = WaitDurable(ticket);
        RunDeferredWork();
        return new AppendResult(st, st == StoreStatus.Ok ? seq : 0, timestamp);
    }

    /// <summary>Returns (and clears) the durability ticket of the write just made under the lock; 0 = none needed.</summary>
    protected virtual long TakeDurabilityTicket() => 0;

    /// <summary>Blocks, outside the lock, until the write with <paramref name="ticket"/> is durable.</summary>
    protected virtual StoreStatus WaitDurable(long ticket) => StoreStatus.Ok;

    /// <summary>
    /// Called without the lock after an append (and the expiry timer) released it: engine work the write made necessary
    /// that may wait on the disk, done here so that other writers are not held up by it (the file engine deletes
    /// emptied blocks here). Must be cheap when there is nothing to do.
    /// </summary>
    protected virtual void RunDeferredWork()
    {
    }

    public StoreStatus AppendAt(ulong sequence, long timestamp, ReadOnlySpan<byte> subject, ReadOnlySpan<byte> headers, ReadOnlySpan<byte> payload, long ttl = 0)
    {
        StoreStatus st;
        long ticket;
        lock (Sync)
        {
            var refused = WriteRefusal();
            if (refused != StoreStatus.Ok) return refused;
            if (sequence <= Last) return StoreStatus.SequenceMismatch;
            long now = 0;
            if (timestamp == 0) timestamp = now = NowNanos();
            if (sequence > Last + 1)
            {
                var sk = SkipLocked(sequence - 1, persist: false);
                if (sk != StoreStatus.Ok) return sk;
            }
            st = AppendLocked(sequence, timestamp, now, subject, headers, payload, ttl);
            ticket = TakeDurabilityTicket();
        }
        if (ticket != 0 && st == StoreStatus.Ok) st = WaitDurable(ticket);
        RunDeferredWork();
        return st;
    }

    public AppendResult AppendBatch(IAppendBatch batch, long timestamp = 0)
    {
        ArgumentNullException.ThrowIfNull(batch);
        int n = batch.Count;
        if (n == 0) return new(StoreStatus.InvalidArgument, 0, 0);
        ulong last;
        StoreStatus st;
        long ticket;
        lock (Sync)
        {
            long now = NowNanos();
            if (timestamp == 0) timestamp = now;
            st = AppendBatchLocked(batch, timestamp, now);
            last = Last;
            ticket = TakeDurabilityTicket();
        }
        if (ticket != 0 && st == StoreStatus.Ok) st = WaitDurable(ticket);
        RunDeferredWork();
        return new AppendResult(st, st == StoreStatus.Ok ? last : 0, timestamp);
    }

    /// <summary>
    /// The batch is checked whole before anything is written (so a refusal leaves the store untouched), written
    /// between <see cref="BeginBatch"/> and <see cref="EndBatch"/> with no expiry or limit removal in between (an
    /// engine can then mark its records as one unit), and the limits are enforced once after it.
    /// </summary>
    private StoreStatus AppendBatchLocked(IAppendBatch batch, long ts, long now)
    {
        var refused = WriteRefusal();
        if (refused != StoreStatus.Ok) return refused;
        int n = batch.Count;
        var lim = Limits;
        if (lim.MaxAge > TimeSpan.Zero || _ttl.Count > 0) ExpireLocked(now);
        ulong bytes = 0;
        Dictionary<string, ulong>? perSubject = null;
        bool perSubjectNew = lim.Discard == DiscardPolicy.New && lim.DiscardNewPerSubject && lim.MaxMessagesPerSubject > 0;
        for (int i = 0; i < n; i++)
        {
            var subject = batch.Subject(i);
            if (subject.IsEmpty || !SubjectMatch.IsLiteral(subject)) return StoreStatus.InvalidArgument;
            int hl = batch.Headers(i).Length, pl = batch.Payload(i).Length;
            if (TooLarge(hl, pl, lim)) return StoreStatus.MessageTooLarge;
            long size = StoredSize(subject.Length, hl, pl);
            if (size > int.MaxValue / 2) return StoreStatus.MessageTooLarge;
            bytes += (ulong)size;
            if (perSubjectNew)
            {
                perSubject ??= new(StringComparer.Ordinal);
                var key = System.Text.Encoding.UTF8.GetString(subject);
                if (!perSubject.TryGetValue(key, out ulong count)) count = Subjects.Find(subject)?.Count ?? 0;
                if (++count > (ulong)lim.MaxMessagesPerSubject) return StoreStatus.MaxMessagesPerSubjectExceeded;
                perSubject[key] = count;
            }
        }
        if (lim.Discard == DiscardPolicy.New)
        {
            if (lim.MaxMessages > 0 && Msgs + (ulong)n > (ulong)lim.MaxMessages) return StoreStatus.MaxMessagesExceeded;
            if (lim.MaxBytes > 0 && Bytes + bytes > (ulong)lim.MaxBytes) return StoreStatus.MaxBytesExceeded;
        }
        var st = BeginBatch(batch);
        if (st != StoreStatus.Ok) return st;
        for (int i = 0; i < n; i++)
        {
            MarkBatchRecord(more: i < n - 1);
            st = AppendLocked(Last + 1, ts, now, batch.Subject(i), batch.Headers(i), batch.Payload(i), batch.Ttl(i), inBatch: true);
            if (st != StoreStatus.Ok)
            {
                // Checked above, so only an engine failure gets here; part of the batch is in the indexes. The
                // store stops accepting writes (its incomplete batch is discarded when it is reopened).
                if (i > 0) FailStop($"store '{Config.StreamName}': batch append failed after {i} of {n} messages ({st}: {LastError}); the store is read-only until it is reopened");
                EndBatch();
                return i > 0 ? StoreStatus.IoError : st;
            }
        }
        EndBatch();
        for (int i = 0; i < n; i++)
        {
            var subj = Subjects.Find(batch.Subject(i));
            if (subj is not null) EnforceLimitsAfterAppend(subj);
        }
        return StoreStatus.Ok;
    }

    /// <summary>Called before the records of a batch are written (under the lock): room, pending writes.</summary>
    protected virtual StoreStatus BeginBatch(IAppendBatch batch) => StoreStatus.Ok;

    /// <summary>Tells the engine whether the next message written continues the current batch.</summary>
    protected virtual void MarkBatchRecord(bool more) { }

    /// <summary>Called after the records of a batch (or on failure).</summary>
    protected virtual void EndBatch() { }

    /// <param name="now">The clock read by the caller, or 0 when it did not read it (read here if expiry needs it).</param>
    private StoreStatus AppendLocked(ulong seq, long ts, long now, ReadOnlySpan<byte> subject, ReadOnlySpan<byte> headers, ReadOnlySpan<byte> payload, long ttl, bool inBatch = false)
    {
        var refused = WriteRefusal();
        if (refused != StoreStatus.Ok) return refused;
        if (subject.IsEmpty || !SubjectMatch.IsLiteral(subject)) return StoreStatus.InvalidArgument;
        var lim = Limits;
        if (TooLarge(headers.Length, payload.Length, lim)) return StoreStatus.MessageTooLarge;
        long size = StoredSize(subject.Length, headers.Length, payload.Length);
        if (size > int.MaxValue / 2) return StoreStatus.MessageTooLarge;
        bool ageOrTtl = lim.MaxAge > TimeSpan.Zero || _ttl.Count > 0;
        if (ageOrTtl && !inBatch) ExpireLocked(now != 0 ? now : NowNanos());

        SubjectInfo? existing = null;
        if (lim.Discard == DiscardPolicy.New && !inBatch)
        {
            var refusal = DiscardNewRefusal(subject, size, lim, out existing);
            if (refusal != StoreStatus.Ok) return refusal;
        }

        var subj = existing ?? Subjects.GetOrAdd(subject);
        // Index entry first: the engine fills Location/Aux; on failure the sequence is not consumed.
        if (Index.End != seq && Msgs == 0) Index.Reset(seq);
        ref var e = ref Index.Add();
        e.SubjectId = -1;
        e.Location = -1;
        var st = WriteMessage(seq, ts, ttl, subject, headers, payload, ref e);
        if (st != StoreStatus.Ok)
        {
            // The sequence is not consumed: forget the entry (and a subject created for it).
            Index.RemoveLast();
            if (subj.Count == 0) Subjects.Remove(subj);
            return st;
        }
        e.Timestamp = ts;
        e.Size = (int)size;
        e.SubjectId = subj.Id;
        e.Prev = subj.Last;
        e.Next = 0;
        if (ttl > 0) e.Flags |= IndexEntry.FlagTtl;
        Index.MarkLive(seq);
        if (subj.Last != 0) Index.GetForWrite(subj.Last).Next = seq;
        else subj.First = seq;
        subj.Last = seq;
        subj.Count++;
        if (Msgs == 0) First = seq;
        Msgs++;
        Bytes += (ulong)size;
        Last = seq;
        LastTs = ts;
        if (ttl > 0)
        {
            _ttl.Enqueue(seq, ts + ttl);
            if (_expiryTimer is null) StartExpiryTimer();
        }
        if (!inBatch) EnforceLimitsAfterAppend(subj);
        return StoreStatus.Ok;
    }

    /// <summary>
    /// Discard new: whether one more message of <paramref name="size"/> stored bytes is refused, as nats-server's
    /// storeRawMsg decides (memstore.go and filestore.go, the same rules with each engine's size). A subject already
    /// at max_msgs_per_subject is refused outright with discard_new_per_subject; without it the message replaces the
    /// subject's oldest, so max_msgs does not refuse it and max_bytes refuses it only if the oldest is smaller.
    /// </summary>
    private StoreStatus DiscardNewRefusal(ReadOnlySpan<byte> subject, long size, StreamLimits lim, out SubjectInfo? existing)
    {
        existing = null;
        bool atSubjectLimit = false;
        if (lim.MaxMessagesPerSubject > 0)
        {
            existing = Subjects.Find(subject);
            atSubjectLimit = existing is not null && existing.Count >= (ulong)lim.MaxMessagesPerSubject;
            if (atSubjectLimit && lim.DiscardNewPerSubject) return StoreStatus.MaxMessagesPerSubjectExceeded;
        }
        if (lim.MaxMessages > 0 && Msgs >= (ulong)lim.MaxMessages && !atSubjectLimit) return StoreStatus.MaxMessagesExceeded;
        if (lim.MaxBytes > 0 && Bytes + (ulong)size > (ulong)lim.MaxBytes
            && (!atSubjectLimit || Index.Get(existing!.First).Size < size))
            return StoreStatus.MaxBytesExceeded;
        return StoreStatus.Ok;
    }

    /// <summary>
    /// max_msg_size counts headers + payload, not the subject (stream.go processJetStreamMsg; written so that the
    /// sum cannot overflow, as there).
    /// </summary>
    private static bool TooLarge(int headersLength, int payloadLength, StreamLimits lim) =>
        lim.MaxMessageSize > 0 && (headersLength > lim.MaxMessageSize || payloadLength > lim.MaxMessageSize - headersLength);

    /// <summary>
    /// What one message counts toward <see cref="Bytes"/>, max_bytes and the account's limits: the engine's figure
    /// (IStreamStore.StoredSize), kept per message in <see cref="IndexEntry.Size"/> so a removal subtracts exactly
    /// what the append added.
    /// </summary>
    public abstract long StoredSize(int subjectLength, int headersLength, int payloadLength);

    private void EnforceLimitsAfterAppend(SubjectInfo subj)
    {
        var lim = Limits;
        if (lim.MaxMessagesPerSubject > 0)
        {
            // Durable: a per-subject removal in the middle cannot be re-derived at recovery once other deletes happened.
            while (subj.Count > (ulong)lim.MaxMessagesPerSubject) RemoveLocked(subj.First, RemoveKind.Durable);
        }
        if (lim.MaxMessages > 0)
        {
            while (Msgs > (ulong)lim.MaxMessages) RemoveLocked(First, RemoveKind.Lazy);
        }
        if (lim.MaxBytes > 0)
        {
            while (Bytes > (ulong)lim.MaxBytes && Msgs > 0) RemoveLocked(First, RemoveKind.Lazy);
        }
    }

    /// <summary>Re-applies every limit (after recovery or a limits update).</summary>
    protected void EnforceAllLimitsLocked()
    {
        var lim = Limits;
        if (lim.MaxMessagesPerSubject > 0)
        {
            var over = new List<SubjectInfo>();
            foreach (var s in Subjects.All) if (s.Count > (ulong)lim.MaxMessagesPerSubject) over.Add(s);
            foreach (var s in over)
                while (s.Count > (ulong)lim.MaxMessagesPerSubject) RemoveLocked(s.First, RemoveKind.Durable);
        }
        if (lim.MaxMessages > 0) while (Msgs > (ulong)lim.MaxMessages) RemoveLocked(First, RemoveKind.Lazy);
        if (lim.MaxBytes > 0) while (Bytes > (ulong)lim.MaxBytes && Msgs > 0) RemoveLocked(First, RemoveKind.Lazy);
        ExpireLocked(NowNanos());
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

    /// <summary>Registers a recovered message's TTL (engines call this while rebuilding).</summary>
    protected void TrackTtl(ulong seq, long expires) => _ttl.Enqueue(seq, expires);

    /// <summary>
    /// Adds a recovered message to the indexes (engines call this at open, in sequence order); <paramref name="size"/>
    /// is its <see cref="StoredSize"/>.
    /// </summary>
    protected ref IndexEntry RecoverAdd(ulong seq, ReadOnlySpan<byte> subject, long ts, int size)
    {
        if (Msgs == 0 && Index.End != seq) Index.Reset(seq);
        Index.AdvanceTo(seq);
        var subj = Subjects.GetOrAdd(subject);
        ref var e = ref Index.Add();
        Index.MarkLive(seq);
        e.Timestamp = ts;
        e.Size = size;
        e.SubjectId = subj.Id;
        e.Prev = subj.Last;
        if (subj.Last != 0) Index.GetForWrite(subj.Last).Next = seq;
        else subj.First = seq;
        subj.Last = seq;
        subj.Count++;
        if (Msgs == 0) First = seq;
        Msgs++;
        Bytes += (ulong)size;
        if (seq > Last) { Last = seq; LastTs = ts; }
        return ref e;
    }

    /// <summary>The stream counters as an index image recorded them (fast open; the engine restored the indexes).</summary>
    protected void RestoreCounters(ulong first, ulong last, long lastTs, ulong msgs, ulong bytes)
    {
        First = first;
        Last = last;
        LastTs = lastTs;
        Msgs = msgs;
        Bytes = bytes;
        FloorDirty = false;
    }

    /// <summary>Pending per-message TTL expiries (sequence, expiry in Unix ns), for an index image.</summary>
    protected IEnumerable<(ulong Seq, long Expires)> PendingTtls()
    {
        foreach (var (seq, expires) in _ttl.UnorderedItems) yield return (seq, expires);
    }

    /// <summary>Sets the last sequence after recovery (from block headers, skip and floor records).</summary>
    protected void RecoverLast(ulong last, ulong floor)
    {
        if (floor > First || Msgs == 0)
        {
            // Drop everything below the floor without persisting anything.
            while (Msgs > 0 && First < floor) RemoveLocked(First, RemoveKind.Lazy);
        }
        if (last > Last) Last = last;
        if (Msgs == 0)
        {
            if (floor > Last + 1) Last = floor - 1;
            First = Last + 1;
            Index.Reset(Last + 1);
        }
        else
        {
            Index.AdvanceTo(Last + 1);
        }
        FloorDirty = false;
    }

    // ---- removal ----

    protected StoreStatus RemoveLocked(ulong seq, RemoveKind kind)
    {
        if (seq < First || seq > Last || !Index.Holds(seq)) return StoreStatus.NotFound;
        ref var e = ref Index.GetForWrite(seq);
        if (!e.IsLive) return StoreStatus.Deleted;
        OnRemoved(seq, ref e, KindAt(seq, kind));
        var s = Subjects.ById(e.SubjectId);
        if (e.Prev != 0) Index.GetForWrite(e.Prev).Next = e.Next;
        else s.First = e.Next;
        if (e.Next != 0) Index.GetForWrite(e.Next).Prev = e.Prev;
        else s.Last = e.Prev;
        s.Count--;
        if (s.Count == 0) Subjects.Remove(s);
        ReleaseEntryLocked(seq, ref e);
        return StoreStatus.Ok;
    }

    /// <summary>A removal at the stream's first sequence needs no tombstone: the floor covers it.</summary>
    private RemoveKind KindAt(ulong seq, RemoveKind kind) => kind == RemoveKind.Durable && seq == First ? RemoveKind.Lazy : kind;

    /// <summary>
    /// The end of every removal, once the engine was told (<see cref="OnRemoved"/>) and the entry is out of its
    /// subject's list (or its whole run is, <see cref="PurgeSubjectLocked"/>): the counters, the entry, the index, First.
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private void ReleaseEntryLocked(ulong seq, ref IndexEntry e)
    {
        Msgs--;
        Bytes -= (ulong)e.Size;
        e.SubjectId = -1;
        e.Prev = e.Next = 0;
        Index.MarkDead(seq); // may release the chunk: 'e' is not used after this
        if (seq == First) AdvanceFirst();
    }

    /// <summary>The message at <see cref="First"/> was just removed: First moves to the next live one.</summary>
    private void AdvanceFirst()
    {
        FloorDirty = true;
        if (Msgs == 0)
        {
            First = Last + 1;
            Index.Reset(Last + 1);
            return;
        }
        // From First + 1: First is dead now, and NextLive finds the usual answer (the next sequence) inline.
        ulong next = Index.NextLive(First + 1, Last);
        First = next != 0 ? next : Last + 1;
        Index.TrimBelow(First);
    }

    public StoreStatus Remove(ulong sequence) => RemoveOp(sequence, RemoveKind.Durable);
    public StoreStatus Erase(ulong sequence) => RemoveOp(sequence, RemoveKind.Erase);

    private StoreStatus RemoveOp(ulong sequence, RemoveKind kind)
    {
        lock (Sync)
        {
            var refused = WriteRefusal();
            if (refused != StoreStatus.Ok) return refused;
            var st = RemoveLocked(sequence, kind);
            if (st != StoreStatus.Ok) return st;
            return OnOperationDone(FloorDirty);
        }
    }

    // ---- purge / compact ----

    [MethodImpl(MethodImplOptions.AggressiveOptimization)] // see PurgeSubjectLocked
    public PurgeResult Purge(ReadOnlySpan<byte> filter = default, ulong upToSequence = 0, ulong keep = 0)
    {
        lock (Sync)
        {
            var refused = WriteRefusal();
            if (refused != StoreStatus.Ok) return new(refused, 0);
            ulong before = Msgs;
            bool all = SubjectMatch.IsAll(filter);
            if (all && keep == 0 && upToSequence == 0)
            {
                if (Msgs == 0 && First == Last + 1) return new(StoreStatus.Ok, 0);
                Subjects.Clear();
                Msgs = 0;
                Bytes = 0;
                First = Last + 1;
                Index.Reset(Last + 1);
                _ttl.Clear();
                FloorDirty = false;
                return new(OnPurgedAll(Last + 1), before);
            }
            if (all)
            {
                while (Msgs > keep && (upToSequence == 0 || First < upToSequence)) RemoveLocked(First, RemoveKind.Lazy);
            }
            else if (SubjectMatch.IsLiteral(filter))
            {
                var s = Subjects.Find(filter);
                if (s is not null) PurgeSubjectLocked(s, upToSequence, keep);
            }
            else
            {
                var matched = new List<SubjectInfo>();
                ulong total = 0;
                foreach (var s in Subjects.All)
                {
                    if (SubjectMatch.Matches(s.Key, filter)) { matched.Add(s); total += s.Count; }
                }
                if (keep == 0)
                {
                    foreach (var s in matched) PurgeSubjectLocked(s, upToSequence, 0);
                }
                else
                {
                    // Remove the oldest matching messages across subjects until 'keep' remain: a k-way merge by first sequence.
                    var pq = new PriorityQueue<SubjectInfo, ulong>();
                    foreach (var s in matched) pq.Enqueue(s, s.First);
                    while (total > keep && pq.TryDequeue(out var s, out ulong f))
                    {
                        if (upToSequence != 0 && f >= upToSequence) break;
                        RemoveLocked(f, RemoveKind.Durable);
                        total--;
                        if (s.Count > 0) pq.Enqueue(s, s.First);
                    }
                }
            }
            var st = OnOperationDone(FloorDirty);
            return new(st, before - Msgs);
        }
    }

    /// <summary>
    /// Removes the oldest messages of <paramref name="s"/> until <paramref name="keep"/> remain or the next is at or
    /// above <paramref name="upTo"/> (0 = no bound). The run is unlinked from the subject's list once, at its end:
    /// each removed entry's successor is removed too, so rewriting its back link per removal (as
    /// <see cref="RemoveLocked"/> does) would be wasted (measured: the memory engine's purge row, 20 removals per
    /// purge, was 0.88x of the code before the sparse index with one <see cref="RemoveLocked"/> per message).
    /// </summary>
    // Fully optimized from its first call: a purge loops here, and at tier 0 (a JIT build before the method has been
    // called often) the loop ran at under half the speed of the RemoveLocked calls it replaced, which other paths had
    // already made hot (storage bench: 0.5-0.6x of the pre-issue code until tier 1 arrived).
    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    private void PurgeSubjectLocked(SubjectInfo s, ulong upTo, ulong keep)
    {
        ulong seq = s.First;
        ulong removed = 0;
        while (s.Count - removed > keep && seq != 0 && (upTo == 0 || seq < upTo))
        {
            ref var e = ref Index.GetForWrite(seq);
            ulong next = e.Next;
            OnRemoved(seq, ref e, KindAt(seq, RemoveKind.Durable));
            // The subject's list still starts at a removed entry here; AdvanceFirst reads only liveness.
            ReleaseEntryLocked(seq, ref e);
            removed++;
            seq = next;
        }
        if (removed == 0) return;
        s.Count -= removed;
        s.First = seq;
        if (seq != 0) Index.GetForWrite(seq).Prev = 0;
        else s.Last = 0;
        if (s.Count == 0) Subjects.Remove(s);
    }

    public PurgeResult Compact(ulong sequence)
    {
        lock (Sync)
        {
            var refused = WriteRefusal();
            if (refused != StoreStatus.Ok) return new(refused, 0);
            if (sequence <= First) return new(StoreStatus.Ok, 0);
            ulong before = Msgs;
            if (sequence > Last)
            {
                // Everything goes and the stream continues at 'sequence'.
                Subjects.Clear();
                Msgs = 0;
                Bytes = 0;
                _ttl.Clear();
                Last = sequence - 1;
                First = sequence;
                Index.Reset(sequence);
                return new(OnPurgedAll(sequence), before);
            }
            while (Msgs > 0 && First < sequence) RemoveLocked(First, RemoveKind.Lazy);
            if (Msgs == 0) First = Last + 1;
            return new(OnOperationDone(true), before - Msgs);
        }
    }

    public StoreStatus SkipTo(ulong lastSequence)
    {
        lock (Sync)
        {
            var refused = WriteRefusal();
            if (refused != StoreStatus.Ok) return refused;
            return SkipLocked(lastSequence, persist: true);
        }
    }

    private StoreStatus SkipLocked(ulong last, bool persist)
    {
        if (last <= Last) return StoreStatus.Ok;
        if (Msgs == 0)
        {
            Last = last;
            First = last + 1;
            Index.Reset(last + 1);
            return OnPurgedAll(last + 1);
        }
        if (last - Last > 1UL << 26) return StoreStatus.InvalidArgument;
        Index.AdvanceTo(last + 1);
        Last = last;
        return persist ? OnSkipped(last) : StoreStatus.Ok;
    }

    /// <summary>Sequences up to <paramref name="last"/> were skipped while messages remain.</summary>
    protected virtual StoreStatus OnSkipped(ulong last) => StoreStatus.Ok;

    // ---- loads ----

    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    public StoreStatus Load(ulong sequence, StoredMessage into)
    {
        if (!_readsDefer)
        {
            lock (Sync) return LoadCoreLocked(sequence, into, ref _noDeferral);
        }
        var d = new DeferredRead { Allowed = true };
        var st = LoadCore(sequence, into, ref d);
        // The usual load: found in memory under the lock, nothing deferred.
        if (!d.PagePending && !d.Pending) return st;
        while (d.PagePending && FetchDeferredPage(ref d)) st = LoadCore(sequence, into, ref d);
        if (!d.Pending) return st;
        st = CompleteRead(ref d, into, out bool retry);
        if (!retry) return st;
        d = default;
        return LoadCore(sequence, into, ref d);
    }

    // Inlined into Load (AggressiveOptimization code does not inline by profile): one call level less per load.
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private StoreStatus LoadCore(ulong sequence, StoredMessage into, ref DeferredRead d)
    {
        lock (Sync)
        {
            // No index page on disk (the usual case; only a fast open leaves some): no page can be missed, so none of
            // the deferred-paging bookkeeping below (a try/finally and two index calls per load) is needed.
            if (Index.PagedChunks == 0) return LoadCoreLocked(sequence, into, ref d);
            Index.DeferPaging = d.Allowed && d.PagesFetched < MaxDeferredPages;
            try
            {
                var st = LoadCoreLocked(sequence, into, ref d);
                return DeferredPageMissed(ref d) ? StoreStatus.Ok : st;
            }
            finally
            {
                Index.DeferPaging = false;
            }
        }
    }

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private StoreStatus LoadCoreLocked(ulong sequence, StoredMessage into, ref DeferredRead d)
    {
        if (IsClosed) return StoreStatus.Closed;
        if (sequence < First || sequence > Last || !Index.Holds(sequence)) return StoreStatus.NotFound;
        ref var e = ref Index.Get(sequence);
        if (!e.IsLive || (Index.HasMiss && DeferredPageMissed(ref d))) return StoreStatus.Deleted;
        return ReadMessage(sequence, e, Subjects.ById(e.SubjectId), into, ref d);
    }

    public StoreStatus LoadLast(ReadOnlySpan<byte> subject, StoredMessage into)
    {
        if (!_readsDefer)
        {
            lock (Sync) return LoadLastCoreLocked(subject, into, ref _noDeferral);
        }
        var d = new DeferredRead { Allowed = true };
        var st = LoadLastCore(subject, into, ref d);
        if (!d.PagePending && !d.Pending) return st;
        while (d.PagePending && FetchDeferredPage(ref d)) st = LoadLastCore(subject, into, ref d);
        if (!d.Pending) return st;
        st = CompleteRead(ref d, into, out bool retry);
        if (!retry) return st;
        d = default;
        return LoadLastCore(subject, into, ref d);
    }

    /// <summary>
    /// One pass of <see cref="LoadLast"/> under the lock with every disk read deferred; a deferred read (of the record
    /// or of an index page) is not done but reported as <see cref="StoreStatus.WouldBlock"/>.
    /// </summary>
    public StoreStatus LoadLastCached(ReadOnlySpan<byte> subject, StoredMessage into)
    {
        var d = new DeferredRead { Allowed = true, CachedOnly = true };
        var st = LoadLastCore(subject, into, ref d);
        return d.Pending || d.PagePending ? StoreStatus.WouldBlock : st;
    }

    private StoreStatus LoadLastCore(ReadOnlySpan<byte> subject, StoredMessage into, ref DeferredRead d)
    {
        lock (Sync)
        {
            // As in LoadCore: without index pages on disk nothing can be missed.
            if (Index.PagedChunks == 0) return LoadLastCoreLocked(subject, into, ref d);
            Index.DeferPaging = d.Allowed && d.PagesFetched < MaxDeferredPages;
            try
            {
                var st = LoadLastCoreLocked(subject, into, ref d);
                return DeferredPageMissed(ref d) ? StoreStatus.Ok : st;
            }
            finally
            {
                Index.DeferPaging = false;
            }
        }
    }

    private StoreStatus LoadLastCoreLocked(ReadOnlySpan<byte> subject, StoredMessage into, ref DeferredRead d)
    {
        if (IsClosed) return StoreStatus.Closed;
        if (Msgs == 0) return StoreStatus.NotFound;
        ulong seq = 0;
        if (SubjectMatch.IsAll(subject))
        {
            seq = Last;
            while (seq >= First && !Index.Get(seq).IsLive && !Index.HasMiss) seq--;
        }
        else if (SubjectMatch.IsLiteral(subject))
        {
            var s = Subjects.Find(subject);
            if (s is null) return StoreStatus.NotFound;
            seq = s.Last;
        }
        else
        {
            foreach (var s in Subjects.All)
            {
                if (s.Last > seq && SubjectMatch.Matches(s.Key, subject)) seq = s.Last;
            }
        }
        if (seq == 0 || seq < First) return StoreStatus.NotFound;
        ref var e = ref Index.Get(seq);
        if (Index.HasMiss && DeferredPageMissed(ref d)) return StoreStatus.Ok;
        return ReadMessage(seq, e, Subjects.ById(e.SubjectId), into, ref d);
    }

    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    public StoreStatus LoadNext(ReadOnlySpan<byte> filter, ulong fromSequence, StoredMessage into)
    {
        if (!_readsDefer)
        {
            lock (Sync) return LoadNextCoreLocked(filter, fromSequence, into, ref _noDeferral);
        }
        var d = new DeferredRead { Allowed = true };
        var st = LoadNextCore(filter, fromSequence, into, ref d);
        if (!d.PagePending && !d.Pending) return st;
        while (d.PagePending && FetchDeferredPage(ref d)) st = LoadNextCore(filter, fromSequence, into, ref d);
        if (!d.Pending) return st;
        st = CompleteRead(ref d, into, out bool retry);
        if (!retry) return st;
        d = default;
        return LoadNextCore(filter, fromSequence, into, ref d);
    }

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private StoreStatus LoadNextCore(ReadOnlySpan<byte> filter, ulong fromSequence, StoredMessage into, ref DeferredRead d)
    {
        lock (Sync)
        {
            // As in LoadCore: without index pages on disk nothing can be missed.
            if (Index.PagedChunks == 0) return LoadNextCoreLocked(filter, fromSequence, into, ref d);
            Index.DeferPaging = d.Allowed && d.PagesFetched < MaxDeferredPages;
            try
            {
                var st = LoadNextCoreLocked(filter, fromSequence, into, ref d);
                return DeferredPageMissed(ref d) ? StoreStatus.Ok : st;
            }
            finally
            {
                Index.DeferPaging = false;
            }
        }
    }

    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    private StoreStatus LoadNextCoreLocked(ReadOnlySpan<byte> filter, ulong fromSequence, StoredMessage into, ref DeferredRead d)
    {
        if (IsClosed) return StoreStatus.Closed;
        if (Msgs == 0) return StoreStatus.NotFound;
        ulong seq = Math.Max(fromSequence, First);
        ulong found = 0;
        if (SubjectMatch.IsAll(filter))
        {
            // A sequential reader mostly asks for a live sequence: NextLive checks that one inline before its walk.
            found = Index.NextLive(seq, Last);
        }
        else if (SubjectMatch.IsLiteral(filter))
        {
            var s = Subjects.Find(filter);
            if (s is null || s.Last < seq) return StoreStatus.NotFound;
            if (seq <= s.First) found = s.First;
            else
            {
                // Walk forward over sequences and backward over the subject's list at once:
                // O(min(gap to the next match, messages of the subject after 'seq')).
                ulong back = s.Last, fwd = seq;
                while (true)
                {
                    if (Index.Get(fwd).SubjectId == s.Id) { found = fwd; break; }
                    fwd++;
                    ulong p = Index.Get(back).Prev;
                    if (p < seq) { found = back; break; }
                    back = p;
                }
            }
        }
        else
        {
            int gen = NextGen();
            for (; seq <= Last; seq++)
            {
                seq = Index.NextLive(seq, Last);
                if (seq == 0) break;
                ref var e = ref Index.Get(seq);
                int id = e.SubjectId;
                if (_matchGen[id] != gen)
                {
                    _matchGen[id] = gen;
                    _matchVal[id] = SubjectMatch.Matches(Subjects.ById(id).Key, filter);
                }
                if (_matchVal[id]) { found = seq; break; }
            }
        }
        if (found == 0) return StoreStatus.NotFound;
        ref var fe = ref Index.Get(found);
        if (Index.HasMiss && DeferredPageMissed(ref d)) return StoreStatus.Ok;
        return ReadMessage(found, fe, Subjects.ById(fe.SubjectId), into, ref d);
    }

    /// <summary>
    /// Loads after a fast open touch index pages still on disk (file engine). A load under the lock does not read
    /// them (<see cref="SequenceIndex.DeferPaging"/>): it records the page and gives up; the page is read here,
    /// without the lock, installed under it, and the load starts again, so a reader waiting on the disk never
    /// stalls appends (issue 9, "reads never block appends"). A walk may touch several pages: after
    /// <see cref="MaxDeferredPages"/> of them, or a page that cannot be read detached, the last attempt pages in
    /// under the lock (which reports a damaged page exactly).
    /// </summary>
    private bool FetchDeferredPage(ref DeferredRead d)
    {
        if (!d.PagePending) return false;
        d.PagePending = false;
        d.PagesFetched++;
        var page = Index.ReadDetached(d.PageChunk);
        if (page is null)
        {
            d.PagesFetched = MaxDeferredPages;
            return true;
        }
        lock (Sync) Index.InstallDetached(d.PageChunk, page);
        return true;
    }

    /// <summary>Pages a single load may read outside the lock before it pages in under it.</summary>
    private const int MaxDeferredPages = 64;

    /// <summary>Under the lock, after a load touched the index: true if it missed a paged chunk (what it found is void).</summary>
    private bool DeferredPageMissed(ref DeferredRead d)
    {
        if (!Index.TakeMiss(out ulong chunk)) return false;
        d.PagePending = true;
        d.PageChunk = chunk;
        return true;
    }

    private int NextGen()
    {
        if (_matchGen.Length < Subjects.IdCapacity)
        {
            _matchGen = new int[Subjects.IdCapacity];
            _matchVal = new bool[Subjects.IdCapacity];
        }
        if (++_gen == int.MaxValue)
        {
            Array.Clear(_matchGen);
            _gen = 1;
        }
        return _gen;
    }

    // ---- state ----

    public StreamState GetState()
    {
        // The first message's timestamp may sit in an index page still on disk: read outside the lock (see FetchDeferredPage).
        var d = new DeferredRead { Allowed = true };
        StreamState state;
        while (!TryGetState(ref d, out state)) FetchDeferredPage(ref d);
        return state;
    }

    private bool TryGetState(ref DeferredRead d, out StreamState state)
    {
        lock (Sync)
        {
            if (!IsClosed && (Limits.MaxAge > TimeSpan.Zero || _ttl.Count > 0)) ExpireLocked(NowNanos());
            long firstTs;
            Index.DeferPaging = d.PagesFetched < MaxDeferredPages;
            try
            {
                firstTs = Msgs > 0 ? Index.Get(First).Timestamp : 0;
                if (DeferredPageMissed(ref d))
                {
                    state = default;
                    return false;
                }
            }
            finally
            {
                Index.DeferPaging = false;
            }
            state = new StreamState
            {
                Messages = Msgs,
                Bytes = Bytes,
                FirstSequence = Msgs > 0 ? First : Last + 1,
                FirstTimestamp = firstTs,
                LastSequence = Last,
                LastTimestamp = LastTs,
                Deleted = Msgs > 0 ? Last - First + 1 - Msgs : 0,
                Subjects = Subjects.Count,
                Consumers = _consumers.Count,
            };
            return true;
        }
    }

    public int GetSubjectCounts(ReadOnlySpan<byte> filter, IDictionary<string, ulong> into)
    {
        lock (Sync)
        {
            int n = 0;
            foreach (var s in Subjects.All)
            {
                if (!SubjectMatch.Matches(s.Key, filter)) continue;
                var key = System.Text.Encoding.UTF8.GetString(s.Key);
                into[key] = into.TryGetValue(key, out var c) ? c + s.Count : s.Count;
                n++;
            }
            return n;
        }
    }

    public ulong CountMatching(ReadOnlySpan<byte> filter)
    {
        lock (Sync)
        {
            if (SubjectMatch.IsAll(filter)) return Msgs;
            if (SubjectMatch.IsLiteral(filter)) return Subjects.Find(filter)?.Count ?? 0;
            ulong n = 0;
            foreach (var s in Subjects.All) if (SubjectMatch.Matches(s.Key, filter)) n += s.Count;
            return n;
        }
    }

    public StoreStatus UpdateLimits(StreamLimits limits)
    {
        ArgumentNullException.ThrowIfNull(limits);
        lock (Sync)
        {
            var refused = WriteRefusal();
            if (refused != StoreStatus.Ok) return refused;
            Limits = limits;
            EnforceAllLimitsLocked();
            StartExpiryTimer();
            return OnOperationDone(FloorDirty);
        }
    }

    // ---- snapshot / consumers / lifetime ----

    public virtual ValueTask<StoreStatus> SnapshotAsync(Stream destination, CancellationToken cancellationToken = default)
        => StoreSnapshot.WriteAsync(this, destination, cancellationToken);

    public virtual async ValueTask<StoreStatus> RestoreAsync(Stream source, CancellationToken cancellationToken = default)
    {
        var (st, err) = await StoreSnapshot.RestoreAsync(this, source, cancellationToken).ConfigureAwait(false);
        if (st != StoreStatus.Ok) LastError = err;
        else st = await FlushAsync(cancellationToken).ConfigureAwait(false);
        return st;
    }

    public StoreStatus OpenConsumer(string name, out IConsumerStore? consumer)
    {
        lock (Sync)
        {
            consumer = null;
            if (IsClosed) return StoreStatus.Closed;
            if (string.IsNullOrEmpty(name) || name is "." or ".." || name.AsSpan().IndexOfAny("/\\\0") >= 0)
                return StoreStatus.InvalidArgument;
            if (!_consumers.TryGetValue(name, out consumer))
            {
                consumer = CreateConsumerStore(name);
                _consumers[name] = consumer;
            }
            return StoreStatus.Ok;
        }
    }

    public IReadOnlyList<string> ConsumerNames()
    {
        lock (Sync) return [.. _consumers.Keys];
    }

    public StoreStatus Delete()
    {
        lock (Sync)
        {
            if (!IsClosed)
            {
                IsClosed = true;
                _expiryTimer?.Dispose();
            }
            return DeleteEngine();
        }
    }

    public void Dispose()
    {
        if (!IsClosed) BeforeClose();
        lock (Sync)
        {
            if (IsClosed) return;
            IsClosed = true;
            _expiryTimer?.Dispose();
            foreach (var c in _consumers.Values) c.Dispose();
            CloseEngine();
        }
        GC.SuppressFinalize(this);
    }

    public ValueTask DisposeAsync()
    {
        Dispose();
        return ValueTask.CompletedTask;
    }
}

/// <summary>A consumer state kept in memory; persistent engines override <see cref="Persist"/>.</summary>
internal class MemoryConsumerStore(string name, Action<string>? onDelete = null) : IConsumerStore
{
    protected readonly Lock Gate = new();
    protected readonly ConsumerState State = new();
    public string Name { get; } = name;

    protected virtual StoreStatus Persist() => StoreStatus.Ok;
    protected virtual StoreStatus DeleteFiles() => StoreStatus.Ok;

    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    public StoreStatus UpdateDelivered(ulong consumerSequence, ulong streamSequence, ulong deliveries, long timestamp)
    {
        lock (Gate)
        {
            ConsumerStateCodec.ApplyDelivered(State, consumerSequence, streamSequence, deliveries, timestamp);
            return Persist();
        }
    }

    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    public StoreStatus UpdateAcked(ulong consumerSequence, ulong streamSequence)
    {
        lock (Gate)
        {
            ConsumerStateCodec.ApplyAcked(State, consumerSequence, streamSequence);
            return Persist();
        }
    }

    public StoreStatus Update(ConsumerState state)
    {
        ArgumentNullException.ThrowIfNull(state);
        lock (Gate)
        {
            state.CopyTo(State);
            return Persist();
        }
    }

    public StoreStatus GetState(ConsumerState into)
    {
        ArgumentNullException.ThrowIfNull(into);
        lock (Gate)
        {
            State.CopyTo(into);
            return StoreStatus.Ok;
        }
    }

    public StoreStatus Delete()
    {
        // Unregister first, outside Gate: the store takes its own lock and then consumer gates (lock order).
        onDelete?.Invoke(Name);
        lock (Gate)
        {
            return DeleteFiles();
        }
    }

    public virtual void Dispose() => GC.SuppressFinalize(this);
}
