using NatsBroker.Contracts;
using NatsBroker.Storage.Internal;

namespace NatsBroker.Storage.File;

/// <summary>The write path: the newest block's in-memory image, record encoding, block roll and the write to the OS.</summary>
internal sealed partial class FileStore
{
    private readonly Stack<byte[]> _pool = new();
    /// <summary>Acknowledged (periodic/async) bytes could not be written because of the disk limit; retried.</summary>
    private bool _writeRefused;

    private byte[] RentBuffer(int size)
    {
        if (size <= _opt.BlockSize && _pool.Count > 0) return _pool.Pop();
        return GC.AllocateUninitializedArray<byte>(Math.Max(size, _opt.BlockSize));
    }

    private void ReturnBuffer(byte[] b)
    {
        if (b.Length == _opt.BlockSize && _pool.Count < 4) _pool.Push(b);
    }

    /// <summary>
    /// Creates the next block and makes it the newest. Each block reserves its full size up front (fallocate), so
    /// a full disk shows up here, before anything is written, as a refusal (DiskFull) that is not fatal.
    /// </summary>
    private StoreStatus NewTailBlock(ulong startSeq)
    {
        // The old tail's image may be released below (KeepCached): its write in flight ends first.
        var wst = CompleteWriteBehindLocked();
        if (wst != StoreStatus.Ok) return wst;
        if (_opt.DiskLimitBytes > 0 && _diskBytes + _opt.BlockSize > _opt.DiskLimitBytes && !_recovering)
        {
            // Emptied blocks still count until the deleter (FileStore.BlockDeletion.cs) got to them: rather than
            // refuse the write, those without tombstones are deleted now, under the lock, as before the deleter
            // existed (those with tombstones would carry them into the block being rolled: not from here).
            for (int i = 0; i < _blocks.Count; i++)
            {
                var empty = _blocks[i];
                if (!empty.Doomed || empty.Claimed || empty.Tombstones > 0 || empty == _tail) continue;
                RemoveBlock(empty);
                if (!_byId.ContainsKey(empty.Id)) i--;
            }
        }
        if (_opt.DiskLimitBytes > 0 && _diskBytes + _opt.BlockSize > _opt.DiskLimitBytes)
        {
            LastError = $"cannot create a new block: No space left on device (disk_limit_bytes {_opt.DiskLimitBytes} reached)";
            return StoreStatus.DiskFull;
        }
        uint id = _maxBlockId + 1;
        var path = Path.Combine(_blockDir, Format.BlockName(id));
        // The spare prepared in the background (FileStore.SpareBlock.cs) when there is one: a rename, no create or
        // fallocate under the lock.
        IStoreFile? file = _recovering ? null : TakeSpare(path);
        try
        {
            file ??= _fs.OpenFile(path, create: true, _opt.BlockSize);
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException)
        {
            LastError = $"cannot create a new block: {e.Message}";
            // Nothing was written; an empty file left behind is removed at the next open (incomplete header).
            try { if (_fs.FileExists(path)) _fs.DeleteFile(path); }
            catch (Exception e2) when (e2 is IOException or UnauthorizedAccessException) { _ = e2; }
            _maxBlockId = id;
            return StatusOf(e);
        }
        _maxBlockId = id;
        _blockDirState.Touch();
        var cache = RentBuffer(_opt.BlockSize);
        ulong floor = Msgs > 0 ? First : startSeq;
        Format.WriteBlockHeader(cache, id, startSeq, floor);
        var b = new MsgBlock { Id = id, Path = path, File = file, StartSeq = startSeq, Floor = floor, Size = Format.BlockHeaderSize, Cache = cache, Reserved = _opt.BlockSize };
        AddBlock(b);
        _diskBytes += b.Reserved;
        if (_tail is not null && _tail != b) KeepCached(_tail);
        _tail = b;
        ArmFlush();
        return StoreStatus.Ok;
    }

