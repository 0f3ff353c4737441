using System.Buffers;
using System.Buffers.Binary;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using NatsBroker.Contracts;
using NatsBroker.Storage.Internal;

namespace NatsBroker.Storage.File;

/// <summary>
/// The index image (<c>idx/index.img</c>, FORMAT.md "Index image", version 4): the in-memory state of a store at a
/// checkpoint (counters, per-block summaries, subjects, TTLs) and the sequence index as pages: raw 48 KiB pages, and
/// compact pages (<see cref="CompactIndexPage"/>, 50 bytes per live entry) for chunks with few live entries. Version
/// 4 counts message sizes (the head's bytes, each entry's size) as nats-server does (FileStore.StoredSize); older
/// images (2 and 3: subject + headers + payload) are refused, so the store is rebuilt from its blocks, and the next
/// checkpoint writes a new version 4 file.
/// <para>
/// The file is append-only after its two superblocks: a checkpoint appends the pages that changed since the
/// previous one and a new "head" (everything but the pages, with a page table that points at the newest copy
/// of every page), fsyncs, then writes the superblock slot the previous checkpoint did not use and fsyncs again.
/// A crash at any point leaves the previous superblock, head and pages intact (nothing they reference is ever
/// overwritten); a torn superblock fails its checksum and the other one is used.
/// </para>
/// Open reads only a superblock and a head (O(blocks + subjects + index chunks)); each page is read the first
/// time an entry in it is touched (<see cref="IIndexPager"/>). This type owns the layout (encode and decode), the
/// open file, and the page table the pages are read through (replaced atomically when a checkpoint commits).
/// </summary>
internal sealed class IndexImage : IIndexPager, IDisposable
{
    public const string FileName = "index.img";
    public const ushort Version = 4;
    /// <summary>
    /// The oldest version still read. Versions 2 and 3 recorded sizes as subject + headers + payload and an entry
    /// does not say whether its message has headers, so they cannot be converted (FORMAT.md "Compatibility").
    /// </summary>
    public const ushort OldestReadable = 4;
    public const int HeaderSize = 104;
    public const int BlockEntrySize = 48;
    /// <summary>Page table entry (with the page's length: dense or compact).</summary>
    public const int PageEntrySize = 32;
    public const int SuperblockSize = 48;
    public const int PageAlign = 4096;
    /// <summary>Superblock slots are at 0 and 4096; pages and heads are appended from 8192 on.</summary>
    public const long DataStart = 2 * PageAlign;
    private static ReadOnlySpan<byte> Magic => "NBIM"u8;
    private static ReadOnlySpan<byte> SuperMagic => "NBIS"u8;
    public static int EntrySize => Unsafe.SizeOf<IndexEntry>();
    public static int PageSize => EntrySize * SequenceIndex.EntriesPerChunk;

    /// <summary>Stream counters and index layout recorded in the head.</summary>
    public readonly record struct Counters(ulong First, ulong Last, long LastTs, ulong Msgs, ulong Bytes, ulong IndexBaseChunk, ulong IndexEnd);

    /// <summary>One block as recorded (the last one is the newest block at the checkpoint; its first <see cref="Size"/> bytes are CRC-checked at open).</summary>
    public readonly record struct BlockSummary(uint Id, ulong StartSeq, ulong Floor, ulong LastMsgSeq, long Size, int Live, int Tombstones);

    public readonly record struct SubjectRecord(int Id, byte[] Key, ulong Count, ulong First, ulong Last);

    /// <summary>Where a page is in the file, its checksum and its length (<see cref="PageSize"/>: dense; less: compact).</summary>
    public readonly record struct PageRef(long Offset, uint Crc, int Length);

    /// <summary>A decoded head: the state of one checkpoint.</summary>
    public sealed class Head
    {
        public required long Generation;
        public required Counters State;
        public required uint TailCrc;
        public required BlockSummary[] Blocks;
        public required SubjectRecord[] Subjects;
        public required (ulong Seq, long Expires)[] Ttls;
        public required (ulong Chunk, int Live)[] Chunks;
        public required PageRef[] Pages;
        public BlockSummary Tail => Blocks[^1];
    }

