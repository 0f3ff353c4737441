using System.Buffers.Binary;
using NatsBroker.Contracts;
using NatsBroker.Storage.Internal;

namespace NatsBroker.Storage.File;

/// <summary>
/// Fast open from the index image (<see cref="IndexImage"/>, FORMAT.md "Index image"), written at checkpoints
/// (FileStore.ImageCheckpoint.cs) and at a clean close, so also after a crash (kill -9, power cut).
/// <para>
/// The image describes the store at its checkpoint: the blocks then (ids, lengths, headers) and the first L bytes
/// of the then newest block (CRC-32C). It is used only if the blocks it describes are unchanged: every sealed block
/// still there of the recorded length with a matching 40-byte header, the checkpoint's newest block (if not deleted
/// since) at least L bytes long with the same CRC over [0, L), and no block it does not list with an id below its
/// newest. Blocks only change
/// by appends to the newest block (messages, tombstones, floors, skips), new blocks, deleted blocks and Erase,
/// which deletes the image durably before it rewrites anything; so the records after the checkpoint are exactly
/// the bytes from L on and the blocks with higher ids, and open replays them through the same code as a scan
/// (<see cref="ApplyRecord"/>, or a block's index snapshot). A block the image lists that was deleted since held
/// no live message when it was deleted, so whatever the image still has in it is removed (a scan would not see it
/// either). If the replay meets an error (a newer block version, a damaged index page), nothing of the attempt is
/// kept and the store is opened again from the blocks alone.
/// </para>
/// <para>
/// Open then costs O(blocks + subjects + index chunks) plus the replay of what was written after the checkpoint
/// (bounded by <c>image_interval_bytes</c>): the sequence index stays on disk, page by page (1024 entries), and a
/// page is read the first time an entry in it is touched (one 48 KiB pread). A damaged page found then
/// fail-stops the store and deletes the image, so the next open rebuilds the index from the blocks.
/// </para>
/// </summary>
internal sealed partial class FileStore
{
    private enum ImageOpen { NotUsed, Opened, Restart }

    /// <summary>The image file the store reads pages from and appends checkpoints to; null when none is open.</summary>
    private IndexImage? _image;

    /// <summary>This open ignores (and deletes) the image: a first attempt found it does not match the blocks.</summary>
    private readonly bool _ignoreImage;

    /// <summary>Set by an open from the image that must be repeated without it (see the class comment).</summary>
    private bool _restartWithoutImage;

    private string ImagePath => Path.Combine(IndexDir, IndexImage.FileName);

    /// <summary>This store was opened from its index image (tests and the bench check which path an open took).</summary>
    internal bool OpenedFromImage { get; private set; }

    /// <summary>Generation of the newest committed image checkpoint (0 = none yet).</summary>
    internal long ImageGeneration
    {
        get { lock (Sync) return _image is not null && !_imageFull ? _image.Generation : 0; }
    }

