using System.Buffers;
using NatsBroker.Contracts;

namespace NatsBroker.Storage.File;

/// <summary>
/// Deletion of emptied blocks outside the store lock (issue 9, "reads never block appends", writer side). A block
/// whose last message goes (a limit or an expiry removing from the front, a per-subject limit, a roll that finds
/// tombstone-only blocks) is deleted only after its tombstones that still matter are carried to the newest block and
/// made durable (FORMAT.md "Blocks over time"). Under the store lock that meant, on the append that emptied it: a read
/// of the whole block from its file when it was not cached (up to block_size), an fsync of every block written since
/// the last sync and of the block directory, then close and unlink of the file and of its index snapshot. A stream at
/// its limit empties a block at about every roll, so every publisher waited on that I/O.
/// <para>
/// Now the append only dooms the block (<see cref="MsgBlock.Doomed"/>, memory only); the deleter runs without the lock
/// on the first thread that looks after the write released it (<see cref="RunDeferredWork"/>, called by every append,
/// the expiry timer and the flush tick, which a removal arms), so other appenders go on while it waits on the disk. It is not a
/// thread-pool item: the store lock is not fair, and a queued deleter measured starved behind a busy appender while
/// emptied blocks piled up on disk. For each doomed block, one at a time, in order:
/// 1. under the lock: claims it (<see cref="MsgBlock.Claimed"/>) and takes its snapshot out of the installed set;
/// 2. without the lock: reads the block's bytes from its file (a sealed block does not change: it has no live message
///    an Erase could rewrite) when it holds tombstones;
/// 3. under the lock: appends the tombstones that still matter to the newest block (in memory, as any append), hands
///    the newest block's pending bytes to the OS (the write every flush does) and lists the blocks and directories
///    with writes not yet durable;
/// 4. without the lock: fsyncs them (an error is fatal, as every fsync the store depends on);
/// 5. without the lock: closes and unlinks the block's file and its snapshot;
/// 6. under the lock: removes the block from the store's lists and notes the block directory change (so the next
///    fsync of the directory, which any later deletion with tombstones waits for, covers the unlink).
/// </para>
/// <para>
/// Why the order is kept: a doomed block stays in the block list until step 6, so a tombstone elsewhere that refers to
/// it is still carried (BlockFor finds it), exactly as before the block was emptied. A block whose tombstones were not
/// carried because their target was already gone is unlinked only after the fsync of step 4, which covers the block
/// directory entry of that target's unlink (noted in step 6 before this block's step 3): the same order the locked
/// deletion kept. A power cut at any step leaves the block or its carried tombstones durable, never neither.
/// </para>
/// Explicit operations (remove, purge, compact, limit updates) and the close still delete their emptied blocks under the
/// lock before they return (<see cref="DeleteDoomedLocked"/>), skipping a block the deleter claimed. The close first
/// waits for the deleter (which stops at its next step once the store is closing), so every doomed block is deleted
/// by one of them.
/// </summary>
internal sealed partial class FileStore
{
    /// <summary>1 while the deleter runs (one at a time; written under the store lock, read as a hint without it).</summary>
    private int _deleterActive;
    /// <summary>A block was doomed since the deleter last found none (read without the lock: one volatile read per append).</summary>
    private volatile bool _doomedPending;
    /// <summary>Set when the deleter is not running; the close waits on it.</summary>
    private readonly ManualResetEventSlim _deleterIdle = new(initialState: true);

    /// <summary>Tests: called by the deleter right before it unlinks a block's file, without the store lock.</summary>
    internal Action<string>? BeforeBlockUnlink { get; set; }

    /// <summary>Under the store lock: <paramref name="b"/> holds no live message; it is deleted once the lock is released.</summary>
    private void Doom(MsgBlock b)
    {
        if (b == _tail || b.Doomed) return;
        b.Doomed = true;
        if (!_recovering) _doomedPending = true; // the open deletes its emptied blocks itself (RecoverBlocks)
    }

    /// <summary>
    /// After a write released the store lock (never with it held): runs the deleter when a block was doomed and no
    /// deleter runs. One volatile read when there is nothing to do.
    /// </summary>
    protected override void RunDeferredWork()
    {
        // Without the lock: nothing doomed, or a deleter is running (it finds what was doomed since it started).
        if (!_doomedPending || Volatile.Read(ref _deleterActive) != 0) return;
        lock (Sync)
        {
            if (_deleterActive != 0 || IsClosed || _closing || Failure is not null) return;
            Volatile.Write(ref _deleterActive, 1);
            _doomedPending = false;
            _deleterIdle.Reset();
        }
        RunDeleter();
    }