    /// <summary>Chunk number → page, sorted; replaced whole (readers outside the store lock see one or the other).</summary>
    public sealed class PageTable
    {
        internal readonly ulong[] Chunks;
        internal readonly PageRef[] Pages;

        private PageTable(ulong[] chunks, PageRef[] pages) => (Chunks, Pages) = (chunks, pages);

        /// <summary>The page table of a head: O(pages), so a checkpoint builds it before it takes the store lock to commit.</summary>
        public static PageTable From(Head head)
        {
            var chunks = new ulong[head.Chunks.Length];
            for (int i = 0; i < chunks.Length; i++) chunks[i] = head.Chunks[i].Chunk;
            return new PageTable(chunks, head.Pages);
        }
    }

    private readonly IStoreFile _file;
    private readonly Action<string> _onFailure;
    private PageTable _map;

    /// <summary>Generation of the newest committed checkpoint (its superblock slot is Generation % 2).</summary>
    public long Generation { get; private set; }

    /// <summary>Where the next checkpoint appends (past everything the file holds, page-aligned).</summary>
    public long AppendAt { get; private set; }

    /// <summary>Bytes of pages the newest head references (the rest of the file past <see cref="DataStart"/> is garbage).</summary>
    public long LiveBytes { get; private set; }

    public IStoreFile File => _file;

    private IndexImage(IStoreFile file, Action<string> onFailure, Head head, long appendAt)
    {
        _file = file;
        _onFailure = onFailure;
        _map = PageTable.From(head);
        Generation = head.Generation;
        AppendAt = appendAt;
        LiveBytes = PageBytes(head.Pages);
    }

    private static long PageBytes(PageRef[] pages)
    {
        long n = 0;
        foreach (var p in pages) n += p.Length;
        return n;
    }

    /// <summary>An image whose file was just written (by <see cref="WriteCheckpoint"/> into a new file) and committed.</summary>
    public static IndexImage Adopt(IStoreFile file, Action<string> onFailure, Head head, long appendAt) => new(file, onFailure, head, appendAt);

    /// <summary>The page of <paramref name="chunk"/> in the newest checkpoint, if it has one.</summary>
    public bool TryGetPage(ulong chunk, out PageRef page)
    {
        var map = Volatile.Read(ref _map);
        int k = Array.BinarySearch(map.Chunks, chunk);
        page = k >= 0 ? map.Pages[k] : default;
        return k >= 0;
    }

    /// <summary>Under the store lock: a checkpoint appended to this file committed; its page table (<see cref="PageTable.From"/>) becomes current.</summary>
    public void Commit(PageTable table, Head head, long appendAt)
    {
        Volatile.Write(ref _map, table);
        Generation = head.Generation;
        AppendAt = appendAt;
        LiveBytes = PageBytes(head.Pages);
    }

