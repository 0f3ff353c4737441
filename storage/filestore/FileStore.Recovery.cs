using System.Buffers.Binary;
using System.Globalization;
using NatsBroker.Contracts;
using NatsBroker.Storage.Internal;

namespace NatsBroker.Storage.File;

/// <summary>
/// Open-time recovery (FORMAT.md, "Recovery at open"): from the index image when it is current
/// (FileStore.FastOpen.cs), otherwise every block in id order, each from its index snapshot or by a scan.
/// </summary>
internal sealed partial class FileStore
{
    private (StoreStatus, string?) RecoverBlocks()
    {
        var ids = new List<uint>();
        foreach (var name in _fs.ListFiles(_blockDir))
        {
            if (name == Format.SpareBlockName)
            {
                // A spare block prepared before a crash (FileStore.SpareBlock.cs): never written, never named as
                // a block, so it holds nothing. Its delete is made durable with recovery's directory fsync.
                _fs.DeleteFile(Path.Combine(_blockDir, name));
                _blockDirState.Touch();
            }
            else if (name.EndsWith(".blk", StringComparison.Ordinal) && uint.TryParse(name.AsSpan(0, name.Length - 4), NumberStyles.None, CultureInfo.InvariantCulture, out uint id))
                ids.Add(id);
            else
                Report($"ignored unexpected file '{name}' in {Format.BlockDir}/");
        }
        ids.Sort();
        if (ids.Count > 0) _maxBlockId = ids[^1];
        ListSnapshots(ids);
        // The newest block is always scanned (it is appended to); a snapshot of it would go stale.
        if (ids.Count > 0 && _snapshotFiles!.Remove(ids[^1], out var tailSnap))
        {
            try { _fs.DeleteFile(tailSnap); }
            catch (Exception e) when (e is IOException or UnauthorizedAccessException) { Report($"cannot remove index snapshot {tailSnap}: {e.Message}"); }
        }

        _recovering = true;
        ulong last = 0, floor = 0;
        lock (Sync)
        {
            _imageOnDisk = _fs.FileExists(ImagePath);
            // Fast open: the index image of the last checkpoint, if the blocks it describes are unchanged; the
            // records written after it are replayed (FileStore.FastOpen.cs).
            var fast = ImageOpen.NotUsed;
            if (_ignoreImage) DropImage();
            else fast = TryOpenFromImage(ids, ref last, ref floor);
            if (fast == ImageOpen.Restart)
            {
                _restartWithoutImage = true;
                return (StoreStatus.Corrupt, "index image does not match the blocks; open again without it");
            }
            OpenedFromImage = fast == ImageOpen.Opened;
            if (fast == ImageOpen.NotUsed)
            {
                for (int i = 0; i < ids.Count; i++)
                {
                    if (i < ids.Count - 1 && TryRecoverFromSnapshot(ids[i], Path.Combine(_blockDir, Format.BlockName(ids[i])), ref last, ref floor)) continue;
                    var (st, err) = RecoverBlock(ids[i], i == ids.Count - 1, ref last, ref floor);
                    if (st != StoreStatus.Ok) return (st, err);
                }
                RecoverLast(last, floor);
            }
            _snapshotFiles = null;
            _persistedFloor = First;
            if (_blocks.Count == 0 || _tail is null || _tail.Cache is null)
            {
                var st = NewTailBlock(Last + 1);
                if (st != StoreStatus.Ok) return (st, LastError);
            }
            _recovering = false;
            // Blocks emptied by tombstones/floors (not the newest) are compacted away now.
            foreach (var b in _blocks.ToArray())
            {
                if (b.Live == 0 && b != _tail) RemoveBlock(b);
            }
            EnforceAllLimitsLocked();
            DeleteDoomedLocked(); // blocks the limits emptied: the open returns with them gone
            var fst = FlushTailLocked();
            // Whatever recovery changed (truncated tail, new block, carried tombstones) is made durable before use.
            if (fst == StoreStatus.Ok) fst = SyncAllLocked();
            if (fst != StoreStatus.Ok) return (fst, Failure ?? LastError);
        }
        return (StoreStatus.Ok, null);
    }

