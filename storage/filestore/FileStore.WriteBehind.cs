using NatsBroker.Contracts;

namespace NatsBroker.Storage.File;

/// <summary>
/// Write-behind of <see cref="SyncPolicy.AsyncPersist"/> appends (nats-server 2.12's <c>persist_mode: async</c>, its
/// filestore's AsyncFlush: the flush loop writes the block caches, not the appender). When the newest block holds
/// <see cref="FileStoreOptions.CoalesceBytes"/> not yet handed to the OS, the appender passes that run to a
/// thread-pool work item instead of copying it into the page cache itself under the store lock. On the 2-core
/// bench machine that write(2) was ~15% of a fast-ingest stream's ingest thread, the serial part of the row
/// (perf, bench/results/session-2026-11-29-b).
/// <para>
/// Periodic mode keeps the write on the appender's thread, as nats-server's default (flush in place) does: with the
/// raw engine appending ~6 M messages/s on one thread (storage bench, "append 128 B (stream grows)") the write-behind
/// measured 0.85-0.87x, its pool thread competing for the second core with the appender's background work.
/// </para>
/// <para>
/// Acknowledgement does not change: an async-persist append is acknowledged before its bytes reach the OS, and a
/// failed write still stops the store (fail-stop), when its outcome is folded in.
/// </para>
/// <para>
/// Invariants, under the store lock:
/// <list type="bullet">
/// <item>At most one write in flight: bytes [From, To) of the array that was the block's cache at the hand-off, with
/// the block's <c>Flushed</c> still at From until the outcome is folded in (<see cref="CompleteWriteBehindLocked"/>).</item>
/// <item>Those bytes do not change while the write is in flight: appends go after <c>Size</c>, and everything else
/// that rewrites, writes, fsyncs, replaces or releases the block's bytes completes the write first
/// (<see cref="FlushTailLocked"/>, EraseInPlace, a new tail, the growth of the tail's image, detaching a block, closing).</item>
/// <item>The work item never takes the store lock. A lock holder that needs the outcome does the write itself if
/// no pool thread has started it, so nothing under the lock depends on the thread pool having a free thread.</item>
/// </list>
/// </para>
/// </summary>
internal sealed partial class FileStore
{
    private WriteBehind? _writeBehind;

    /// <summary>A write-behind is in flight and not finished (under the lock).</summary>
    private bool WriteBehindBusy => _writeBehind is { Block: not null, IsDone: false };

    /// <summary>
    /// Under the lock, after an append or a batch left CoalesceBytes or more pending in <paramref name="t"/>: periodic
    /// mode writes them here, async persist hands them to the write-behind.
    /// </summary>
    private StoreStatus WriteCoalescedLocked(MsgBlock t)
        => _sync == SyncPolicy.AsyncPersist ? WriteBehindLocked(t) : FlushTailLocked();

    /// <summary>Under the lock: before <paramref name="b"/>'s bytes are rewritten or released, its write in flight (if any) ends.</summary>
    private void CompleteWriteBehindOf(MsgBlock b)
    {
        if (_writeBehind?.Block == b) CompleteWriteBehindLocked();
    }

