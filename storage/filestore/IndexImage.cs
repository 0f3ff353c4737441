using System.Buffers.Binary;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using NatsBroker.Contracts;
using NatsBroker.Storage.Internal;

namespace NatsBroker.Storage.File;

/// <summary>
/// The index image (<c>idx/index.img</c>, FORMAT.md "Index image"): the whole in-memory state of a store at a
/// clean close (counters, per-block summaries, subjects, TTLs) followed by the sequence index as raw 48 KiB pages.
/// Open reads only the "head" (O(blocks + subjects + index chunks)); each page is read the first time an entry in
/// it is touched (<see cref="IIndexPager"/>), so open does not depend on the number of messages.
/// This type owns the layout (encode and decode) and the open image file the pages are read from.
/// </summary>
internal sealed class IndexImage : IIndexPager, IDisposable
{
    public const string FileName = "index.img";
    public const ushort Version = 1;
    public const int HeaderSize = 104;
    public const int BlockEntrySize = 48;
    public const int ChunkEntrySize = 16;
    public const int PageAlign = 4096;
    private static ReadOnlySpan<byte> Magic => "NBIM"u8;
    public static int EntrySize => Unsafe.SizeOf<IndexEntry>();
    public static int PageSize => EntrySize * SequenceIndex.EntriesPerChunk;

    /// <summary>Stream counters and index layout recorded in the header.</summary>
    public readonly record struct Counters(ulong First, ulong Last, long LastTs, ulong Msgs, ulong Bytes, ulong IndexBaseChunk, ulong IndexEnd);

    /// <summary>One block as recorded (the last one is the newest block, whose bytes are checked whole at open).</summary>
    public readonly record struct BlockSummary(uint Id, ulong StartSeq, ulong Floor, ulong LastMsgSeq, long Size, int Live, int Tombstones);

    public readonly record struct SubjectRecord(int Id, byte[] Key, ulong Count, ulong First, ulong Last);

    private readonly IStoreFile _file;
    private readonly ulong[] _chunkNos;
    private readonly uint[] _crcs;
    private readonly long _pagesStart;
    private readonly Action<string> _onFailure;

    public Counters State { get; }
    public uint TailId { get; }
    public long TailLength { get; }
    public uint TailCrc { get; }
    public BlockSummary[] Blocks { get; }
    public SubjectRecord[] Subjects { get; }
    public (ulong Seq, long Expires)[] Ttls { get; }
    public (ulong Chunk, int Live)[] Chunks { get; }

    private IndexImage(IStoreFile file, Counters state, uint tailId, long tailLength, uint tailCrc, BlockSummary[] blocks,
        SubjectRecord[] subjects, (ulong, long)[] ttls, (ulong, int)[] chunks, uint[] crcs, long pagesStart, Action<string> onFailure)
    {
        _file = file;
        State = state;
        TailId = tailId;
        TailLength = tailLength;
        TailCrc = tailCrc;
        Blocks = blocks;
        Subjects = subjects;
        Ttls = ttls;
        Chunks = chunks;
        _chunkNos = [.. chunks.Select(c => c.Item1)];
        _crcs = crcs;
        _pagesStart = pagesStart;
        _onFailure = onFailure;
    }

    /// <summary>
    /// Reads and checks the head of an image; null (with <paramref name="problem"/> set when it is worth reporting)
    /// if it is missing, of another version or layout, or damaged. Keeps the file open for the page reads.
    /// </summary>
    public static IndexImage? TryRead(IStoreFileSystem fs, string path, Action<string> onFailure, out string? problem)
    {
        problem = null;
        if (!BitConverter.IsLittleEndian || !fs.FileExists(path)) return null;
        IStoreFile? file = null;
        try
        {
            file = fs.OpenFile(path, create: false);
            Span<byte> h = stackalloc byte[HeaderSize];
            if (file.Read(h, 0) < HeaderSize || !h[..4].SequenceEqual(Magic)
                || BinaryPrimitives.ReadUInt16LittleEndian(h[4..]) != Version || BinaryPrimitives.ReadUInt16LittleEndian(h[6..]) != EntrySize)
            {
                problem = $"index image {path} is of another version or layout; ignored";
                file.Dispose();
                return null;
            }
            long headLen = BinaryPrimitives.ReadInt64LittleEndian(h[96..]);
            if (headLen < HeaderSize + 4 || headLen > file.Length || headLen > int.MaxValue)
            {
                problem = $"index image {path} is truncated; ignored";
                file.Dispose();
                return null;
            }
            var head = new byte[headLen];
            if (file.Read(head, 0) < headLen || Crc32C.Compute(head.AsSpan(0, (int)headLen - 4)) != BinaryPrimitives.ReadUInt32LittleEndian(head.AsSpan((int)headLen - 4)))
            {
                problem = $"index image {path} has a bad checksum; ignored";
                file.Dispose();
                return null;
            }
            var image = Decode(file, head, onFailure);
            if (image is null)
            {
                problem = $"index image {path} is inconsistent; ignored";
                file.Dispose();
            }
            return image;
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException)
        {
            problem = $"index image {path} unreadable ({e.Message}); ignored";
            file?.Dispose();
            return null;
        }
    }