    /// <summary>
    /// Reads and checks the newest valid checkpoint of an image; null (with <paramref name="problem"/> set when it
    /// is worth reporting) if the file is missing, of another version or layout, or has no valid superblock and
    /// head. Keeps the file open for the page reads and later checkpoints.
    /// </summary>
    public static IndexImage? TryRead(IStoreFileSystem fs, string path, Action<string> onFailure, out Head? head, out string? problem)
    {
        problem = null;
        head = null;
        if (!BitConverter.IsLittleEndian || !fs.FileExists(path)) return null;
        IStoreFile? file = null;
        try
        {
            file = fs.OpenFile(path, create: false);
            long length = file.Length;
            var candidates = new List<(long Gen, long Off, long Len, uint Crc, ushort Version)>(2);
            Span<byte> sb = stackalloc byte[SuperblockSize];
            for (int slot = 0; slot < 2; slot++)
            {
                if (file.Read(sb, slot * PageAlign) < SuperblockSize || !sb[..4].SequenceEqual(SuperMagic)) continue;
                ushort version = BinaryPrimitives.ReadUInt16LittleEndian(sb[4..]);
                if (version is < OldestReadable or > Version || BinaryPrimitives.ReadUInt16LittleEndian(sb[6..]) != EntrySize)
                {
                    problem = version is 2 or 3
                        ? $"index image {path} is version {version}, which counted message sizes differently; ignored (rebuilt from the blocks)"
                        : $"index image {path} is of another version or layout; ignored";
                    continue;
                }
                if (Crc32C.Compute(sb[..44]) != BinaryPrimitives.ReadUInt32LittleEndian(sb[44..])) continue; // torn: the other slot holds the previous checkpoint
                candidates.Add((BinaryPrimitives.ReadInt64LittleEndian(sb[8..]), BinaryPrimitives.ReadInt64LittleEndian(sb[16..]),
                    BinaryPrimitives.ReadInt64LittleEndian(sb[24..]), BinaryPrimitives.ReadUInt32LittleEndian(sb[32..]), version));
            }
            candidates.Sort((a, b) => b.Gen.CompareTo(a.Gen));
            foreach (var (gen, off, len, crc, version) in candidates)
            {
                if (off < DataStart || len < HeaderSize || off + len > length || len > int.MaxValue) continue;
                var bytes = new byte[len];
                if (file.Read(bytes, off) < len || Crc32C.Compute(bytes) != crc) continue;
                var h = Decode(bytes, length, version);
                if (h is null || h.Generation != gen) continue;
                head = h;
                problem = null;
                long end = (length + PageAlign - 1) / PageAlign * PageAlign;
                return new IndexImage(file, onFailure, h, Math.Max(end, DataStart));
            }
            problem ??= candidates.Count == 0 ? $"index image {path} has no valid superblock; ignored" : $"index image {path} has no valid head; ignored";
            file.Dispose();
            return null;
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException)
        {
            problem = $"index image {path} unreadable ({e.Message}); ignored";
            file?.Dispose();
            return null;
        }
    }

    /// <summary>Decodes a head of <paramref name="version"/> (its superblock's; the head must say the same).</summary>
    private static Head? Decode(byte[] bytes, long fileLength, ushort version)
    {
        var s = bytes.AsSpan();
        if (!s[..4].SequenceEqual(Magic) || BinaryPrimitives.ReadUInt16LittleEndian(s[4..]) != version || BinaryPrimitives.ReadUInt16LittleEndian(s[6..]) != EntrySize) return null;
        const int pageEntry = PageEntrySize;
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
        int pageCount = BinaryPrimitives.ReadInt32LittleEndian(s[88..]);
        int ttlCount = BinaryPrimitives.ReadInt32LittleEndian(s[92..]);
        long gen = BinaryPrimitives.ReadInt64LittleEndian(s[96..]);
        if (blockCount < 1 || subjectCount < 0 || pageCount < 0 || ttlCount < 0) return null;
        int p = HeaderSize;
        if ((long)blockCount * BlockEntrySize + (long)ttlCount * 16 + (long)pageCount * pageEntry + p > s.Length) return null;
        var blocks = new BlockSummary[blockCount];
        for (int i = 0; i < blockCount; i++, p += BlockEntrySize)
        {
            var b = s[p..];
            blocks[i] = new BlockSummary(BinaryPrimitives.ReadUInt32LittleEndian(b), BinaryPrimitives.ReadUInt64LittleEndian(b[8..]),
                BinaryPrimitives.ReadUInt64LittleEndian(b[16..]), BinaryPrimitives.ReadUInt64LittleEndian(b[24..]),
                BinaryPrimitives.ReadInt64LittleEndian(b[32..]), BinaryPrimitives.ReadInt32LittleEndian(b[40..]), BinaryPrimitives.ReadInt32LittleEndian(b[44..]));
            if (i > 0 && blocks[i].Id <= blocks[i - 1].Id) return null;
        }
        if (blocks[^1].Id != tailId || blocks[^1].Size != tailLen) return null;
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
        if (p + (long)ttlCount * 16 + (long)pageCount * pageEntry != s.Length) return null;
        var ttls = new (ulong, long)[ttlCount];
        for (int i = 0; i < ttlCount; i++, p += 16)
            ttls[i] = (BinaryPrimitives.ReadUInt64LittleEndian(s[p..]), BinaryPrimitives.ReadInt64LittleEndian(s[(p + 8)..]));
        var chunks = new (ulong, int)[pageCount];
        var pages = new PageRef[pageCount];
        for (int i = 0; i < pageCount; i++, p += pageEntry)
        {
            chunks[i] = (BinaryPrimitives.ReadUInt64LittleEndian(s[p..]), BinaryPrimitives.ReadInt32LittleEndian(s[(p + 8)..]));
            int length = BinaryPrimitives.ReadInt32LittleEndian(s[(p + 24)..]);
            pages[i] = new PageRef(BinaryPrimitives.ReadInt64LittleEndian(s[(p + 16)..]), BinaryPrimitives.ReadUInt32LittleEndian(s[(p + 12)..]), length);
            if (i > 0 && chunks[i].Item1 <= chunks[i - 1].Item1) return null;
            // A page is dense (PageSize) or compact (a whole number of entries, fewer than a dense page holds).
            if (length != PageSize && (length < 0 || length % CompactIndexPage.BytesPerEntry != 0 || length / CompactIndexPage.BytesPerEntry > SequenceIndex.EntriesPerChunk)) return null;
            if (pages[i].Offset < DataStart || pages[i].Offset + length > fileLength) return null;
        }
        return new Head { Generation = gen, State = state, TailCrc = tailCrc, Blocks = blocks, Subjects = subjects, Ttls = ttls, Chunks = chunks, Pages = pages };
    }

