using NatsBroker.Contracts;
using NatsBroker.Storage.Internal;

namespace NatsBroker.Storage.File;

/// <summary>Removal (tombstones, erase in place), deletion of emptied blocks, purge of everything, explicit operations.</summary>
internal sealed partial class FileStore
{
    private bool _compacting;
    /// <summary>Some block may have no live message (set when a block's live count hits 0 or a block rolls).</summary>
    private bool _emptyBlocks;

    protected override void OnRemoved(ulong seq, ref IndexEntry entry, RemoveKind kind)
    {
        if (!_byId.TryGetValue((uint)(entry.Location >> 32), out var b)) return;
        b.Live--;
        if (_recovering) return;
        if (kind == RemoveKind.Lazy) ArmFlush(); // the new floor is written by the next flush
        if (kind == RemoveKind.Erase) EraseInPlace(b, (int)(entry.Location & 0xFFFFFFFF), entry.Aux, seq);
        if (kind != RemoveKind.Lazy) AppendControl(Format.TypeTombstone, seq);
        if (b.Live == 0)
        {
            // Deleted by the background deleter, or at the end of an explicit operation (FileStore.BlockDeletion.cs).
            if (b != _tail) Doom(b);
            else _emptyBlocks = true;
        }
    }

    private void EraseInPlace(MsgBlock b, int off, int len, ulong seq)
    {
        // The erased record may be in the write in flight, which must not put the old bytes back after this.
        CompleteWriteBehindOf(b);
        b.EraseGen++;
        var buf = new byte[len];
        Format.WriteRecord(buf, Format.TypeErased, seq, 0, 0, default, default, new byte[len - Format.RecordOverhead]);
        if (b.Cache is not null && off + len <= b.Size) buf.CopyTo(b.Cache.AsSpan(off));
        if (off < b.Flushed && Failure is null)
        {
            if (!DropSnapshotDurably(b) || !DropImageDurably()) return;
            try
            {
                b.WriteGen++;
                b.File.Write(buf, off);
                ArmSync();
            }
            catch (Exception e) when (e is IOException or UnauthorizedAccessException or ObjectDisposedException)
            {
                Fail($"erase of sequence {seq} in {b.Path}", e);
            }
        }
    }

    /// <summary>
    /// Dooms every older block without a live message, e.g. blocks that only ever held tombstones (deleted by the
    /// background deleter, or by the explicit operation that runs this, FileStore.BlockDeletion.cs). Runs at block
    /// roll and after explicit operations.
    /// </summary>
    private void CompactEmptyBlocks()
    {
        if (_compacting || _recovering || !_emptyBlocks) return;
        _compacting = true;
        _emptyBlocks = false;
        try
        {
            foreach (var b in _blocks)
            {
                if (b.Live == 0 && b != _tail) Doom(b);
            }
        }
        finally
        {
            _compacting = false;
        }
    }

    /// <summary>
    /// Deletes a block with no live message, under the store lock (explicit operations, purge, open and close; the
    /// append path leaves it to the background deleter). Its tombstones that still matter are appended to the newest
    /// block and made durable (checked fsync of every touched block and the block directory) before the file goes,
    /// in every sync mode: a delete must never be undone by compaction, even by a power cut. A block the deleter
    /// is working on is left to it.
    /// </summary>
    private void RemoveBlock(MsgBlock b)
    {
        if (b == _tail || Failure is not null || b.Claimed) return;
        if (b.Tombstones > 0)
        {
            var data = b.Cache;
            int size = (int)b.Size;
            if (data is null)
            {
                data = new byte[size];
                try
                {
                    if (b.File.Read(data, 0) < size)
                    {
                        b.Doomed = false;
                        return;
                    }
                }
                catch (Exception e) when (e is IOException or UnauthorizedAccessException or ObjectDisposedException)
                {
                    b.Doomed = false; // keep the block: its tombstones cannot be carried
                    return;
                }
            }
            if (!CarryTombstonesLocked(b, data.AsSpan(0, size)))
            {
                b.Doomed = false;
                return;
            }
            // Keep the block unless its tombstones (and the floor record) are durable elsewhere.
            if (FlushTailLocked() != StoreStatus.Ok || SyncAllLocked() != StoreStatus.Ok) return;
        }
        DetachBlockLocked(b);
        b.Removed = true;
        b.File.Dispose();
        bool hadSnapshot = _snapshotted.Remove(b.Id);
        bool unlinked = DeleteBlockFiles(b, hadSnapshot, out var error);
        if (unlinked) _blockDirState.Touch();
        if (error is not null) LastError = error;
    }