    private (StoreStatus, string?) RecoverBlock(uint id, bool isLast, ref ulong last, ref ulong floor)
    {
        var path = Path.Combine(_blockDir, Format.BlockName(id));
        var file = _fs.OpenFile(path, create: false);
        long len = file.Length;
        if (len > int.MaxValue - 64)
        {
            file.Dispose();
            return (StoreStatus.Corrupt, $"block {Format.BlockName(id)} is too large ({len} bytes)");
        }
        var data = RentBuffer((int)Math.Max(len, _opt.BlockSize));
        int got = file.Read(data.AsSpan(0, (int)len), 0);
        if (got < len) len = got;
        var span = data.AsSpan(0, (int)len);
        string bn = Format.BlockName(id);
        if (len < Format.BlockHeaderSize || !span[..4].SequenceEqual(Format.BlockMagic))
        {
            file.Dispose();
            ReturnBuffer(data);
            if (isLast && (len < Format.BlockHeaderSize || span.IndexOfAnyExcept((byte)0) < 0))
            {
                // A crash right after creating the newest block: nothing in it was ever acknowledged
                // (an acknowledgement needs the block's header written and fsynced).
                Report($"block {bn}: incomplete header ({len} bytes), removed");
                _fs.DeleteFile(path);
                _blockDirState.Touch();
                return (StoreStatus.Ok, null);
            }
            Report($"block {bn}: bad header magic, block skipped (left on disk)");
            return (StoreStatus.Ok, null);
        }
        ushort ver = BinaryPrimitives.ReadUInt16LittleEndian(span[4..]);
        if (ver > Format.Version)
        {
            file.Dispose();
            ReturnBuffer(data);
            return (StoreStatus.UnsupportedVersion, $"block {bn} has format version {ver}; this engine reads versions up to {Format.Version}");
        }
        if (Crc32C.Compute(span[..36]) != BinaryPrimitives.ReadUInt32LittleEndian(span[36..]))
        {
            Report($"block {bn}: header checksum mismatch, block skipped (left on disk)");
            file.Dispose();
            ReturnBuffer(data);
            return (StoreStatus.Ok, null);
        }
        var blk = new MsgBlock
        {
            Id = id,
            Path = path,
            File = file,
            StartSeq = BinaryPrimitives.ReadUInt64LittleEndian(span[16..]),
            Floor = BinaryPrimitives.ReadUInt64LittleEndian(span[24..]),
            Size = len,
            Flushed = len,
            Cache = data,
        };
        AddBlock(blk);
        if (blk.StartSeq > 0 && blk.StartSeq - 1 > last) last = blk.StartSeq - 1;
        if (blk.Floor > floor) floor = blk.Floor;

        ScanRecords(blk, file, span, Format.BlockHeaderSize, isLast, ref last, ref floor);
        _diskBytes += blk.Size;
        blk.Reserved = isLast ? Math.Max(_opt.BlockSize, blk.Size) : blk.Size;
        _diskBytes += blk.Reserved - blk.Size;
        if (isLast)
        {
            _tail = blk;
        }
        else
        {
            blk.Cache = null;
            ReturnBuffer(data);
        }
        return (StoreStatus.Ok, null);
    }

    /// <summary>
    /// Applies the records of <paramref name="span"/> (a block's bytes) from offset <paramref name="from"/> (a record
    /// boundary: the end of the header, or where an index image's checkpoint stopped) to the indexes, handling
    /// atomic batches, torn tails (the newest block is truncated) and damaged ranges (reported, resynchronised).
    /// </summary>
    private void ScanRecords(MsgBlock blk, IStoreFile file, ReadOnlySpan<byte> span, int from, bool isLast, ref ulong last, ref ulong floor)
    {
        int off = from;
        long len = span.Length;
        string bn = Format.BlockName(blk.Id);
        ulong maxMsgSeq = Last;
        // Start of a run of atomic-batch records still waiting for the batch's last message (-1: none). The run
        // is applied when that message is read; a run cut short (crash mid-batch) is never applied.
        int batchFrom = -1;
        while (off < len)
        {
            if (Format.TryRecord(span[off..], out var rec))
            {
                if (rec.BatchContinues && rec.Type == Format.TypeMessage)
                {
                    if (batchFrom < 0) batchFrom = off;
                    off += rec.Length;
                    continue;
                }
                if (batchFrom >= 0)
                {
                    for (int p = batchFrom; p < off;)
                    {
                        var br = new Format.Rec(span[p..]);
                        ApplyRecord(blk, p, br.Type, br.Seq, br.Timestamp, br.Ttl, br.Length, br.HeadersLength, span.Slice(p + Format.RecordHeaderSize, br.SubjectLength), ref last, ref floor, ref maxMsgSeq);
                        p += br.Length;
                    }
                    batchFrom = -1;
                }
                ApplyRecord(blk, off, rec.Type, rec.Seq, rec.Timestamp, rec.Ttl, rec.Length, rec.HeadersLength, span.Slice(off + Format.RecordHeaderSize, rec.SubjectLength), ref last, ref floor, ref maxMsgSeq);
                off += rec.Length;
                continue;
            }
            if (batchFrom >= 0)
            {
                Report($"block {bn}: atomic batch from offset {batchFrom} is cut short by damaged data at offset {off}; its messages are discarded");
                if (isLast) off = batchFrom; // truncated below with the torn tail
                batchFrom = -1;
                if (isLast)
                {
                    TruncateTail(file, blk, bn, off, len);
                    break;
                }
            }
            int next = Resync(span, off + 1, maxMsgSeq);
            if (next < 0)
            {
                if (isLast)
                {
                    TruncateTail(file, blk, bn, off, len);
                }
                else
                {
                    Report($"block {bn}: corrupt or truncated data from offset {off} to the end ({len - off} bytes); messages after sequence {maxMsgSeq} in this block are lost");
                }
                break;
            }
            var nr = new Format.Rec(span[next..]);
            Report($"block {bn}: corrupt data at offset {off}..{next} ({next - off} bytes, checksum mismatch); sequences {maxMsgSeq + 1}..{nr.Seq - 1} may be lost");
            off = next;
        }
        if (batchFrom >= 0)
        {
            // The block ends inside an atomic batch: a crash before its last record reached the disk. None of it
            // was acknowledged (the PubAck follows the whole batch), so none of it is kept.
            Report($"block {bn}: incomplete atomic batch at offset {batchFrom} ({len - batchFrom} bytes) discarded");
            if (isLast) TruncateTail(file, blk, bn, batchFrom, len);
        }
    }