    private static IndexImage? Decode(IStoreFile file, byte[] head, Action<string> onFailure)
    {
        var s = head.AsSpan(0, head.Length - 4);
        uint tailId = BinaryPrimitives.ReadUInt32LittleEndian(s[8..]);
        int blockCount = BinaryPrimitives.ReadInt32LittleEndian(s[12..]);
        long tailLen = BinaryPrimitives.ReadInt64LittleEndian(s[16..]);
        uint tailCrc = BinaryPrimitives.ReadUInt32LittleEndian(s[24..]);
        int subjectCount = BinaryPrimitives.ReadInt32LittleEndian(s[28..]);
        var state = new Counters(
            BinaryPrimitives.ReadUInt64LittleEndian(s[32..]), BinaryPrimitives.ReadUInt64LittleEndian(s[40..]),
            BinaryPrimitives.ReadInt64LittleEndian(s[48..]), BinaryPrimitives.ReadUInt64LittleEndian(s[56..]),
            BinaryPrimitives.ReadUInt64LittleEndian(s[64..]), BinaryPrimitives.ReadUInt64LittleEndian(s[72..]),
            BinaryPrimitives.ReadUInt64LittleEndian(s[80..]));
        int chunkCount = BinaryPrimitives.ReadInt32LittleEndian(s[88..]);
        int ttlCount = BinaryPrimitives.ReadInt32LittleEndian(s[92..]);
        if (blockCount < 1 || subjectCount < 0 || chunkCount < 0 || ttlCount < 0) return null;
        int p = HeaderSize;
        if ((long)blockCount * BlockEntrySize + (long)ttlCount * 16 + (long)chunkCount * ChunkEntrySize > s.Length) return null;
        var blocks = new BlockSummary[blockCount];
        for (int i = 0; i < blockCount; i++, p += BlockEntrySize)
        {
            var b = s[p..];
            blocks[i] = new BlockSummary(BinaryPrimitives.ReadUInt32LittleEndian(b), BinaryPrimitives.ReadUInt64LittleEndian(b[8..]),
                BinaryPrimitives.ReadUInt64LittleEndian(b[16..]), BinaryPrimitives.ReadUInt64LittleEndian(b[24..]),
                BinaryPrimitives.ReadInt64LittleEndian(b[32..]), BinaryPrimitives.ReadInt32LittleEndian(b[40..]), BinaryPrimitives.ReadInt32LittleEndian(b[44..]));
        }
        if (blocks[^1].Id != tailId) return null;
        var subjects = new SubjectRecord[subjectCount];
        for (int i = 0; i < subjectCount; i++)
        {
            if (p + 30 > s.Length) return null;
            var b = s[p..];
            int keyLen = BinaryPrimitives.ReadUInt16LittleEndian(b[28..]);
            if (p + 30 + keyLen > s.Length) return null;
            subjects[i] = new SubjectRecord(BinaryPrimitives.ReadInt32LittleEndian(b), b.Slice(30, keyLen).ToArray(),
                BinaryPrimitives.ReadUInt64LittleEndian(b[4..]), BinaryPrimitives.ReadUInt64LittleEndian(b[12..]), BinaryPrimitives.ReadUInt64LittleEndian(b[20..]));
            p += 30 + keyLen;
        }
        if (p + (long)ttlCount * 16 + (long)chunkCount * ChunkEntrySize + 8 > s.Length) return null;
        var ttls = new (ulong, long)[ttlCount];
        for (int i = 0; i < ttlCount; i++, p += 16)
            ttls[i] = (BinaryPrimitives.ReadUInt64LittleEndian(s[p..]), BinaryPrimitives.ReadInt64LittleEndian(s[(p + 8)..]));
        var chunks = new (ulong, int)[chunkCount];
        var crcs = new uint[chunkCount];
        for (int i = 0; i < chunkCount; i++, p += ChunkEntrySize)
        {
            chunks[i] = (BinaryPrimitives.ReadUInt64LittleEndian(s[p..]), BinaryPrimitives.ReadInt32LittleEndian(s[(p + 8)..]));
            crcs[i] = BinaryPrimitives.ReadUInt32LittleEndian(s[(p + 12)..]);
            if (i > 0 && chunks[i].Item1 <= chunks[i - 1].Item1) return null;
        }
        long pagesStart = BinaryPrimitives.ReadInt64LittleEndian(s[p..]);
        if (pagesStart < head.Length || pagesStart + (long)chunkCount * PageSize > file.Length) return null;
        return new IndexImage(file, state, tailId, tailLen, tailCrc, blocks, subjects, ttls, chunks, crcs, pagesStart, onFailure);
    }

