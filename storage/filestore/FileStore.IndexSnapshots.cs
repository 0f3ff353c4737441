using System.Buffers;
using System.Buffers.Binary;
using System.Globalization;
using NatsBroker.Contracts;

namespace NatsBroker.Storage.File;

/// <summary>
/// Per-block index snapshots (FORMAT.md, "Index snapshots"): for a sealed block (not the newest), <c>idx/ID.idx</c>
/// lists the index-relevant fields of every record in the block (type, offset, length, sequence, timestamp, ttl,
/// headers length, subject; no headers or payload). Open replays a valid snapshot through the same code as a block scan, so it
/// reads the snapshot instead of the block; the newest block, and any block without a valid snapshot, is scanned.
/// A snapshot is written only for a block whose bytes are all durable and that parses cleanly to its end, at the
/// flush or sync tick that finds one (a checkpoint) and at clean close. It is ignored when stale (block length
/// differs, or its header does not match), corrupt (checksum), of another version or of another block. Open
/// does not CRC-check the bytes of a block restored from its snapshot: damage there is found when the record is
/// read (every read of a record from disk re-checks its CRC and returns Corrupt). Sealed blocks change only by Erase, which
/// durably deletes the block's snapshot before it rewrites the record, and by deletion, which deletes it too.
/// </summary>
internal sealed partial class FileStore
{
    private const int SnapshotHeaderSize = 44;
    private const int SnapshotEntryHeader = 39;
    private static ReadOnlySpan<byte> SnapshotMagic => "NBIX"u8;
    /// <summary>
    /// Version 2 adds each message's headers length, which its stored size needs (FileStore.StoredSize: a message
    /// with headers counts 4 bytes more). A version 1 snapshot is ignored without a report (the block is scanned and
    /// gets a version 2 snapshot at the next checkpoint).
    /// </summary>
    private const ushort SnapshotVersion = 2;
    private const ushort SnapshotVersionWithoutHeaders = 1;

    /// <summary>Ids of the blocks whose snapshot is on disk and current (under the store lock).</summary>
    private readonly HashSet<uint> _snapshotted = [];
    private string IndexDir => Path.Combine(_dir, Format.IndexDir);
    private static string SnapshotName(uint id) => id.ToString("D10", CultureInfo.InvariantCulture) + ".idx";
    private string SnapshotPath(uint id) => Path.Combine(IndexDir, SnapshotName(id));

    /// <summary>Valid-looking snapshot files found at open (block id → path), consumed by the block scan.</summary>
    private Dictionary<uint, string>? _snapshotFiles;

    /// <summary>Lists idx/ at open; removes leftovers (.tmp) and snapshots of blocks that no longer exist.</summary>
    private void ListSnapshots(List<uint> blockIds)
    {
        _snapshotFiles = [];
        if (!_fs.DirectoryExists(IndexDir)) return;
        var blocks = new HashSet<uint>(blockIds);
        foreach (var name in _fs.ListFiles(IndexDir))
        {
            var path = Path.Combine(IndexDir, name);
            if (name == IndexImage.FileName) continue; // the index image (FileStore.FastOpen.cs) checks itself
            if (name.EndsWith(".idx", StringComparison.Ordinal) && uint.TryParse(name.AsSpan(0, name.Length - 4), NumberStyles.None, CultureInfo.InvariantCulture, out uint id) && blocks.Contains(id))
            {
                _snapshotFiles[id] = path;
                continue;
            }
            try { _fs.DeleteFile(path); }
            catch (Exception e) when (e is IOException or UnauthorizedAccessException) { Report($"cannot remove stale index snapshot {path}: {e.Message}"); }
        }
    }