    /// <summary>Ensures the tail can take <paramref name="len"/> more bytes, rolling to a new block if needed.</summary>
    private StoreStatus EnsureTailRoom(int len, ulong nextSeq)
    {
        var t = _tail;
        if (t.Size + len <= t.Cache!.Length) return StoreStatus.Ok;
        if (t.Size > Format.BlockHeaderSize)
        {
            // The finished block is written now; its fsync is owed (WriteGen > SyncedGen) and done by the next
            // group commit, sync tick or explicit operation, which fsync every block touched since the last sync.
            var st = FlushTailLocked();
            if (st != StoreStatus.Ok) return st;
            st = NewTailBlock(nextSeq);
            if (st != StoreStatus.Ok) return st;
            _fillsBlocks = true;
            _emptyBlocks = true;
            CompactEmptyBlocks();
            t = _tail; // carried tombstones may have rolled the newest block again
        }
        if (t.Size + len > t.Cache!.Length)
        {
            // The image is replaced and its array pooled: no write may still be reading it.
            var wst = CompleteWriteBehindLocked();
            if (wst != StoreStatus.Ok) return wst;
            var bigger = new byte[t.Size + len];
            t.Cache.AsSpan(0, (int)t.Size).CopyTo(bigger);
            ReturnBuffer(t.Cache);
            t.Cache = bigger;
        }
        return StoreStatus.Ok;
    }

    protected override StoreStatus WriteMessage(ulong seq, long ts, long ttl, ReadOnlySpan<byte> subject, ReadOnlySpan<byte> headers, ReadOnlySpan<byte> payload, ref IndexEntry entry)
    {
        int len = Format.RecordLength(subject.Length, headers.Length, payload.Length);
        if (len > Format.MaxRecord) return StoreStatus.MessageTooLarge;
        if (_writeRefused)
        {
            // Earlier acknowledged bytes are still buffered: they must reach the disk before anything new is accepted.
            var fst = FlushTailLocked();
            if (fst != StoreStatus.Ok) return fst;
        }
        var st = EnsureTailRoom(len, seq);
        if (st != StoreStatus.Ok) return st;
        var t = _tail;
        int off = (int)t.Size;
        Format.WriteRecord(t.Cache.AsSpan(off, len), Format.TypeMessage, seq, ts, ttl, subject, headers, payload, _batchContinues ? Format.FlagBatchContinues : (byte)0);
        t.Size += len;
        // Sync-always appends are written and fsynced by the group-commit leader (WaitDurable), outside the lock;
        // periodic ones are written here every CoalesceBytes, async-persist ones handed to the write-behind
        // (FileStore.WriteBehind.cs). A batch is written or handed over whole, at its end (EndBatch).
        if (_sync != SyncPolicy.Always && !_inBatch && t.Size - t.Flushed >= _opt.CoalesceBytes)
        {
            st = WriteCoalescedLocked(t);
            if (st != StoreStatus.Ok)
            {
                // Not acknowledged: forget the record.
                if (t.Flushed <= off) t.Size = off;
                return st;
            }
        }
        t.Live++;
        t.LastMsgSeq = seq;
        MaybePrepareSpare(t);
        entry.Location = ((long)t.Id << 32) | (uint)off;
        entry.Aux = len;
        if (_sync == SyncPolicy.Always) _ticket = ++_written;
        else if (t.Flushed < t.Size) ArmFlush();
        return StoreStatus.Ok;
    }

    // ---- atomic batches (IStreamStore.AppendBatch) ----
    // A batch is one run of message records in ONE block: every record but the last carries FlagBatchContinues,
    // so recovery can tell a complete batch from one cut short by a crash (FileStore.Recovery.cs). The whole
    // batch's room is reserved first (a new block, or a bigger image of the newest block), and nothing else is
    // written between its records (IndexedStore defers expiry and limit removals until after the batch).
    private bool _inBatch;
    private bool _batchContinues;