    /// <summary>Loads one page (a chunk of the sequence index) and checks its checksum; a failure is reported to the store.</summary>
    public bool Load(ulong chunkNo, Span<IndexEntry> into)
    {
        if (!LoadEntries(chunkNo, into, out string? error))
        {
            _onFailure(error!);
            return false;
        }
        return true;
    }

    /// <summary>A reader's page-in without the store lock: nothing reported (the store retries under the lock with <see cref="Load"/>).</summary>
    public bool TryLoadDetached(ulong chunkNo, Span<IndexEntry> into) => LoadEntries(chunkNo, into, out _);

    /// <summary>A page as the chunk's dense entries: a dense page is read straight into them, a compact one read and expanded.</summary>
    private bool LoadEntries(ulong chunkNo, Span<IndexEntry> into, out string? error)
    {
        var bytes = MemoryMarshal.AsBytes(into);
        if (!TryGetPage(chunkNo, out var page))
        {
            error = $"index image has no page for index chunk {chunkNo}";
            return false;
        }
        if (page.Length == PageSize) return ReadPage(page, chunkNo, bytes, out error);
        // A cold path (once per chunk paged in); at most 12.5 KiB for the compact pages this engine writes.
        var raw = ArrayPool<byte>.Shared.Rent(Math.Max(page.Length, 1));
        try
        {
            if (!ReadPage(page, chunkNo, raw, out error)) return false;
            if (CompactIndexPage.Decode(raw.AsSpan(0, page.Length), into, out var why)) return true;
            error = $"index image page at offset {page.Offset} (chunk {chunkNo}) is damaged: {why}";
            return false;
        }
        finally
        {
            ArrayPool<byte>.Shared.Return(raw);
        }
    }

    /// <summary>
    /// Copies the raw bytes of a page (dense or compact, <paramref name="length"/>) into <paramref name="into"/> (at
    /// least <see cref="PageSize"/> bytes) and checks its checksum; false if unreadable or damaged.
    /// </summary>
    public bool ReadPage(ulong chunkNo, Span<byte> into, out int length, out string? error)
    {
        length = 0;
        if (!TryGetPage(chunkNo, out var page))
        {
            error = $"index image has no page for index chunk {chunkNo}";
            return false;
        }
        length = page.Length;
        return ReadPage(page, chunkNo, into, out error);
    }

    /// <summary>
    /// Reads the page <paramref name="page"/> refers to (looked up once by the caller: a checkpoint committing meanwhile
    /// may point the chunk at a page of another length) and checks its checksum.
    /// </summary>
    private bool ReadPage(PageRef page, ulong chunkNo, Span<byte> into, out string? error)
    {
        error = null;
        int length = page.Length;
        try
        {
            if (length > into.Length || _file.Read(into[..length], page.Offset) < length || Crc32C.Compute(into[..length]) != page.Crc)
            {
                error = $"index image page at offset {page.Offset} (chunk {chunkNo}) is damaged";
                return false;
            }
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException or ObjectDisposedException)
        {
            error = $"index image page at offset {page.Offset} (chunk {chunkNo}) unreadable: {e.Message}";
            return false;
        }
        return true;
    }