    /// <summary>
    /// Restores a sealed block from its snapshot, if it has a valid one; false means "scan the block".
    /// Reads the snapshot file and the block's 40-byte header, nothing else of the block.
    /// </summary>
    private bool TryRecoverFromSnapshot(uint id, string path, ref ulong last, ref ulong floor)
    {
        if (_snapshotFiles is null || !_snapshotFiles.TryGetValue(id, out var snapPath)) return false;
        byte[] snap;
        try
        {
            snap = _fs.ReadAllBytes(snapPath);
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException)
        {
            Report($"index snapshot {snapPath} unreadable ({e.Message}); block scanned");
            return false;
        }
        var s = snap.AsSpan();
        if (s.Length >= SnapshotHeaderSize && s[..4].SequenceEqual(SnapshotMagic)
            && BinaryPrimitives.ReadUInt16LittleEndian(s[4..]) == SnapshotVersionWithoutHeaders)
            return false; // written before sizes needed the headers length: scanned, replaced at the next checkpoint
        if (s.Length < SnapshotHeaderSize + 4 || !s[..4].SequenceEqual(SnapshotMagic)
            || BinaryPrimitives.ReadUInt16LittleEndian(s[4..]) != SnapshotVersion
            || BinaryPrimitives.ReadUInt32LittleEndian(s[8..]) != id
            || Crc32C.Compute(s[..^4]) != BinaryPrimitives.ReadUInt32LittleEndian(s[^4..]))
        {
            Report($"index snapshot {SnapshotName(id)} is corrupt or of another version; block scanned");
            return false;
        }
        long blockLen = BinaryPrimitives.ReadInt64LittleEndian(s[16..]);
        var file = _fs.OpenFile(path, create: false);
        // The block's header (40 bytes) is still read: a newer format version must be refused, and a header that
        // does not match the snapshot (another block under a reused id) means the snapshot is not this block's.
        Span<byte> header = stackalloc byte[Format.BlockHeaderSize];
        bool headerOk = file.Length == blockLen && blockLen >= Format.BlockHeaderSize && file.Read(header, 0) == header.Length
            && header[..4].SequenceEqual(Format.BlockMagic)
            && Crc32C.Compute(header[..36]) == BinaryPrimitives.ReadUInt32LittleEndian(header[36..]);
        if (headerOk && BinaryPrimitives.ReadUInt16LittleEndian(header[4..]) > Format.Version)
        {
            file.Dispose();
            return false; // the scan refuses it with UnsupportedVersion and its message
        }
        if (!headerOk || BinaryPrimitives.ReadUInt64LittleEndian(header[16..]) != BinaryPrimitives.ReadUInt64LittleEndian(s[24..])
            || BinaryPrimitives.ReadUInt64LittleEndian(header[24..]) != BinaryPrimitives.ReadUInt64LittleEndian(s[32..]))
        {
            file.Dispose();
            return false; // stale: the block changed since (it is rewritten at the next checkpoint)
        }
        var blk = new MsgBlock
        {
            Id = id,
            Path = path,
            File = file,
            StartSeq = BinaryPrimitives.ReadUInt64LittleEndian(s[24..]),
            Floor = BinaryPrimitives.ReadUInt64LittleEndian(s[32..]),
            Size = blockLen,
            Flushed = blockLen,
            Reserved = blockLen,
        };
        blk.SyncedGen = blk.WriteGen;
        AddBlock(blk);
        if (blk.StartSeq > 0 && blk.StartSeq - 1 > last) last = blk.StartSeq - 1;
        if (blk.Floor > floor) floor = blk.Floor;
        uint count = BinaryPrimitives.ReadUInt32LittleEndian(s[40..]);
        int p = SnapshotHeaderSize;
        ulong maxMsgSeq = Last;
        var body = s[..^4];
        for (uint i = 0; i < count; i++)
        {
            var e = body[p..];
            byte type = e[0];
            int subjLen = BinaryPrimitives.ReadUInt16LittleEndian(e[1..]);
            int len = (int)BinaryPrimitives.ReadUInt32LittleEndian(e[3..]);
            int off = (int)BinaryPrimitives.ReadUInt32LittleEndian(e[7..]);
            ulong seq = BinaryPrimitives.ReadUInt64LittleEndian(e[11..]);
            long ts = BinaryPrimitives.ReadInt64LittleEndian(e[19..]);
            long ttl = BinaryPrimitives.ReadInt64LittleEndian(e[27..]);
            int hdrLen = (int)BinaryPrimitives.ReadUInt32LittleEndian(e[35..]);
            ApplyRecord(blk, off, type, seq, ts, ttl, len, hdrLen, e.Slice(SnapshotEntryHeader, subjLen), ref last, ref floor, ref maxMsgSeq);
            p += SnapshotEntryHeader + subjLen;
        }
        _diskBytes += blk.Size;
        _snapshotted.Add(id);
        return true;
    }

