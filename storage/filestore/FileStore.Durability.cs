using NatsBroker.Contracts;

namespace NatsBroker.Storage.File;

/// <summary>
/// fsync bookkeeping, sync-always group commit and the flush/sync timers. Every block and directory counts its
/// writes (WriteGen) and the writes known durable (SyncedGen); whoever makes data durable fsyncs every block
/// and directory touched since the last successful fsync, including blocks rolled over or created meanwhile.
/// A failed fsync is fatal (fail-stop) and is never retried: on Linux the failed pages may already be marked
/// clean, so a second fsync can report success without the data (PostgreSQL's "fsyncgate").
/// </summary>
internal sealed partial class FileStore
{
    private Timer? _flushTimer;
    private Timer? _syncTimer;
    private TimeSpan _flushPeriod;
    private int _flushing;
    private int _flushArmed;
    private int _syncArmed;
    private long _lastConsumerWrite;

    private readonly record struct PendingSync(MsgBlock? Block, DirectoryState? Dir, long Gen);

    /// <summary>Collects (under the store lock) every block and directory with writes not yet known durable.</summary>
    private List<PendingSync> CollectUnsyncedLocked(bool includeConsumerDir, List<PendingSync>? reuse = null)
    {
        var list = reuse ?? [];
        list.Clear();
        foreach (var b in _blocks) if (b.NeedsSync) list.Add(new(b, null, b.WriteGen));
        if (_blockDirState.NeedsSync) list.Add(new(null, _blockDirState, Interlocked.Read(ref _blockDirState.Gen)));
        if (includeConsumerDir && _consumerDirState.NeedsSync) list.Add(new(null, _consumerDirState, Interlocked.Read(ref _consumerDirState.Gen)));
        return list;
    }

    /// <summary>fsyncs what <see cref="CollectUnsyncedLocked"/> found (files first, then directories). Any error is fatal.</summary>
    private StoreStatus SyncCollected(List<PendingSync> list)
    {
        foreach (var p in list)
        {
            if (p.Block is not { } b) continue;
            try
            {
                b.File.Sync();
                Interlocked.Increment(ref _fsyncs);
                b.MarkSynced(p.Gen);
            }
            catch (ObjectDisposedException) when (b.Removed)
            {
                // Deleted meanwhile: it held no live message (its tombstones were carried durably first).
            }
            catch (Exception e) when (e is IOException or UnauthorizedAccessException or ObjectDisposedException)
            {
                return Fail($"fsync of {b.Path}", e);
            }
        }
        foreach (var p in list)
        {
            if (p.Dir is not { } d) continue;
            try
            {
                _fs.SyncDirectory(d.Path);
                d.MarkSynced(p.Gen);
            }
            catch (Exception e) when (e is IOException or UnauthorizedAccessException)
            {
                return Fail($"fsync of directory {d.Path}", e);
            }
        }
        return Failure is null ? StoreStatus.Ok : StoreStatus.IoError;
    }

    /// <summary>Makes everything written so far durable, under the store lock (explicit operations, close, recovery).</summary>
    private StoreStatus SyncAllLocked() => SyncCollected(CollectUnsyncedLocked(includeConsumerDir: true, _lockedSyncList));

    // Reused so that sync-always appends and operations allocate nothing: one is used only under the store
    // lock, the other only by the single group-commit leader.
    private readonly List<PendingSync> _lockedSyncList = [];
    private readonly List<PendingSync> _leaderSyncList = [];

    // ---- group commit (sync always) ----
    private long _written;   // tickets handed out (under Sync)
    private long _ticket;    // ticket of the write just made (under Sync)
    private long _durable;   // highest ticket known durable (under _commitGate)
    private long _fsyncs;
    private bool _leaderActive;    // under _commitGate
    private readonly object _commitGate = new();

    /// <summary>Number of block fsyncs issued (tests check that concurrent sync-always appends share them).</summary>
    internal long FsyncCount => Interlocked.Read(ref _fsyncs);

    protected override long TakeDurabilityTicket()
    {
        long t = _ticket;
        _ticket = 0;
        return t;
    }

