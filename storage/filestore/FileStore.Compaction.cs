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
            if (b != _tail) RemoveBlock(b);
            else _emptyBlocks = true;
        }
    }

    private void EraseInPlace(MsgBlock b, int off, int len, ulong seq)
    {
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
    /// Deletes every older block without a live message, e.g. blocks that only ever held tombstones, once
    /// the tombstones that still matter are carried forward. Runs at block roll and after explicit operations.
    /// </summary>
    private void CompactEmptyBlocks()
    {
        if (_compacting || _recovering || !_emptyBlocks) return;
        _compacting = true;
        _emptyBlocks = false;
        try
        {
            for (int i = 0; i < _blocks.Count; i++)
            {
                var b = _blocks[i];
                if (b.Live == 0 && b != _tail)
                {
                    RemoveBlock(b);
                    if (!_byId.ContainsKey(b.Id)) i--;
                }
            }
        }
        finally
        {
            _compacting = false;
        }
    }

    /// <summary>
    /// Deletes a block with no live message. Its tombstones that still matter are appended to the newest block
    /// and made durable (checked fsync of every touched block and the block directory) before the file goes,
    /// in every sync mode: a delete must never be undone by compaction, even by a power cut.
    /// </summary>
    private void RemoveBlock(MsgBlock b)
    {
        if (b == _tail || Failure is not null) return;
        if (b.Tombstones > 0)
        {
            var data = b.Cache;
            int size = (int)b.Size;
            if (data is null)
            {
                data = new byte[size];
                try
                {
                    if (b.File.Read(data, 0) < size) return;
                }
                catch (Exception e) when (e is IOException or UnauthorizedAccessException or ObjectDisposedException)
                {
                    return; // keep the block: its tombstones cannot be carried
                }
            }
            // Carrying more than half a block of tombstones could roll the newest block, whose tombstone-only
            // predecessor would be carried again, and so on forever (a large purge by subject with small blocks
            // did loop). Such a block is kept instead, until enough of the blocks its tombstones refer to are gone.
            int carry = 0;
            for (int pass = 0; pass < 2; pass++)
            {
                int off = Format.BlockHeaderSize;
                while (off < size)
                {
                    if (!Format.TryRecord(data.AsSpan(off, size - off), out var rec))
                    {
                        // Damaged bytes with good records after them (recovery resynchronised past them and the
                        // block was appended to afterwards: a power cut that wrote back a later page but not an
                        // earlier one, or a bad sector). The tombstones after the damage are as real as the others:
                        // skip it as recovery does, or deleting the block would bring their messages back.
                        off = Resync(data.AsSpan(0, size), off + 1, 0);
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
                if (pass == 0 && (long)carry * Format.RecordOverhead > _opt.BlockSize / 2) return;
            }
            // Keep the block unless its tombstones (and the floor record) are durable elsewhere.
            if (FlushTailLocked() != StoreStatus.Ok || SyncAllLocked() != StoreStatus.Ok) return;
        }
        _blocks.Remove(b);
        _byId.Remove(b.Id);
        _cached.Remove(b);
        if (b.Cache is not null) ReturnBuffer(b.Cache);
        b.Cache = null;
        _diskBytes -= Math.Max(b.Reserved, b.Flushed);
        b.Removed = true;
        b.File.Dispose();
        try
        {
            _fs.DeleteFile(b.Path);
            _blockDirState.Touch();
            DropSnapshot(b);
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException)
        {
            // Not fatal: the block's messages are all covered by durable floors/tombstones; it is retried at the next open.
            LastError = $"cannot delete {b.Path}: {e.Message}";
        }
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
            RemoveBlock(b);
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
        if (st == StoreStatus.Ok) CompactEmptyBlocks();
        if (st == StoreStatus.Ok && _sync == SyncPolicy.Always) st = SyncAllLocked();
        if (st == StoreStatus.Ok && Failure is not null) st = StoreStatus.IoError;
        return st;
    }
}
