using System.Numerics;
using System.Runtime.CompilerServices;

namespace NatsBroker.Storage.Internal;

/// <summary>
/// Sparse chunks: a chunk whose live entries fall to <see cref="SparseMax"/> (a quarter) is rebuilt as a
/// <see cref="SparseChunk"/>, so the index costs at most about 4 x 50 bytes per live message beyond the dense chunks,
/// plus a few bytes of ring slot per 1024 sequences of span, instead of 48 KiB per chunk holding any live message.
/// <para>
/// Why this and not nats-server's layout: Go's filestore keeps per block only first/last/counters and a delete set
/// (<c>msgBlock.dmap</c>, an <c>avl.SequenceSet</c> of removed sequences), plus a per-block cache of record offsets
/// (<c>cache.idx</c>) and per-subject state (<c>fss</c>) that are loaded from the block on demand and expire. Its
/// memory follows the deletes and the blocks recently read. Our index is the per-sequence entry (location, size,
/// timestamp, the subject's linked list) that every read, per-subject limit and purge walks without touching the
/// block; replacing it with per-block delete sets would move all of that to block reads. Keeping the entry and
/// making only its container follow the live count is the smallest change: lookups stay O(1) in dense chunks and
/// become a binary search over at most 256 offsets in sparse ones. In the file engine's index image a chunk with at
/// most 256 live entries is written as a compact page (<see cref="CompactIndexPage"/>, image version 3), and a page
/// loaded with few live entries is compacted as it comes in.
/// </para>
/// <para>
/// Never sparse: the chunk being appended to (entries become live only by appending, so a sparse chunk only loses
/// entries) and the lowest chunk (front removals by limits, max age and TTL empty it entry by entry and then trim
/// it: compacting it on the way would allocate for memory about to be freed; a stream whose first message never
/// goes keeps that one chunk dense). Sparse chunks are pooled per power-of-two capacity, so a steady workload that
/// keeps turning chunks sparse (a KV bucket) allocates nothing once warm.
/// </para>
/// </summary>
internal sealed partial class SequenceIndex
{
    /// <summary>Bytes per index entry (the image's page layout depends on it, see <see cref="IndexEntry"/>).</summary>
    public const int EntrySize = 48;

    /// <summary>A dense chunk with at most this many live entries becomes sparse (a quarter: 256 x 50 B = 12.5 KiB vs 48 KiB).</summary>
    public const int SparseMax = ChunkSize / 4;

    /// <summary>Sparse chunks kept for reuse per capacity class (powers of two up to <see cref="SparseMax"/>).</summary>
    private const int SparsePoolPerClass = 8;

    private readonly Stack<SparseChunk>[] _sparsePool = NewSparsePool();
    private long _sparseBytes;
    private long _sparsePoolBytes;

    /// <summary>Chunks held in sparse form.</summary>
    public int SparseChunks { get; private set; }

    private static Stack<SparseChunk>[] NewSparsePool()
    {
        var p = new Stack<SparseChunk>[BitOperations.Log2(SparseMax) + 1];
        for (int i = 0; i < p.Length; i++) p[i] = new Stack<SparseChunk>();
        return p;
    }

    /// <summary>
    /// Approximate managed bytes the index holds: dense chunks (48 KiB each), sparse chunks, both pools, and the
    /// per-chunk ring (slots from the lowest chunk to the newest, 32 bytes each). What a stats endpoint and the
    /// memory tests read.
    /// </summary>
    public long MemoryBytes =>
        (long)(AllocatedChunks + _free.Count) * ChunkSize * EntrySize
        + _sparseBytes + _sparsePoolBytes
        + (long)_slots.Length * Unsafe.SizeOf<ChunkSlot>();

    /// <summary>Whether chunk slot <paramref name="slot"/> (chunk <paramref name="chunkNo"/>) may be held sparse.</summary>
    /// Neither the chunk of <see cref="End"/> nor that of End - 1: an append failed after <see cref="Add"/> moves End
    /// back by one (<see cref="RemoveLast"/>), possibly into the previous chunk, which must then still be dense.
    private bool MayBeSparse(int slot, ulong chunkNo) => slot != _head && chunkNo != (End >> Shift) && chunkNo != ((End - 1) >> Shift);

    /// <summary>
    /// A dense chunk with few live entries left: rebuilt sparse (the dense array goes back to the pool, or to a running
    /// capture that froze it). Callers must not hold a ref into the chunk.
    /// </summary>
    private void CompactIfSparse(int slot, ulong chunkNo)
    {
        var c = _slots[slot].Dense;
        if (c is null || _slots[slot].Live > SparseMax || _slots[slot].Live <= 0 || !MayBeSparse(slot, chunkNo)) return;
        int live = 0;
        foreach (ref readonly var e in c.Span) if (e.IsLive) live++;
        if (live > SparseMax) return; // counts disagree (cannot happen): stay dense rather than lose an entry
        var sp = RentSparse(live);
        sp.FillFrom(c.Span);
        Install(slot, sp);
    }

    /// <summary>A sparse chunk mostly dead (live at most a quarter of its capacity): rebuilt with a smaller capacity.</summary>
    private void ShrinkIfSparse(int slot)
    {
        var sp = _slots[slot].Sparse;
        int live = _slots[slot].Live;
        if (sp is null || live <= 0 || live > sp.Capacity / 4 || slot == _head) return;
        var n = RentSparse(live);
        n.FillFrom(sp);
        Install(slot, n);
    }

    /// <summary>Puts a filled sparse chunk in the slot in place of what it held (dense or sparse, released first).</summary>
    private void Install(int slot, SparseChunk sp)
    {
        ReleaseSlot(slot);
        _slots[slot].Sparse = sp;
        SparseChunks++;
        _sparseBytes += sp.HeapBytes;
    }

    /// <summary>Cold path of <see cref="Get"/> for a sparse chunk: the entry, or the scratch dead entry.</summary>
    private ref IndexEntry GetSparse(SparseChunk sp, ulong seq)
    {
        int i = sp.IndexOf((int)(seq & Mask));
        if (i >= 0) return ref sp.Entries[i];
        return ref Dead();
    }

    private SparseChunk RentSparse(int live)
    {
        int cap = (int)BitOperations.RoundUpToPowerOf2((uint)Math.Max(live, 1));
        var pool = _sparsePool[BitOperations.Log2((uint)cap)];
        if (pool.Count > 0)
        {
            var sp = pool.Pop();
            _sparsePoolBytes -= sp.HeapBytes;
            sp.Count = 0;
            return sp;
        }
        return new SparseChunk(cap);
    }

    private void ReturnSparse(SparseChunk sp)
    {
        SparseChunks--;
        _sparseBytes -= sp.HeapBytes;
        var pool = _sparsePool[BitOperations.Log2((uint)sp.Capacity)];
        if (pool.Count >= SparsePoolPerClass) return;
        pool.Push(sp);
        _sparsePoolBytes += sp.HeapBytes;
    }

    /// <summary>A frozen sparse chunk leaves the index whole (handed to the capture, which owns it from then on).</summary>
    private void ForgetSparse(SparseChunk sp)
    {
        SparseChunks--;
        _sparseBytes -= sp.HeapBytes;
    }
}