    /// <summary>Under the store lock: deletes every doomed block the deleter has not claimed (explicit operations, open, close).</summary>
    private void DeleteDoomedLocked()
    {
        for (int i = 0; i < _blocks.Count; i++)
        {
            var b = _blocks[i];
            if (!b.Doomed || b.Claimed || b == _tail) continue;
            RemoveBlock(b);
            if (!_byId.ContainsKey(b.Id)) i--;
            if (Failure is not null) return;
        }
    }

    /// <summary>The deleter (never with the store lock held on entry): the steps of the class comment, block by block.</summary>
    private void RunDeleter()
    {
        bool done = false;
        try
        {
            while (true)
            {
                MsgBlock? b = null;
                bool hadSnapshot;
                int size;
                lock (Sync)
                {
                    if (IsClosed || _closing || Failure is not null) return;
                    foreach (var x in _blocks)
                    {
                        if (x.Doomed && !x.Claimed && x != _tail)
                        {
                            b = x;
                            break;
                        }
                    }
                    if (b is null)
                    {
                        // Under the lock: a block doomed after this point is found by the next run.
                        _doomedPending = false;
                        EndRunLocked();
                        done = true;
                        return;
                    }
                    b.Claimed = true;
                    hadSnapshot = _snapshotted.Remove(b.Id);
                    size = b.Tombstones > 0 ? (int)b.Size : 0;
                }
                if (!DeleteClaimed(b, size, hadSnapshot)) return;
            }
        }
        finally
        {
            // Leaving early (closing, fail-stop, an unexpected exception): a later write starts a new run.
            if (!done)
            {
                lock (Sync) EndRunLocked();
            }
        }
    }

    private void EndRunLocked()
    {
        Volatile.Write(ref _deleterActive, 0);
        _deleterIdle.Set();
    }

    /// <summary>Steps 2 to 6 for one claimed block; false = stop (closing, or the store failed).</summary>
    private bool DeleteClaimed(MsgBlock b, int size, bool hadSnapshot)
    {
        if (size > 0)
        {
            var data = ArrayPool<byte>.Shared.Rent(size);
            try
            {
                bool read;
                try
                {
                    read = b.File.Read(data.AsSpan(0, size), 0) == size;
                }
                catch (Exception e) when (e is IOException or UnauthorizedAccessException or ObjectDisposedException)
                {
                    read = false;
                }
                List<PendingSync> toSync;
                lock (Sync)
                {
                    if (IsClosed || _closing || Failure is not null)
                    {
                        Unclaim(b, hadSnapshot);
                        return false;
                    }
                    if (!read || !CarryTombstonesLocked(b, data.AsSpan(0, size)))
                    {
                        // Kept: its tombstones cannot be carried (unreadable, or too many); retried at a later roll.
                        Unclaim(b, hadSnapshot);
                        b.Doomed = false;
                        _emptyBlocks = true;
                        return true;
                    }
                    if (FlushTailLocked() != StoreStatus.Ok)
                    {
                        Unclaim(b, hadSnapshot);
                        return false;
                    }
                    toSync = CollectUnsyncedLocked(includeConsumerDir: false);
                }
                // The carried tombstones (and the floor record, and every unlink noted before) durable before the file goes.
                if (SyncCollected(toSync) != StoreStatus.Ok) return false;
            }
            finally
            {
                ArrayPool<byte>.Shared.Return(data);
            }
        }
        BeforeBlockUnlink?.Invoke(b.Path);
        // A reader or an fsync racing with this finds the block removed and its file closed, and gives up on it.
        b.Removed = true;
        b.File.Dispose();
        bool unlinked = DeleteBlockFiles(b, hadSnapshot, out var error);
        lock (Sync)
        {
            if (IsClosed) return false;
            DetachBlockLocked(b);
            if (unlinked) _blockDirState.Touch();
            if (error is not null) LastError = error;
        }
        return true;
    }

    /// <summary>Under the store lock: the deleter gives a claimed block back (it stays doomed unless the caller says otherwise).</summary>
    private void Unclaim(MsgBlock b, bool hadSnapshot)
    {
        b.Claimed = false;
        if (hadSnapshot) _snapshotted.Add(b.Id);
    }

    /// <summary>Before a close takes the store lock: the deleter stops at its next step; the close deletes what is left.</summary>
    private void WaitForDeleter() => _deleterIdle.Wait();
}