    /// <summary>Loads one page (a chunk of the sequence index) and checks its checksum; a failure is reported to the store.</summary>
    public bool Load(ulong chunkNo, IndexEntry[] into)
    {
        var bytes = MemoryMarshal.AsBytes(into.AsSpan());
        if (!ReadPage(chunkNo, bytes, out string? error))
        {
            _onFailure(error!);
            return false;
        }
        return true;
    }

    /// <summary>A reader's page-in without the store lock: nothing reported (the store retries under the lock with <see cref="Load"/>).</summary>
    public bool TryLoadDetached(ulong chunkNo, IndexEntry[] into) => ReadPage(chunkNo, MemoryMarshal.AsBytes(into.AsSpan()), out _);

    /// <summary>Copies the raw bytes of a page still on disk (for the next image); false if unreadable.</summary>
    public bool ReadPage(ulong chunkNo, Span<byte> into, out string? error)
    {
        error = null;
        int k = Array.BinarySearch(_chunkNos, chunkNo);
        if (k < 0)
        {
            error = $"index image has no page for index chunk {chunkNo}";
            return false;
        }
        try
        {
            if (_file.Read(into[..PageSize], _pagesStart + (long)k * PageSize) < PageSize || Crc32C.Compute(into[..PageSize]) != _crcs[k])
            {
                error = $"index image page {k} (chunk {chunkNo}) is damaged";
                return false;
            }
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException or ObjectDisposedException)
        {
            error = $"index image page {k} (chunk {chunkNo}) unreadable: {e.Message}";
            return false;
        }
        return true;
    }

    public void Dispose() => _file.Dispose();

    // ---------------- writing ----------------