    /// <summary>
    /// Tries the fast open (under the store lock). NotUsed = nothing was changed, recover from the blocks; Opened =
    /// the state is restored and the records after the checkpoint replayed (<paramref name="last"/> and
    /// <paramref name="floor"/> applied); Restart = state was changed but the image turned out stale.
    /// </summary>
    private ImageOpen TryOpenFromImage(List<uint> ids, ref ulong last, ref ulong floor)
    {
        if (ids.Count == 0) return ImageOpen.NotUsed;
        var image = IndexImage.TryRead(_fs, ImagePath, PageFailed, out var head, out var problem);
        if (problem is not null) Report(problem);
        if (image is null || head is null) return ImageOpen.NotUsed;

        var tailRec = head.Tail;
        var onDisk = new HashSet<uint>(ids);
        var listed = new HashSet<uint>(head.Blocks.Select(b => b.Id));
        var opened = new List<MsgBlock>(head.Blocks.Length);
        var missing = new List<IndexImage.BlockSummary>();
        byte[]? tailData = null;
        long tailFileLen = 0;
        // A block the image does not list with an id up to its newest (a deletion not yet durable came back), or
        // no block at least as new as the checkpoint's newest (the newest block is never deleted, so the store
        // was tampered with): the image does not describe these blocks. The checkpoint's newest block itself may
        // be gone: deleted once nothing in it was live, like any other block (see the class comment).
        bool tailPresent = onDisk.Contains(tailRec.Id);
        bool ok = ids[^1] >= tailRec.Id && !ids.Any(id => id <= tailRec.Id && !listed.Contains(id));
        string? stale = ok ? null : "a block it does not list exists, or its newest block is missing";
        try
        {
            for (int i = 0; ok && i < head.Blocks.Length; i++)
            {
                var rec = head.Blocks[i];
                if (!onDisk.Contains(rec.Id))
                {
                    missing.Add(rec);
                    continue;
                }
                var path = Path.Combine(_blockDir, Format.BlockName(rec.Id));
                var file = _fs.OpenFile(path, create: false);
                var blk = new MsgBlock { Id = rec.Id, Path = path, File = file, StartSeq = rec.StartSeq, Floor = rec.Floor, LastMsgSeq = rec.LastMsgSeq, Size = rec.Size, Flushed = rec.Size, Reserved = rec.Size, Live = rec.Live, Tombstones = rec.Tombstones };
                opened.Add(blk);
                if (!SealedHeaderMatches(file, rec)) { ok = false; stale = $"the header of block {Format.BlockName(rec.Id)} differs"; break; }
                if (i < head.Blocks.Length - 1)
                {
                    if (file.Length != rec.Size) { ok = false; stale = $"block {Format.BlockName(rec.Id)} has {file.Length} bytes, not {rec.Size}"; break; }
                    continue;
                }
                // The checkpoint's newest block: it may have grown since; the bytes the image covers must be unchanged.
                tailFileLen = file.Length;
                if (tailFileLen < rec.Size || tailFileLen > int.MaxValue - 64) { ok = false; stale = $"block {Format.BlockName(rec.Id)} has {tailFileLen} bytes, fewer than the {rec.Size} it covers"; break; }
                tailData = RentBuffer((int)Math.Max(tailFileLen, _opt.BlockSize));
                int got = file.Read(tailData.AsSpan(0, (int)tailFileLen), 0);
                ok = got >= rec.Size && Crc32C.Compute(tailData.AsSpan(0, (int)rec.Size)) == head.TailCrc;
                if (!ok) stale = $"the first {rec.Size} bytes of block {Format.BlockName(rec.Id)} changed";
                tailFileLen = got;
            }
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException)
        {
            Report($"index image not used: {e.Message}");
            ok = false;
        }
        if (!ok)
        {
            foreach (var b in opened) b.File.Dispose();
            if (tailData is not null) ReturnBuffer(tailData);
            image.Dispose();
            // Stale (the blocks changed under it, e.g. a power cut took back bytes it covers): removed; the next
            // checkpoint writes a new one.
            if (stale is not null) Report($"index image not used: {stale}; index rebuilt from the blocks");
            try { _fs.DeleteFile(ImagePath); }
            catch (Exception e) when (e is IOException or UnauthorizedAccessException) { Report($"cannot remove stale index image: {e.Message}"); }
            _imageOnDisk = false;
            return ImageOpen.NotUsed;
        }

        // Restore the checkpoint's state.
        foreach (var b in opened)
        {
            AddBlock(b);
            _diskBytes += b.Reserved;
            if (b.Id != ids[^1] && _snapshotFiles!.ContainsKey(b.Id)) _snapshotted.Add(b.Id);
        }
        foreach (var s in head.Subjects) Subjects.Restore(s.Id, s.Key, s.Count, s.First, s.Last);
        Subjects.FinishRestore();
        var st = head.State;
        RestoreCounters(st.First, st.Last, st.LastTs, st.Msgs, st.Bytes);
        foreach (var (seq, expires) in head.Ttls) TrackTtl(seq, expires);
        Index.RestorePaged(st.IndexBaseChunk, st.IndexEnd, head.Chunks, image);
        _image = image;
        _imageOnDisk = true;
        _imageFull = false;

        // Replay what was written after the checkpoint: the rest of its newest block, then every newer block.
        last = Math.Max(last, st.Last);
        if (tailPresent)
        {
            var tailBlk = opened[^1];
            bool tailIsNewest = tailRec.Id == ids[^1];
            tailBlk.Size = tailBlk.Flushed = tailFileLen; // the scan truncates a torn tail
            ScanRecords(tailBlk, tailBlk.File, tailData.AsSpan(0, (int)tailFileLen), (int)tailRec.Size, tailIsNewest, ref last, ref floor);
            _diskBytes -= tailBlk.Reserved;
            tailBlk.Reserved = tailIsNewest ? Math.Max(_opt.BlockSize, tailBlk.Size) : tailBlk.Size;
            _diskBytes += tailBlk.Reserved;
            if (tailIsNewest)
            {
                tailBlk.Cache = tailData;
                _tail = tailBlk;
            }
            else
            {
                ReturnBuffer(tailData!);
            }
        }
        int from = ids.FindIndex(id => id > tailRec.Id);
        if (from < 0) from = ids.Count;
        for (int i = from; i < ids.Count; i++)
        {
            if (i < ids.Count - 1 && TryRecoverFromSnapshot(ids[i], Path.Combine(_blockDir, Format.BlockName(ids[i])), ref last, ref floor)) continue;
            var (rst, err) = RecoverBlock(ids[i], i == ids.Count - 1, ref last, ref floor);
            if (rst != StoreStatus.Ok)
            {
                Report($"index image not used: {err}");
                return ImageOpen.Restart; // the open without the image reports the same error
            }
        }
        RecoverLast(last, floor);

        // Blocks deleted since the checkpoint: a block is deleted only once no live message is left in it, so
        // nothing of it survives, as with a scan, which never sees it. Entries the image still has there (their
        // removal was not recorded: front removals by limits write their floor lazily, and a tombstone that pointed
        // into a deleted block is not carried) are removed now, in sequence order (front ones move First).
        foreach (var m in missing)
        {
            if (Msgs == 0 || m.LastMsgSeq < First) continue;
            for (ulong seq = Index.NextLive(Math.Max(First, m.StartSeq), m.LastMsgSeq); seq != 0; seq = seq >= m.LastMsgSeq ? 0 : Index.NextLive(seq + 1, m.LastMsgSeq))
            {
                if (Failure is not null) return ImageOpen.Restart;
                if ((uint)(Index.Get(seq).Location >> 32) == m.Id) RemoveLocked(seq, RemoveKind.Lazy);
            }
        }
        if (Failure is not null) return ImageOpen.Restart; // a damaged page met during the replay
        return ImageOpen.Opened;
    }