    /// <summary>
    /// Under the lock, after an append or a batch left <paramref name="t"/> with CoalesceBytes or more pending: hands
    /// the pending bytes to the write-behind work item. While the previous write is still in flight the bytes stay
    /// buffered, up to four times CoalesceBytes; beyond that the appender waits for (or does) the previous write.
    /// Writing the newer bytes itself beside the write in flight instead of waiting was tried: 0.93-1.0x on the
    /// fast-ingest async-persist rows (same-run A/B, both orders), so not kept.
    /// </summary>
    private StoreStatus WriteBehindLocked(MsgBlock t)
    {
        var wb = _writeBehind ??= new WriteBehind();
        if (wb.Block is not null)
        {
            if (!wb.IsDone && t.Size - t.Flushed < 4L * _opt.CoalesceBytes) return StoreStatus.Ok;
            var st = CompleteWriteBehindLocked();
            if (st != StoreStatus.Ok) return st;
            if (t.Size - t.Flushed < _opt.CoalesceBytes) return StoreStatus.Ok;
        }
        long grow = Math.Max(0, t.Size - Math.Max(t.Reserved, t.Flushed));
        // A write that would pass the disk limit, or a store already failed: the synchronous path refuses it and says why.
        if (Failure is not null || _writeRefused || (grow > 0 && _opt.DiskLimitBytes > 0 && _diskBytes + grow > _opt.DiskLimitBytes))
            return FlushTailLocked();
        t.WriteGen++;
        wb.Start(t, t.Cache!, t.Flushed, t.Size, grow);
        return StoreStatus.Ok;
    }

    /// <summary>
    /// Under the lock: waits for the write in flight (doing it on this thread if no pool thread has started it) and
    /// folds its outcome into the block. A failed write stops the store. Ok when nothing is in flight.
    /// </summary>
    private StoreStatus CompleteWriteBehindLocked()
    {
        var wb = _writeBehind;
        if (wb?.Block is not { } b) return StoreStatus.Ok;
        var error = wb.Finish(out long from, out long to, out long grow);
        if (error is not null) return Fail($"write of {to - from} bytes to {b.Path}", error);
        _diskBytes += grow;
        _bytesSinceImage += to - from;
        b.Flushed = to;
        ArmSync();
        return StoreStatus.Ok;
    }

    /// <summary>
    /// The one write in flight of a store. States: Idle, Queued (handed to the pool), Running (a pool thread or the
    /// lock holder claimed it), Done. Reused for every hand-off: no allocation per write.
    /// </summary>
    private sealed class WriteBehind : IThreadPoolWorkItem
    {
        private const int Idle = 0, Queued = 1, Running = 2, Done = 3;
        private readonly ManualResetEventSlim _done = new(false);
        private int _state;
        private byte[] _buffer = [];
        private long _from, _to, _grow;
        private Exception? _error;

        /// <summary>The block whose bytes are in flight; null when idle. Read and written under the store lock only.</summary>
        public MsgBlock? Block { get; private set; }

        public bool IsDone => Volatile.Read(ref _state) == Done;

        public void Start(MsgBlock block, byte[] buffer, long from, long to, long grow)
        {
            Block = block;
            _buffer = buffer;
            _from = from;
            _to = to;
            _grow = grow;
            _error = null;
            _done.Reset();
            Volatile.Write(ref _state, Queued);
            ThreadPool.UnsafeQueueUserWorkItem(this, preferLocal: false);
        }

        /// <summary>A pool thread: does the write unless the lock holder already claimed it (or it is from an earlier hand-off).</summary>
        public void Execute()
        {
            if (Interlocked.CompareExchange(ref _state, Running, Queued) == Queued) Write();
        }

        /// <summary>Under the store lock: the outcome of the write, done here if nobody started it; back to idle.</summary>
        public Exception? Finish(out long from, out long to, out long grow)
        {
            if (Interlocked.CompareExchange(ref _state, Running, Queued) == Queued) Write();
            else _done.Wait();
            from = _from;
            to = _to;
            grow = _grow;
            var error = _error;
            Block = null;
            _buffer = [];
            Volatile.Write(ref _state, Idle);
            return error;
        }

        private void Write()
        {
            try
            {
                Block!.File.Write(_buffer.AsSpan((int)_from, (int)(_to - _from)), _from);
            }
            catch (Exception e)
            {
                // Any failure (not only I/O) is the store's: an exception escaping a pool thread would end the
                // process and leave the lock holder waiting. It is folded in as a failed write (fail-stop).
                _error = e;
            }
            Volatile.Write(ref _state, Done);
            _done.Set();
        }
    }
}