    protected override StoreStatus BeginBatch(IAppendBatch batch)
    {
        long total = 0;
        for (int i = 0; i < batch.Count; i++)
        {
            int len = Format.RecordLength(batch.Subject(i).Length, batch.Headers(i).Length, batch.Payload(i).Length);
            if (len > Format.MaxRecord) return StoreStatus.MessageTooLarge;
            total += len;
        }
        if (total > int.MaxValue / 2) return StoreStatus.MessageTooLarge;
        if (_writeRefused)
        {
            var fst = FlushTailLocked();
            if (fst != StoreStatus.Ok) return fst;
        }
        var st = EnsureTailRoom((int)total, Last + 1);
        if (st != StoreStatus.Ok) return st;
        _inBatch = true;
        return StoreStatus.Ok;
    }

    protected override void MarkBatchRecord(bool more) => _batchContinues = more;

    protected override void EndBatch()
    {
        _inBatch = false;
        _batchContinues = false;
        var t = _tail;
        if (_sync != SyncPolicy.Always && t.Size - t.Flushed >= _opt.CoalesceBytes && WriteCoalescedLocked(t) != StoreStatus.Ok && Failure is null)
            ArmFlush(); // refused by the disk limit: retried by the flush timer like any buffered append
    }

    private void AppendControl(byte type, ulong seq)
    {
        int len = Format.RecordOverhead;
        if (EnsureTailRoom(len, Last + 1) != StoreStatus.Ok)
        {
            // The removal already happened in memory; without its record a restart would undo it, so the store
            // cannot go on accepting (or acknowledging) operations: fail-stop.
            if (Failure is null) FailStop($"file store '{Config.StreamName}': cannot write a {(type == Format.TypeTombstone ? "tombstone" : "control record")} for sequence {seq} ({LastError}); the store is read-only until it is reopened");
            return;
        }
        var t = _tail;
        Format.WriteRecord(t.Cache.AsSpan((int)t.Size, len), type, seq, 0, 0, default, default, default);
        t.Size += len;
        if (type == Format.TypeTombstone) t.Tombstones++;
        ArmFlush();
    }

    private void WriteFloorRecord()
    {
        ulong f = Msgs > 0 ? First : Last + 1;
        AppendControl(Format.TypeFloor, f);
        _persistedFloor = f;
    }

    /// <summary>
    /// Hands the tail's pending bytes to the OS. A write error is fatal (fail-stop); the disk limit is checked
    /// before writing and only refuses (the bytes stay buffered and are retried).
    /// </summary>
    private StoreStatus FlushTailLocked()
    {
        // Every caller relies on the bytes being in the file when this returns: the write in flight ends first.
        var wst = CompleteWriteBehindLocked();
        if (wst != StoreStatus.Ok) return wst;
        if (Failure is not null)
        {
            LastError = Failure;
            return StoreStatus.IoError;
        }
        var t = _tail;
        if (t is null || t.Cache is null || t.Flushed >= t.Size) return StoreStatus.Ok;
        long n = t.Size - t.Flushed;
        long grow = Math.Max(0, t.Size - Math.Max(t.Reserved, t.Flushed));
        if (grow > 0 && _opt.DiskLimitBytes > 0 && _diskBytes + grow > _opt.DiskLimitBytes)
        {
            _writeRefused = true;
            LastError = $"write to {t.Path} refused: No space left on device (disk_limit_bytes {_opt.DiskLimitBytes} reached)";
            return StoreStatus.DiskFull;
        }
        try
        {
            t.WriteGen++;
            t.File.Write(t.Cache.AsSpan((int)t.Flushed, (int)n), t.Flushed);
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException or ObjectDisposedException)
        {
            return Fail($"write of {n} bytes to {t.Path}", e);
        }
        _diskBytes += grow;
        _bytesSinceImage += n;
        t.Flushed = t.Size;
        ArmSync();
        if (_writeRefused)
        {
            _writeRefused = false;
            LastError = null;
        }
        return StoreStatus.Ok;
    }
}