    /// <summary>
    /// Reads a block's 40-byte header: a newer format version must still be refused (the fallback scan does it with
    /// its message), and a start sequence or floor that differs from the image means the image is stale.
    /// </summary>
    private static bool SealedHeaderMatches(IStoreFile file, IndexImage.BlockSummary rec)
    {
        Span<byte> header = stackalloc byte[Format.BlockHeaderSize];
        return file.Read(header, 0) == header.Length
            && header[..4].SequenceEqual(Format.BlockMagic)
            && BinaryPrimitives.ReadUInt16LittleEndian(header[4..]) <= Format.Version
            && Crc32C.Compute(header[..36]) == BinaryPrimitives.ReadUInt32LittleEndian(header[36..])
            && BinaryPrimitives.ReadUInt64LittleEndian(header[16..]) == rec.StartSeq
            && BinaryPrimitives.ReadUInt64LittleEndian(header[24..]) == rec.Floor;
    }

    /// <summary>A page of the image could not be read when needed: the in-memory index is incomplete, so the store stops.</summary>
    private void PageFailed(string error)
    {
        if (_recovering)
        {
            // During the replay at open: the open is repeated without the image (TryOpenFromImage checks Failure).
            FailStop($"file store '{Config.StreamName}': {error}");
        }
        else
        {
            FailStop($"file store '{Config.StreamName}': {error}; the store is read-only until it is reopened (the index is then rebuilt from the blocks)");
        }
        DropImage();
    }

    /// <summary>Deletes the image file (not durably: a stale image that comes back is refused by the checks at open).</summary>
    private void DropImage()
    {
        _imageEpoch++;
        _imageOnDisk = false;
        try
        {
            if (_fs.FileExists(ImagePath)) _fs.DeleteFile(ImagePath);
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException)
        {
            LastError = $"cannot delete the index image: {e.Message}";
        }
    }

    /// <summary>
    /// Before an in-place rewrite (Erase) of a block the image may describe: the image is deleted and the deletion
    /// made durable, so a power cut cannot leave an image that still lists the erased message; a checkpoint running
    /// meanwhile does not commit (the epoch changed). The open image file stays open for the pages still on disk
    /// (the next checkpoint writes a whole new file). False = fail-stopped.
    /// </summary>
    private bool DropImageDurably()
    {
        _imageEpoch++;
        if (!_imageOnDisk) return true;
        try
        {
            if (_fs.FileExists(ImagePath))
            {
                _fs.DeleteFile(ImagePath);
                _fs.SyncDirectory(IndexDir);
            }
            _imageOnDisk = false;
            return true;
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException)
        {
            Fail("removal of the index image", e);
            return false;
        }
    }

    /// <summary>An image file may exist on disk (set at open when idx/ has one, and after writing one).</summary>
    private bool _imageOnDisk;

    private void CloseImage()
    {
        _image?.Dispose();
        _image = null;
    }
}