    /// <summary>
    /// Sync-always durability with group commit: the first waiter becomes the leader (followers wait on a
    /// monitor, not on a lock held across the fsync, which measured no batching), takes the newest ticket,
    /// writes every pending byte of the newest block in one write, then fsyncs every block and directory touched
    /// since the last sync (a block rolled over and a block created included) once for all of them; waiters
    /// whose ticket is covered return without a write or fsync of their own. Nothing is marked durable unless
    /// every one of those fsyncs succeeded.
    /// </summary>
    protected override StoreStatus WaitDurable(long ticket)
    {
        lock (_commitGate)
        {
            while (true)
            {
                if (_durable >= ticket) return StoreStatus.Ok;
                if (Failure is not null)
                {
                    LastError = Failure;
                    return StoreStatus.IoError;
                }
                if (!_leaderActive)
                {
                    _leaderActive = true;
                    break;
                }
                Monitor.Wait(_commitGate);
            }
        }
        long target = 0;
        var st = StoreStatus.Ok;
        try
        {
            List<PendingSync> toSync;
            lock (Sync)
            {
                if (IsClosed && Failure is null) return StoreStatus.Ok; // closing wrote and fsynced everything
                target = _written;
                // One write for every record appended since the last leader; appenders meanwhile only touch memory.
                st = FlushTailLocked();
                if (st != StoreStatus.Ok) return st;
                toSync = CollectUnsyncedLocked(includeConsumerDir: false, _leaderSyncList);
            }
            st = SyncCollected(toSync);
            return st;
        }
        finally
        {
            lock (_commitGate)
            {
                if (st == StoreStatus.Ok && Failure is null && target > _durable) _durable = target;
                _leaderActive = false;
                Monitor.PulseAll(_commitGate);
            }
        }
    }

    // ---- commit before acknowledgement (periodic) ----

    /// <summary>
    /// Periodic mode coalesces appends in the newest block's image (written at CoalesceBytes or by the flush tick), so
    /// an append that returned may not have reached the OS yet; <see cref="Commit"/> writes it. Sync-always appends
    /// are fsynced before they return, and async persist acknowledges before the write by definition (ADR-56).
    /// </summary>
    public override bool NeedsCommit => _sync == SyncPolicy.Periodic;

    /// <summary>
    /// One write(2) of every byte appended since the last write, under the store lock (the same write the flush tick
    /// or the CoalesceBytes threshold would make, only earlier): what a host acknowledges after this survives a
    /// process crash. The fsync stays the sync timer's (SyncInterval), as nats-server's default.
    /// </summary>
    public override StoreStatus Commit()
    {
        if (_sync != SyncPolicy.Periodic) return StoreStatus.Ok;
        lock (Sync)
        {
            if (IsClosed) return Failure is null ? StoreStatus.Ok : StoreStatus.IoError; // closing wrote everything
            return FlushTailLocked();
        }
    }

    /// <summary>
    /// How often dirty consumer states are rewritten: ConsumerWriteInterval, and at most 100 ms under sync-always
    /// (nats-server's consumer flushLoop minTime: about 10 writes a second per consumer under load).
    /// </summary>
    private long ConsumerWriteMillis => _sync == SyncPolicy.Always
        ? Math.Min(100, (long)_opt.ConsumerWriteInterval.TotalMilliseconds)
        : (long)_opt.ConsumerWriteInterval.TotalMilliseconds;

    // ---- timers ----

    private void StartTimers()
    {
        _flushPeriod = Config.FlushInterval > TimeSpan.Zero ? Config.FlushInterval : TimeSpan.FromMilliseconds(10);
        // One-shot timers, armed only when there is something to do: an idle store costs nothing.
        _flushTimer = new Timer(static s => ((FileStore)s!).FlushTick(), this, Timeout.InfiniteTimeSpan, Timeout.InfiniteTimeSpan);
        _syncTimer = new Timer(static s => ((FileStore)s!).SyncTick(), this, Timeout.InfiniteTimeSpan, Timeout.InfiniteTimeSpan);
    }

    private void StopTimers()
    {
        _flushTimer?.Dispose();
        _syncTimer?.Dispose();
    }

