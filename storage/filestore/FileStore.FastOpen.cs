using System.Runtime.InteropServices;
using NatsBroker.Contracts;
using NatsBroker.Storage.Internal;

namespace NatsBroker.Storage.File;

/// <summary>
/// Fast open from the index image (<see cref="IndexImage"/>, FORMAT.md "Index image"), written at every clean
/// close. The image is used only when the store on disk is exactly what it describes: the same block ids, every
/// sealed block of the recorded length with a matching 40-byte header (version, start sequence, floor), and the newest block of the recorded length and CRC-32C (it is read
/// whole anyway, as the append buffer). Every change to a store either appends to the newest block (messages,
/// tombstones, floors, skips), creates or deletes a block, or erases in place, and Erase deletes the image
/// durably before it rewrites anything; so an image that passes these checks describes the durable state, also
/// after a crash or power cut. Otherwise open falls back to the per-block snapshots and block scans.
/// <para>
/// Open then costs O(blocks + subjects + index chunks): the sequence index stays on disk, page by page
/// (1024 entries), and a page is read the first time an entry in it is touched (under the store lock; one
/// 48 KiB pread). A damaged page found then fail-stops the store and deletes the image, so the next open
/// rebuilds the index from the blocks.
/// </para>
/// </summary>
internal sealed partial class FileStore
{
    /// <summary>The image the store was opened from (pages still on disk are read from it); null otherwise.</summary>
    private IndexImage? _image;

    private string ImagePath => Path.Combine(IndexDir, IndexImage.FileName);

    /// <summary>Tries the fast open; false = nothing was changed, recover from the blocks. Under the store lock.</summary>
    private bool TryOpenFromImage(List<uint> ids)
    {
        if (ids.Count == 0) return false;
        var image = IndexImage.TryRead(_fs, ImagePath, PageFailed, out var problem);
        if (problem is not null) Report(problem);
        if (image is null) return false;
        var opened = new List<MsgBlock>(ids.Count);
        bool ok = ids.Count == image.Blocks.Length;
        try
        {
            for (int i = 0; ok && i < ids.Count; i++)
            {
                var rec = image.Blocks[i];
                if (rec.Id != ids[i]) { ok = false; break; }
                var path = Path.Combine(_blockDir, Format.BlockName(rec.Id));
                var file = _fs.OpenFile(path, create: false);
                var blk = new MsgBlock { Id = rec.Id, Path = path, File = file, StartSeq = rec.StartSeq, Floor = rec.Floor, LastMsgSeq = rec.LastMsgSeq, Size = rec.Size, Flushed = rec.Size, Reserved = rec.Size, Live = rec.Live, Tombstones = rec.Tombstones };
                opened.Add(blk);
                if (file.Length != rec.Size) { ok = false; break; }
                if (i < ids.Count - 1 && !SealedHeaderMatches(file, rec)) { ok = false; break; }
                if (i == ids.Count - 1)
                {
                    // The newest block: read whole (it is the append buffer) and compared with the image's CRC.
                    var data = RentBuffer((int)Math.Max(rec.Size, _opt.BlockSize));
                    blk.Cache = data;
                    ok = file.Read(data.AsSpan(0, (int)rec.Size), 0) == rec.Size && Crc32C.Compute(data.AsSpan(0, (int)rec.Size)) == image.TailCrc;
                    blk.Reserved = Math.Max(_opt.BlockSize, rec.Size);
                }
            }
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException)
        {
            Report($"index image not used: {e.Message}");
            ok = false;
        }
        if (!ok)
        {
            foreach (var b in opened)
            {
                b.File.Dispose();
                if (b.Cache is not null) ReturnBuffer(b.Cache);
            }
            image.Dispose();
            // Stale (the store changed since the close that wrote it): removed, a clean close writes a new one.
            try { _fs.DeleteFile(ImagePath); }
            catch (Exception e) when (e is IOException or UnauthorizedAccessException) { Report($"cannot remove stale index image: {e.Message}"); }
            return false;
        }

        foreach (var b in opened)
        {
            AddBlock(b);
            _diskBytes += b.Reserved;
            if (b.Id != ids[^1] && _snapshotFiles!.ContainsKey(b.Id)) _snapshotted.Add(b.Id);
        }
        _tail = opened[^1];
        foreach (var s in image.Subjects) Subjects.Restore(s.Id, s.Key, s.Count, s.First, s.Last);
        Subjects.FinishRestore();
        var st = image.State;
        RestoreCounters(st.First, st.Last, st.LastTs, st.Msgs, st.Bytes);
        foreach (var (seq, expires) in image.Ttls) TrackTtl(seq, expires);
        Index.RestorePaged(st.IndexBaseChunk, st.IndexEnd, image.Chunks, image);
        _image = image;
        return true;
    }