    /// <summary>
    /// Sealed, fully durable blocks without a snapshot (under the store lock), with what the checkpoint must find
    /// unchanged before it installs a snapshot: the block's size and erase count.
    /// </summary>
    private void CollectSnapshotCandidatesLocked(List<(MsgBlock Block, int Size, int EraseGen)> into, bool atClose = false)
    {
        into.Clear();
        if (_recovering || (IsClosed && !atClose) || Failure is not null || _blocks.Count - 1 <= _snapshotted.Count) return;
        foreach (var b in _blocks)
        {
            if (b == _tail || b.Removed || b.Doomed || _snapshotted.Contains(b.Id) || b.NeedsSync || b.Size != b.Flushed) continue;
            into.Add((b, (int)b.Size, b.EraseGen));
        }
    }

    /// <summary>idx/ was created (or found) and the stream directory fsynced since this store opened.</summary>
    private volatile bool _indexDirDurable;

    /// <summary>
    /// Creates idx/ if needed and, once per open, fsyncs the stream directory so that the idx/ entry itself
    /// survives a power cut (otherwise every snapshot in it could vanish with it, and the next open scans).
    /// </summary>
    private void EnsureIndexDirectory()
    {
        _fs.CreateDirectory(IndexDir);
        MakeIndexDirectoryDurable();
    }

    /// <summary>
    /// The once-per-open fsync of the stream directory that <see cref="EnsureIndexDirectory"/> owes, for a checkpoint
    /// that created idx/ under the store lock (so a store deleted meanwhile does not get it back) and runs the rest
    /// without it: called before anything is written into idx/. A directory fsync during heavy writing can wait for
    /// a journal commit; under the lock it stalled every publisher. Throws like <see cref="EnsureIndexDirectory"/>.
    /// </summary>
    private void MakeIndexDirectoryDurable()
    {
        if (_indexDirDurable) return;
        _fs.SyncDirectory(_dir);
        _indexDirDurable = true;
    }

    /// <summary>1 while a checkpoint runs (one at a time; its candidate list and the tmp file names are its own).</summary>
    private int _checkpointing;
    private readonly List<(MsgBlock Block, int Size, int EraseGen)> _checkpointList = [];

    /// <summary>
    /// Checkpoint from the flush and sync ticks and explicit flushes, WITHOUT the store lock: for each candidate
    /// the block is read from its file (a pooled buffer, returned at once), its snapshot built, written to a temp
    /// file and fsynced; only the rename is done under the lock, and only if the block was neither deleted nor
    /// erased meanwhile (Erase bumps <see cref="MsgBlock.EraseGen"/> under the lock before it rewrites anything,
    /// and durably deletes a snapshot already installed). idx/ is fsynced once at the end. A periodic sync tick
    /// can find thousands of newly durable blocks; done under the lock, their reads and fsyncs stalled every
    /// publisher for seconds. Not fatal on failure (nothing acknowledged depends on a snapshot): reported in
    /// LastError, and the block is scanned at the next open. <paramref name="wait"/>: wait for a running
    /// checkpoint instead of leaving the work to it (explicit flush); never called with the store lock held.
    /// </summary>
    private void Checkpoint(bool wait)
    {
        if (wait)
        {
            var spin = new SpinWait();
            while (Interlocked.CompareExchange(ref _checkpointing, 1, 0) != 0) spin.SpinOnce();
        }
        else if (Interlocked.CompareExchange(ref _checkpointing, 1, 0) != 0)
        {
            return;
        }
        if (_closing)
        {
            // A close is waiting (FileStore.ImageCheckpoint.cs, BeforeClose): it writes the snapshots and the image itself.
            Volatile.Write(ref _checkpointing, 0);
            return;
        }
        try
        {
            var list = _checkpointList;
            try
            {
                lock (Sync)
                {
                    CollectSnapshotCandidatesLocked(list);
                    // Under the lock: a store deleted meanwhile must not get its directory back.
                    if (list.Count > 0 && !_indexDirDurable) _fs.CreateDirectory(IndexDir); // made durable once per open: it exists then
                }
                if (list.Count > 0) MakeIndexDirectoryDurable(); // before any snapshot goes in it, without the lock
            }
            catch (Exception e) when (e is IOException or UnauthorizedAccessException)
            {
                LastError = $"cannot create {IndexDir}: {e.Message}";
                list.Clear();
                return;
            }
            bool wrote = false;
            foreach (var (b, size, eraseGen) in list)
            {
                var outcome = WriteSnapshotFile(b, size, eraseGen);
                if (outcome == SnapshotWrite.Installed) wrote = true;
                else if (outcome == SnapshotWrite.Failed) break;
            }
            list.Clear();
            if (wrote) SyncIndexDirectory();
            // The index image (FileStore.ImageCheckpoint.cs): every image_interval_bytes, and at an explicit flush.
            if (ImageCheckpointDue(wait)) WriteImageCheckpoint(atClose: false);
        }
        finally
        {
            Volatile.Write(ref _checkpointing, 0);
        }
    }