    /// <summary>Schedules the background flush (once per flush interval at most). Thread-safe, lock-free.</summary>
    internal void ArmFlush()
    {
        if (Volatile.Read(ref _flushArmed) == 0 && Interlocked.Exchange(ref _flushArmed, 1) == 0)
            _flushTimer?.Change(_flushPeriod, Timeout.InfiniteTimeSpan);
    }

    private void ArmSync()
    {
        if (_sync != SyncPolicy.Always && Volatile.Read(ref _syncArmed) == 0 && Interlocked.Exchange(ref _syncArmed, 1) == 0)
            _syncTimer?.Change(Config.SyncInterval, Timeout.InfiniteTimeSpan);
    }

    private void FlushTick()
    {
        Volatile.Write(ref _flushArmed, 0); // writes from here on arm the next tick
        if (Interlocked.Exchange(ref _flushing, 1) == 1)
        {
            ArmFlush();
            return;
        }
        try
        {
            List<FileConsumerStore>? consumers = null;
            lock (Sync)
            {
                if (IsClosed || Failure is not null) return;
                if (_persistedFloor < First) WriteFloorRecord();
                // A write-behind still in flight is not waited for here, under the lock: the next tick writes the rest.
                if (WriteBehindBusy) ArmFlush();
                else if (FlushTailLocked() == StoreStatus.DiskFull) ArmFlush(); // retry (a full disk may clear)
                // Consumer files cost an fsync each: rewritten at most every ConsumerWriteMillis.
                long now = Environment.TickCount64;
                bool consumersDue = now - _lastConsumerWrite >= ConsumerWriteMillis;
                if (consumersDue)
                {
                    _lastConsumerWrite = now;
                    foreach (var c in _fileConsumers) (consumers ??= []).Add(c);
                }
                else if (_fileConsumers.Count > 0)
                {
                    ArmFlush();
                }
            }
            // Consumer writes outside the lock: appends go on meanwhile.
            if (consumers is not null) foreach (var c in consumers) c.FlushIfDirty();
        }
        finally
        {
            Volatile.Write(ref _flushing, 0);
        }
        // After releasing _flushing: a checkpoint (an index image can take seconds to write) must not hold back
        // the next flush ticks, which write the buffered tail.
        if (!IsClosed && Failure is null) Checkpoint(wait: false);
        // Emptied blocks no write has deleted yet (FileStore.BlockDeletion.cs): a removal arms this tick.
        RunDeferredWork(); // sealed blocks made durable since the last tick get their snapshots, and the index image its checkpoint
    }

    /// <summary>Periodic fsync: SyncInterval after the first unsynced write.</summary>
    private void SyncTick()
    {
        Volatile.Write(ref _syncArmed, 0);
        List<PendingSync> toSync;
        lock (Sync)
        {
            if (IsClosed || Failure is not null) return;
            FlushTailLocked();
            toSync = CollectUnsyncedLocked(includeConsumerDir: true);
        }
        if (SyncCollected(toSync) == StoreStatus.Ok) Checkpoint(wait: false);
    }

    public override ValueTask<StoreStatus> FlushAsync(CancellationToken cancellationToken = default)
    {
        List<FileConsumerStore> consumers = [];
        StoreStatus st;
        lock (Sync)
        {
            if (IsClosed) return ValueTask.FromResult(StoreStatus.Closed);
            if (_persistedFloor < First) WriteFloorRecord();
            st = FlushTailLocked();
            if (st == StoreStatus.Ok) st = SyncAllLocked();
            consumers.AddRange(_fileConsumers);
        }
        if (st == StoreStatus.Ok) Checkpoint(wait: true); // an explicit flush is a checkpoint
        foreach (var c in consumers)
        {
            var s3 = c.FlushIfDirty();
            if (st == StoreStatus.Ok) st = s3;
        }
        if (st == StoreStatus.Ok)
        {
            // Consumer files just replaced: their directory entries become durable too.
            lock (Sync) st = SyncCollected(CollectUnsyncedLocked(includeConsumerDir: true));
        }
        return ValueTask.FromResult(st);
    }
}