    /// <summary>
    /// Appends to the newest block the tombstones of <paramref name="b"/> (its bytes: <paramref name="data"/>) that still
    /// matter: those of messages in other blocks that still exist (doomed ones included: their files are still there)
    /// and above the persisted floor. False (nothing appended) when that would be more than half a block: carrying it
    /// could roll the newest block, whose tombstone-only predecessor would be carried again, and so on forever (a large
    /// purge by subject with small blocks did loop). Such a block is kept instead, until enough of the blocks its
    /// tombstones refer to are gone.
    /// </summary>
    private bool CarryTombstonesLocked(MsgBlock b, ReadOnlySpan<byte> data)
    {
        int size = data.Length;
        int carry = 0;
        for (int pass = 0; pass < 2; pass++)
        {
            int off = Format.BlockHeaderSize;
            while (off < size)
            {
                if (!Format.TryRecord(data[off..], out var rec))
                {
                    // Damaged bytes with good records after them (recovery resynchronised past them and the
                    // block was appended to afterwards: a power cut that wrote back a later page but not an
                    // earlier one, or a bad sector). The tombstones after the damage are as real as the others:
                    // skip it as recovery does, or deleting the block would bring their messages back.
                    off = Resync(data, off + 1, 0);
                    if (off < 0) break;
                    continue;
                }
                // The removed message's block is found by sequence range (the index keeps no location for
                // deleted entries); a tombstone below the persisted floor is covered by the floor record.
                if (rec.Type == Format.TypeTombstone && rec.Seq >= _persistedFloor && rec.Seq <= Last && BlockFor(rec.Seq) is { } target && target != b)
                {
                    if (pass == 0) carry++;
                    else AppendControl(Format.TypeTombstone, rec.Seq);
                }
                off += rec.Length;
            }
            if (pass == 0 && (long)carry * Format.RecordOverhead > _opt.BlockSize / 2) return false;
        }
        return true;
    }

    /// <summary>Under the store lock: the block leaves the store's lists and its space and cache are released (its file may still be there).</summary>
    private void DetachBlockLocked(MsgBlock b)
    {
        CompleteWriteBehindOf(b); // before its image goes back to the pool
        _blocks.Remove(b);
        _byId.Remove(b.Id);
        ForgetReadBlock(b.Id);
        _cached.Remove(b);
        if (b.Cache is not null) ReturnBuffer(b.Cache);
        b.Cache = null;
        _diskBytes -= Math.Max(b.Reserved, b.Flushed);
    }

    /// <summary>
    /// Unlinks a deleted block's file and its index snapshot (with or without the store lock); true if the block's file
    /// was unlinked (the block directory then needs an fsync). A block that cannot be unlinked is not fatal: its messages
    /// are all covered by durable floors and tombstones, and it is retried at the next open. A snapshot left behind is
    /// an orphan, removed at open. <paramref name="error"/>: what failed, for LastError.
    /// </summary>
    private bool DeleteBlockFiles(MsgBlock b, bool hadSnapshot, out string? error)
    {
        error = null;
        try
        {
            _fs.DeleteFile(b.Path);
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException)
        {
            error = $"cannot delete {b.Path}: {e.Message}";
            return false;
        }
        if (!hadSnapshot) return true;
        try
        {
            _fs.DeleteFile(SnapshotPath(b.Id));
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException)
        {
            error = $"cannot delete index snapshot of {b.Path}: {e.Message}";
        }
        return true;
    }

    /// <summary>
    /// The existing block that holds (or held) <paramref name="seq"/>, or null if that block is gone: the last
    /// one whose start sequence is not above it (a block starts at the stream's next sequence when it is
    /// created, so start sequences partition the sequence space in block order).
    /// </summary>
    private MsgBlock? BlockFor(ulong seq)
    {
        int lo = 0, hi = _blocks.Count - 1, found = -1;
        while (lo <= hi)
        {
            int mid = (lo + hi) >>> 1;
            if (_blocks[mid].StartSeq <= seq) { found = mid; lo = mid + 1; }
            else hi = mid - 1;
        }
        // Its messages end at LastMsgSeq; a sequence above it was in a later block that no longer exists.
        return found < 0 || seq > _blocks[found].LastMsgSeq ? null : _blocks[found];
    }

    protected override StoreStatus OnPurgedAll(ulong nextSeq)
    {
        // A new newest block whose header floor says "everything below nextSeq is gone" is made durable
        // first (file and directory, checked); only then are the old blocks deleted. A crash or power cut in
        // between still recovers the purge.
        var old = _blocks.ToArray();
        var oldTail = _tail;
        _tail = null!;
        _cached.Clear();
        var st = NewTailBlock(nextSeq);
        if (st != StoreStatus.Ok)
        {
            _tail = oldTail;
            return st;
        }
        st = FlushTailLocked();
        if (st == StoreStatus.Ok) st = SyncAllLocked();
        if (st != StoreStatus.Ok) return st;
        foreach (var b in old)
        {
            b.Live = 0;
            b.Tombstones = 0;
            b.Doomed = true;
            RemoveBlock(b); // a block the deleter is working on goes with it
        }
        _persistedFloor = nextSeq;
        return StoreStatus.Ok;
    }

    protected override StoreStatus OnSkipped(ulong last)
    {
        AppendControl(Format.TypeSkip, last);
        return OnOperationDone(false);
    }

    protected override StoreStatus OnOperationDone(bool floorChanged)
    {
        if (_recovering) return StoreStatus.Ok;
        if (Failure is not null)
        {
            LastError = Failure;
            return StoreStatus.IoError;
        }
        if (_persistedFloor < First) WriteFloorRecord();
        // Explicit operations reach the OS at once (a process crash keeps them); fsync per policy.
        var st = FlushTailLocked();
        if (st == StoreStatus.Ok)
        {
            CompactEmptyBlocks();
            // An explicit operation returns with its emptied blocks gone (it may wait on the disk: it is no append).
            DeleteDoomedLocked();
        }
        if (st == StoreStatus.Ok && _sync == SyncPolicy.Always) st = SyncAllLocked();
        if (st == StoreStatus.Ok && Failure is not null) st = StoreStatus.IoError;
        return st;
    }
}