    private enum SnapshotWrite { Installed, Skipped, Failed }

    /// <summary>
    /// One block's snapshot, outside the store lock: read and built into a pooled buffer, written to a temp file and
    /// fsynced, renamed under the lock unless the block was deleted or erased meanwhile.
    /// </summary>
    private SnapshotWrite WriteSnapshotFile(MsgBlock b, int size, int eraseGen)
    {
        var snap = ArrayPool<byte>.Shared.Rent(SnapshotBound(size));
        var path = SnapshotPath(b.Id);
        var tmp = path + ".tmp";
        try
        {
            int length = ReadAndBuildSnapshot(b, size, snap);
            if (length < 0) return SnapshotWrite.Skipped; // deleted meanwhile, or damaged (always scanned)
            DurableFile.WriteSynced(_fs, tmp, snap.AsSpan(0, length));
            lock (Sync)
            {
                if (!IsClosed && Failure is null && !b.Removed && !b.Doomed && b.EraseGen == eraseGen)
                {
                    _fs.Rename(tmp, path);
                    _snapshotted.Add(b.Id);
                    return SnapshotWrite.Installed;
                }
            }
            _fs.DeleteFile(tmp);
            return SnapshotWrite.Skipped;
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException)
        {
            LastError = $"cannot write index snapshot for {b.Path}: {e.Message}";
            try { if (_fs.FileExists(tmp)) _fs.DeleteFile(tmp); }
            catch (Exception e2) when (e2 is IOException or UnauthorizedAccessException) { _ = e2; }
            return SnapshotWrite.Failed;
        }
        finally
        {
            ArrayPool<byte>.Shared.Return(snap);
        }
    }

    /// <summary>
    /// Reads a sealed block from its file (outside the store lock) and builds its snapshot into <paramref name="dest"/>
    /// (at least <see cref="SnapshotBound"/> long); its length, or -1 if that fails.
    /// </summary>
    private int ReadAndBuildSnapshot(MsgBlock b, int size, byte[] dest)
    {
        var buf = ArrayPool<byte>.Shared.Rent(size);
        try
        {
            if (b.File.Read(buf.AsSpan(0, size), 0) < size) return -1;
            return BuildSnapshot(b, buf.AsSpan(0, size), dest);
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException or ObjectDisposedException)
        {
            return -1;
        }
        finally
        {
            ArrayPool<byte>.Shared.Return(buf);
        }
    }

    /// <summary>
    /// Checkpoint at a clean close, under the store lock (nothing is appended any more): the snapshot of every
    /// sealed, fully durable block that has none, then one fsync of idx/. A tick's checkpoint has finished before
    /// the close took the lock (<see cref="BeforeClose"/>), and none starts after it.
    /// </summary>
    private void WriteSnapshotsLocked()
    {
        var spin = new SpinWait();
        while (Interlocked.CompareExchange(ref _checkpointing, 1, 0) != 0) spin.SpinOnce(); // see BeforeClose
        try
        {
            var list = _checkpointList;
            CollectSnapshotCandidatesLocked(list, atClose: true);
            bool wrote = false;
            foreach (var (b, size, _) in list)
            {
                var snap = ArrayPool<byte>.Shared.Rent(SnapshotBound(size));
                try
                {
                    int length = b.Cache is { } cache ? BuildSnapshot(b, cache.AsSpan(0, size), snap) : ReadAndBuildSnapshot(b, size, snap);
                    if (length < 0) continue;
                    if (!wrote) EnsureIndexDirectory();
                    DurableFile.Replace(_fs, SnapshotPath(b.Id), snap.AsSpan(0, length), syncDirectory: false);
                    _snapshotted.Add(b.Id);
                    wrote = true;
                }
                catch (Exception e) when (e is IOException or UnauthorizedAccessException)
                {
                    LastError = $"cannot write index snapshot for {b.Path}: {e.Message}";
                    break;
                }
                finally
                {
                    ArrayPool<byte>.Shared.Return(snap);
                }
            }
            list.Clear();
            if (wrote) SyncIndexDirectory();
        }
        finally
        {
            Volatile.Write(ref _checkpointing, 0);
        }
    }