    private void TruncateTail(IStoreFile file, MsgBlock blk, string bn, int off, long len)
    {
        Report($"block {bn}: torn tail at offset {off} ({len - off} bytes) truncated");
        file.SetLength(off);
        blk.Size = blk.Flushed = off;
        blk.WriteGen++; // the truncation is fsynced before the store is used
    }

    /// <summary>
    /// Applies one record (read from the block, or from its index snapshot) to the indexes. <paramref name="length"/>
    /// is the whole record's, <paramref name="headersLength"/> its headers' (with the subject's, they give the
    /// message's <see cref="StoredSize"/>).
    /// </summary>
    private void ApplyRecord(MsgBlock blk, int off, byte type, ulong seq, long timestamp, long ttl, int length, int headersLength, ReadOnlySpan<byte> subject, ref ulong last, ref ulong floor, ref ulong maxMsgSeq)
    {
        var rec = (Type: type, Seq: seq, Timestamp: timestamp, Ttl: ttl, Length: length);
        switch (rec.Type)
        {
            case Format.TypeMessage:
                if (rec.Seq <= maxMsgSeq || rec.Seq == 0)
                {
                    Report($"block {Format.BlockName(blk.Id)}: message sequence {rec.Seq} at offset {off} is not above {maxMsgSeq}; ignored");
                    return;
                }
                maxMsgSeq = rec.Seq;
                int payloadLength = rec.Length - Format.RecordOverhead - subject.Length - headersLength;
                ref var e = ref RecoverAdd(rec.Seq, subject, rec.Timestamp, (int)StoredSize(subject.Length, headersLength, payloadLength));
                e.Location = ((long)blk.Id << 32) | (uint)off;
                e.Aux = rec.Length;
                if (rec.Ttl > 0)
                {
                    e.Flags |= IndexEntry.FlagTtl;
                    TrackTtl(rec.Seq, rec.Timestamp + rec.Ttl);
                }
                blk.Live++;
                blk.LastMsgSeq = rec.Seq;
                break;
            case Format.TypeErased:
                if (rec.Seq > maxMsgSeq) maxMsgSeq = rec.Seq;
                if (rec.Seq > last) last = rec.Seq;
                break;
            case Format.TypeTombstone:
                blk.Tombstones++;
                RemoveLocked(rec.Seq, RemoveKind.Lazy);
                // A tombstone can outlive its message: a power cut that kept a later page (or block) but not the
                // one holding the message. Its sequence must not be handed out again: the old tombstone, carried
                // forward when its block is deleted, would land after the new message and delete it.
                if (rec.Seq > last) last = rec.Seq;
                break;
            case Format.TypeFloor:
                if (rec.Seq > floor) floor = rec.Seq;
                if (rec.Seq > 0 && rec.Seq - 1 > last) last = rec.Seq - 1;
                break;
            case Format.TypeSkip:
                if (rec.Seq > last) last = rec.Seq;
                break;
        }
    }

    /// <summary>Finds the next offset holding a valid record with a plausible sequence, or -1.</summary>
    private static int Resync(ReadOnlySpan<byte> span, int from, ulong afterSeq)
    {
        for (int p = from; p + Format.RecordOverhead <= span.Length; p++)
        {
            uint len = BinaryPrimitives.ReadUInt32LittleEndian(span[p..]);
            if (len < Format.RecordOverhead || len > span.Length - p) continue;
            byte t = span[p + 4];
            if (t is < Format.TypeMessage or > Format.TypeErased) continue;
            if (t == Format.TypeMessage && BinaryPrimitives.ReadUInt64LittleEndian(span[(p + 8)..]) <= afterSeq) continue;
            if (Format.TryRecord(span[p..], out _)) return p;
        }
        return -1;
    }

    private void AddBlock(MsgBlock b)
    {
        _blocks.Add(b);
        _byId[b.Id] = b;
        ForgetReadBlock(b.Id);
    }
}