    /// <summary>
    /// Reads a sealed block's 40-byte header: a newer format version must still be refused (the fallback scan does
    /// it with its message), and a start sequence or floor that differs from the image means the image is stale.
    /// </summary>
    private static bool SealedHeaderMatches(IStoreFile file, IndexImage.BlockSummary rec)
    {
        Span<byte> header = stackalloc byte[Format.BlockHeaderSize];
        return file.Read(header, 0) == header.Length
            && header[..4].SequenceEqual(Format.BlockMagic)
            && System.Buffers.Binary.BinaryPrimitives.ReadUInt16LittleEndian(header[4..]) <= Format.Version
            && Crc32C.Compute(header[..36]) == System.Buffers.Binary.BinaryPrimitives.ReadUInt32LittleEndian(header[36..])
            && System.Buffers.Binary.BinaryPrimitives.ReadUInt64LittleEndian(header[16..]) == rec.StartSeq
            && System.Buffers.Binary.BinaryPrimitives.ReadUInt64LittleEndian(header[24..]) == rec.Floor;
    }

    /// <summary>A page of the image could not be read when needed: the in-memory index is incomplete, so the store stops.</summary>
    private void PageFailed(string error)
    {
        FailStop($"file store '{Config.StreamName}': {error}; the store is read-only until it is reopened (the index is then rebuilt from the blocks)");
        DropImage();
    }

    /// <summary>Deletes the image file (not durably: a stale image that comes back is refused by the checks at open).</summary>
    private void DropImage()
    {
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
    /// made durable, so a power cut cannot leave an image that still lists the erased message. False = fail-stopped.
    /// </summary>
    private bool DropImageDurably()
    {
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

    /// <summary>
    /// Writes the index image at a clean close (the tail flushed and every block fsynced before). Pages still on
    /// disk are copied from the image the store was opened from. Not fatal on failure (the next open recovers
    /// from the blocks): reported in LastError.
    /// </summary>
    private void WriteIndexImageLocked()
    {
        if (Failure is not null || _tail is null || _blocks.Count == 0 || _blocks[^1] != _tail || _tail.Cache is null) return;
        var blocks = new List<IndexImage.BlockSummary>(_blocks.Count);
        foreach (var b in _blocks)
        {
            if (b.Size != b.Flushed || b.NeedsSync) return;
            blocks.Add(new IndexImage.BlockSummary(b.Id, b.StartSeq, b.Floor, b.LastMsgSeq, b.Size, b.Live, b.Tombstones));
        }
        uint tailCrc = Crc32C.Compute(_tail.Cache.AsSpan(0, (int)_tail.Size));
        if (_image is not null && _imageOnDisk && tailCrc == _image.TailCrc && blocks.SequenceEqual(_image.Blocks)
            && _image.State == new IndexImage.Counters(First, Last, LastTs, Msgs, Bytes, _image.State.IndexBaseChunk, _image.State.IndexEnd)
            && Index.End == _image.State.IndexEnd)
        {
            return; // opened from this image and nothing changed since: it is still current
        }
        var chunks = new List<(ulong Chunk, int Live)>();
        var sources = new List<IndexEntry[]?>();
        ulong lastChunk = Index.End == 0 ? 0 : (Index.End - 1) / SequenceIndex.EntriesPerChunk;
        for (int k = 0; k < Index.ChunkSlots; k++)
        {
            ulong no = Index.ChunkAt(k, out var data, out int live, out bool paged);
            // Empty chunks are not kept, except the one being appended to (its dead entries must stay dead).
            if (live == 0 && !(no == lastChunk && (data is not null || paged))) continue;
            if (data is null && !paged) continue;
            chunks.Add((no, live));
            sources.Add(data);
        }
        var tmp = ImagePath + ".tmp";
        try
        {
            EnsureIndexDirectory();
            bool ok;
            using (var f = _fs.OpenFile(tmp, create: true))
            {
                var counters = new IndexImage.Counters(First, Last, LastTs, Msgs, Bytes, Index.Low / SequenceIndex.EntriesPerChunk, Index.End);
                ok = IndexImage.Write(f, counters, blocks, tailCrc,
                    Subjects.All.Select(s => new IndexImage.SubjectRecord(s.Id, s.Key, s.Count, s.First, s.Last)), Subjects.Count,
                    [.. PendingTtls()], chunks, (k, page) =>
                    {
                        var data = sources[k];
                        if (data is not null)
                        {
                            MemoryMarshal.AsBytes(data.AsSpan()).CopyTo(page);
                            return true;
                        }
                        return _image is not null && _image.ReadPage(chunks[k].Chunk, page, out _);
                    });
                if (ok) f.Sync();
            }
            if (!ok)
            {
                _fs.DeleteFile(tmp);
                DropImage();
                return;
            }
            CloseImage(); // every page was copied; the old file is replaced
            _fs.Rename(tmp, ImagePath);
            _fs.SyncDirectory(IndexDir);
            _imageOnDisk = true;
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException)
        {
            LastError = $"cannot write the index image: {e.Message}";
            try { if (_fs.FileExists(tmp)) _fs.DeleteFile(tmp); }
            catch (Exception e2) when (e2 is IOException or UnauthorizedAccessException) { _ = e2; }
        }
    }

    private void CloseImage()
    {
        _image?.Dispose();
        _image = null;
    }
}