    /// <summary>
    /// fsync of idx/ after snapshots were renamed into it. A failure is reported (LastError), not fatal: nothing
    /// acknowledged depends on a snapshot, and a lost one only makes the next open scan that block.
    /// </summary>
    private void SyncIndexDirectory()
    {
        try
        {
            _fs.SyncDirectory(IndexDir);
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException)
        {
            LastError = $"cannot fsync {IndexDir}: {e.Message}";
        }
    }

    /// <summary>
    /// Room for the snapshot of a block of <paramref name="blockSize"/> bytes: an entry (39 bytes + subject) is never
    /// longer than its record (40 bytes of framing + subject + headers + payload), so the entries fit in the block's
    /// record bytes, plus the snapshot's own header and CRC.
    /// </summary>
    private static int SnapshotBound(int blockSize) => blockSize + SnapshotHeaderSize + 4;

    /// <summary>
    /// Writes the snapshot of a sealed block from its bytes into <paramref name="dest"/> (at least
    /// <see cref="SnapshotBound"/> long; built in place, no growing buffer: a checkpoint during a fast ingest spent
    /// most of its time growing a MemoryStream); its length, or -1 if the block does not parse cleanly to its end.
    /// </summary>
    private static int BuildSnapshot(MsgBlock b, ReadOnlySpan<byte> span, Span<byte> dest)
    {
        int size = span.Length;
        var head = dest[..SnapshotHeaderSize];
        SnapshotMagic.CopyTo(head);
        BinaryPrimitives.WriteUInt16LittleEndian(head[4..], SnapshotVersion);
        BinaryPrimitives.WriteUInt16LittleEndian(head[6..], 0);
        BinaryPrimitives.WriteUInt32LittleEndian(head[8..], b.Id);
        BinaryPrimitives.WriteUInt32LittleEndian(head[12..], 0);
        BinaryPrimitives.WriteInt64LittleEndian(head[16..], size);
        BinaryPrimitives.WriteUInt64LittleEndian(head[24..], b.StartSeq);
        BinaryPrimitives.WriteUInt64LittleEndian(head[32..], b.Floor);
        int w = SnapshotHeaderSize;
        uint count = 0;
        int off = Format.BlockHeaderSize;
        while (off < size)
        {
            if (!Format.TryRecord(span[off..], out var rec)) return -1; // damaged blocks are always scanned
            int subjLen = rec.Type == Format.TypeMessage ? rec.SubjectLength : 0;
            var e = dest.Slice(w, SnapshotEntryHeader + subjLen);
            e[0] = rec.Type;
            BinaryPrimitives.WriteUInt16LittleEndian(e[1..], (ushort)subjLen);
            BinaryPrimitives.WriteUInt32LittleEndian(e[3..], (uint)rec.Length);
            BinaryPrimitives.WriteUInt32LittleEndian(e[7..], (uint)off);
            BinaryPrimitives.WriteUInt64LittleEndian(e[11..], rec.Seq);
            BinaryPrimitives.WriteInt64LittleEndian(e[19..], rec.Timestamp);
            BinaryPrimitives.WriteInt64LittleEndian(e[27..], rec.Ttl);
            BinaryPrimitives.WriteUInt32LittleEndian(e[35..], rec.Type == Format.TypeMessage ? (uint)rec.HeadersLength : 0);
            span.Slice(off + Format.RecordHeaderSize, subjLen).CopyTo(e[SnapshotEntryHeader..]);
            w += e.Length;
            count++;
            off += rec.Length;
        }
        BinaryPrimitives.WriteUInt32LittleEndian(dest[40..], count);
        BinaryPrimitives.WriteUInt32LittleEndian(dest[w..], Crc32C.Compute(dest[..w]));
        return w + 4;
    }

    /// <summary>
    /// Before a sealed block is rewritten in place (Erase): its snapshot is deleted and the deletion made durable,
    /// so no power cut can leave a snapshot that still lists the erased message. False = fail-stopped.
    /// </summary>
    private bool DropSnapshotDurably(MsgBlock b)
    {
        if (!_snapshotted.Remove(b.Id)) return true;
        try
        {
            _fs.DeleteFile(SnapshotPath(b.Id));
            _fs.SyncDirectory(IndexDir);
            return true;
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException)
        {
            Fail($"removal of the index snapshot of {b.Path}", e);
            return false;
        }
    }
}