    public void Dispose() => _file.Dispose();

    // ---------------- writing ----------------

    /// <summary>What a checkpoint captured under the store lock (everything but the page contents).</summary>
    public sealed class Capture
    {
        public required Counters State;
        public required BlockSummary[] Blocks;
        public required uint TailCrc;
        public required SubjectRecord[] Subjects;
        public required (ulong Seq, long Expires)[] Ttls;
        public required SequenceIndex.IndexFreeze Freeze;
    }

    /// <summary>
    /// Appends a checkpoint to <paramref name="file"/> from <paramref name="appendAt"/> (page-aligned): the pages
    /// <paramref name="page"/> produces into the span it is given (a negative offset = "write the first Length bytes of
    /// the span": a dense or a compact page; otherwise the page is reused where the previous checkpoint has it), packed
    /// one after the other, and then the head. Does not fsync nor write a superblock (see
    /// <see cref="WriteSuperblock"/>). Returns the head and the new append position; throws IOException on
    /// write errors; null if a page could not be produced (nothing is committed then).
    /// </summary>
    public static (Head Head, long HeadOffset, byte[] HeadBytes, long End)? WriteCheckpoint(IStoreFile file, long appendAt, long generation, Capture c,
        Func<int, Span<byte>, PageRef?> page)
    {
        var chunks = c.Freeze.Chunks;
        var refs = new PageRef[chunks.Count];
        var buf = GC.AllocateUninitializedArray<byte>(PageSize * 16);
        long pos = appendAt;
        int pending = 0; // bytes in buf, to be written at pendingAt
        long pendingAt = pos;
        for (int k = 0; k < chunks.Count; k++)
        {
            // Batched writes of up to 768 KiB (16 dense pages, or thousands of compact ones): few syscalls, bounded memory.
            if (pending + PageSize > buf.Length)
            {
                file.Write(buf.AsSpan(0, pending), pendingAt);
                pendingAt += pending;
                pending = 0;
            }
            var slot = buf.AsSpan(pending, PageSize);
            var reused = page(k, slot);
            if (reused is { } r && r.Offset >= 0)
            {
                refs[k] = r;
                continue;
            }
            if (reused is not { } w || w.Length < 0 || w.Length > PageSize) return null;
            refs[k] = new PageRef(pos, Crc32C.Compute(slot[..w.Length]), w.Length);
            pos += w.Length;
            pending += w.Length;
        }
        if (pending > 0) file.Write(buf.AsSpan(0, pending), pendingAt);
        var head = new Head
        {
            Generation = generation,
            State = c.State,
            TailCrc = c.TailCrc,
            Blocks = c.Blocks,
            Subjects = c.Subjects,
            Ttls = c.Ttls,
            Chunks = [.. chunks.Select(x => (x.Chunk, x.Live))],
            Pages = refs,
        };
        var bytes = EncodeHead(head);
        file.Write(bytes, pos);
        long end = (pos + bytes.Length + PageAlign - 1) / PageAlign * PageAlign;
        return (head, pos, bytes, end);
    }