    /// <summary>
    /// Writes a complete image to <paramref name="file"/> (a fresh .tmp file; the caller fsyncs and renames it).
    /// <paramref name="pageSource"/> yields, in ascending chunk order, each chunk to keep with its live count and
    /// a callback that fills its page bytes (from memory, or copied from the previous image); it returns false
    /// if the page cannot be produced (then no image is written).
    /// </summary>
    public static bool Write(IStoreFile file, Counters state, IReadOnlyList<BlockSummary> blocks, uint tailCrc,
        IEnumerable<SubjectRecord> subjects, int subjectCount, IReadOnlyList<(ulong Seq, long Expires)> ttls,
        IReadOnlyList<(ulong Chunk, int Live)> chunks, Func<int, Span<byte>, bool> fillPage)
    {
        using var ms = new MemoryStream(HeaderSize + blocks.Count * BlockEntrySize + chunks.Count * ChunkEntrySize + 64);
        Span<byte> h = stackalloc byte[HeaderSize];
        h.Clear();
        Magic.CopyTo(h);
        BinaryPrimitives.WriteUInt16LittleEndian(h[4..], Version);
        BinaryPrimitives.WriteUInt16LittleEndian(h[6..], (ushort)EntrySize);
        BinaryPrimitives.WriteUInt32LittleEndian(h[8..], blocks[^1].Id);
        BinaryPrimitives.WriteInt32LittleEndian(h[12..], blocks.Count);
        BinaryPrimitives.WriteInt64LittleEndian(h[16..], blocks[^1].Size);
        BinaryPrimitives.WriteUInt32LittleEndian(h[24..], tailCrc);
        BinaryPrimitives.WriteInt32LittleEndian(h[28..], subjectCount);
        BinaryPrimitives.WriteUInt64LittleEndian(h[32..], state.First);
        BinaryPrimitives.WriteUInt64LittleEndian(h[40..], state.Last);
        BinaryPrimitives.WriteInt64LittleEndian(h[48..], state.LastTs);
        BinaryPrimitives.WriteUInt64LittleEndian(h[56..], state.Msgs);
        BinaryPrimitives.WriteUInt64LittleEndian(h[64..], state.Bytes);
        BinaryPrimitives.WriteUInt64LittleEndian(h[72..], state.IndexBaseChunk);
        BinaryPrimitives.WriteUInt64LittleEndian(h[80..], state.IndexEnd);
        BinaryPrimitives.WriteInt32LittleEndian(h[88..], chunks.Count);
        BinaryPrimitives.WriteInt32LittleEndian(h[92..], ttls.Count);
        ms.Write(h); // head length (offset 96) is patched below
        Span<byte> b = stackalloc byte[BlockEntrySize];
        foreach (var blk in blocks)
        {
            b.Clear();
            BinaryPrimitives.WriteUInt32LittleEndian(b, blk.Id);
            BinaryPrimitives.WriteUInt64LittleEndian(b[8..], blk.StartSeq);
            BinaryPrimitives.WriteUInt64LittleEndian(b[16..], blk.Floor);
            BinaryPrimitives.WriteUInt64LittleEndian(b[24..], blk.LastMsgSeq);
            BinaryPrimitives.WriteInt64LittleEndian(b[32..], blk.Size);
            BinaryPrimitives.WriteInt32LittleEndian(b[40..], blk.Live);
            BinaryPrimitives.WriteInt32LittleEndian(b[44..], blk.Tombstones);
            ms.Write(b);
        }
        Span<byte> sh = stackalloc byte[30];
        int written = 0;
        foreach (var subj in subjects)
        {
            BinaryPrimitives.WriteInt32LittleEndian(sh, subj.Id);
            BinaryPrimitives.WriteUInt64LittleEndian(sh[4..], subj.Count);
            BinaryPrimitives.WriteUInt64LittleEndian(sh[12..], subj.First);
            BinaryPrimitives.WriteUInt64LittleEndian(sh[20..], subj.Last);
            BinaryPrimitives.WriteUInt16LittleEndian(sh[28..], (ushort)subj.Key.Length);
            ms.Write(sh);
            ms.Write(subj.Key);
            written++;
        }
        if (written != subjectCount) return false;
        Span<byte> t = stackalloc byte[16];
        foreach (var (seq, expires) in ttls)
        {
            BinaryPrimitives.WriteUInt64LittleEndian(t, seq);
            BinaryPrimitives.WriteInt64LittleEndian(t[8..], expires);
            ms.Write(t);
        }
        long tableAt = ms.Position;
        foreach (var (chunk, live) in chunks)
        {
            BinaryPrimitives.WriteUInt64LittleEndian(t, chunk);
            BinaryPrimitives.WriteInt32LittleEndian(t[8..], live);
            BinaryPrimitives.WriteUInt32LittleEndian(t[12..], 0); // page checksum, patched below
            ms.Write(t);
        }
        long headLen = ms.Position + 8 + 4;
        long pagesStart = (headLen + PageAlign - 1) / PageAlign * PageAlign;
        Span<byte> l = stackalloc byte[8];
        BinaryPrimitives.WriteInt64LittleEndian(l, pagesStart);
        ms.Write(l);
        ms.Write(stackalloc byte[4]); // head checksum
        var headBytes = ms.GetBuffer();
        BinaryPrimitives.WriteInt64LittleEndian(headBytes.AsSpan(96), headLen);

        // Pages first (their checksums go into the chunk table), then the head.
        var page = GC.AllocateUninitializedArray<byte>(PageSize);
        for (int k = 0; k < chunks.Count; k++)
        {
            if (!fillPage(k, page)) return false;
            BinaryPrimitives.WriteUInt32LittleEndian(headBytes.AsSpan((int)tableAt + k * ChunkEntrySize + 12), Crc32C.Compute(page));
            file.Write(page, pagesStart + (long)k * PageSize);
        }
        var head = headBytes.AsSpan(0, (int)headLen);
        BinaryPrimitives.WriteUInt32LittleEndian(head[^4..], Crc32C.Compute(head[..^4]));
        file.Write(head, 0);
        return true;
    }
}