    private static byte[] EncodeHead(Head head)
    {
        using var ms = new MemoryStream(HeaderSize + head.Blocks.Length * BlockEntrySize + head.Pages.Length * PageEntrySize + 64);
        Span<byte> h = stackalloc byte[HeaderSize];
        h.Clear();
        Magic.CopyTo(h);
        var blocks = head.Blocks;
        BinaryPrimitives.WriteUInt16LittleEndian(h[4..], Version);
        BinaryPrimitives.WriteUInt16LittleEndian(h[6..], (ushort)EntrySize);
        BinaryPrimitives.WriteUInt32LittleEndian(h[8..], blocks[^1].Id);
        BinaryPrimitives.WriteInt32LittleEndian(h[12..], blocks.Length);
        BinaryPrimitives.WriteInt64LittleEndian(h[16..], blocks[^1].Size);
        BinaryPrimitives.WriteUInt32LittleEndian(h[24..], head.TailCrc);
        BinaryPrimitives.WriteInt32LittleEndian(h[28..], head.Subjects.Length);
        var st = head.State;
        BinaryPrimitives.WriteUInt64LittleEndian(h[32..], st.First);
        BinaryPrimitives.WriteUInt64LittleEndian(h[40..], st.Last);
        BinaryPrimitives.WriteInt64LittleEndian(h[48..], st.LastTs);
        BinaryPrimitives.WriteUInt64LittleEndian(h[56..], st.Msgs);
        BinaryPrimitives.WriteUInt64LittleEndian(h[64..], st.Bytes);
        BinaryPrimitives.WriteUInt64LittleEndian(h[72..], st.IndexBaseChunk);
        BinaryPrimitives.WriteUInt64LittleEndian(h[80..], st.IndexEnd);
        BinaryPrimitives.WriteInt32LittleEndian(h[88..], head.Pages.Length);
        BinaryPrimitives.WriteInt32LittleEndian(h[92..], head.Ttls.Length);
        BinaryPrimitives.WriteInt64LittleEndian(h[96..], head.Generation);
        ms.Write(h);
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
        foreach (var subj in head.Subjects)
        {
            BinaryPrimitives.WriteInt32LittleEndian(sh, subj.Id);
            BinaryPrimitives.WriteUInt64LittleEndian(sh[4..], subj.Count);
            BinaryPrimitives.WriteUInt64LittleEndian(sh[12..], subj.First);
            BinaryPrimitives.WriteUInt64LittleEndian(sh[20..], subj.Last);
            BinaryPrimitives.WriteUInt16LittleEndian(sh[28..], (ushort)subj.Key.Length);
            ms.Write(sh);
            ms.Write(subj.Key);
        }
        Span<byte> t = stackalloc byte[PageEntrySize];
        foreach (var (seq, expires) in head.Ttls)
        {
            BinaryPrimitives.WriteUInt64LittleEndian(t, seq);
            BinaryPrimitives.WriteInt64LittleEndian(t[8..], expires);
            ms.Write(t[..16]);
        }
        for (int k = 0; k < head.Pages.Length; k++)
        {
            BinaryPrimitives.WriteUInt64LittleEndian(t, head.Chunks[k].Chunk);
            BinaryPrimitives.WriteInt32LittleEndian(t[8..], head.Chunks[k].Live);
            BinaryPrimitives.WriteUInt32LittleEndian(t[12..], head.Pages[k].Crc);
            BinaryPrimitives.WriteInt64LittleEndian(t[16..], head.Pages[k].Offset);
            BinaryPrimitives.WriteInt32LittleEndian(t[24..], head.Pages[k].Length);
            BinaryPrimitives.WriteUInt32LittleEndian(t[28..], 0);
            ms.Write(t);
        }
        return ms.ToArray();
    }

    /// <summary>Writes the superblock of <paramref name="generation"/> into its slot (generation % 2); the caller fsyncs.</summary>
    public static void WriteSuperblock(IStoreFile file, long generation, long headOffset, byte[] headBytes)
    {
        Span<byte> sb = stackalloc byte[SuperblockSize];
        sb.Clear();
        SuperMagic.CopyTo(sb);
        BinaryPrimitives.WriteUInt16LittleEndian(sb[4..], Version);
        BinaryPrimitives.WriteUInt16LittleEndian(sb[6..], (ushort)EntrySize);
        BinaryPrimitives.WriteInt64LittleEndian(sb[8..], generation);
        BinaryPrimitives.WriteInt64LittleEndian(sb[16..], headOffset);
        BinaryPrimitives.WriteInt64LittleEndian(sb[24..], headBytes.Length);
        BinaryPrimitives.WriteUInt32LittleEndian(sb[32..], Crc32C.Compute(headBytes));
        BinaryPrimitives.WriteUInt32LittleEndian(sb[44..], Crc32C.Compute(sb[..44]));
        file.Write(sb, (generation & 1) * PageAlign);
    }
}
