using System.Runtime.CompilerServices;

namespace NatsBroker.Storage.Internal;

/// <summary>
/// Per-sequence index entry shared by the engines. <see cref="Location"/> and <see cref="Aux"/> are
/// engine-defined (memstore: slab/offset and header length; filestore: block/offset and record length).
/// Entries of one subject form a doubly linked list through <see cref="Prev"/>/<see cref="Next"/> (0 = none),
/// which gives O(1) last-by-subject, per-subject limits and purge-by-subject in O(removed).
/// </summary>
internal struct IndexEntry
{
    public long Location;
    public long Timestamp;
    public ulong Prev;
    public ulong Next;
    /// <summary>Subject id, or -1 for a deleted sequence or a gap.</summary>
    public int SubjectId;
    /// <summary>Subject + headers + payload bytes.</summary>
    public int Size;
    public int Aux;
    public int Flags;

    public const int FlagTtl = 1;
    public readonly bool IsLive => SubjectId >= 0;
}

/// <summary>
/// Sequence-indexed ring of fixed-size chunks of <see cref="IndexEntry"/>. Appends and lookups are O(1);
/// chunks below the first sequence are recycled, so a steady-state append allocates nothing.
/// </summary>
internal sealed class SequenceIndex
{
    // 1024 entries x 48 B = 48 KiB: below the large-object threshold, so growth never allocates on the LOH.
    private const int Shift = 10;
    private const int ChunkSize = 1 << Shift;
    private const int Mask = ChunkSize - 1;
    private const int MaxFree = 8;

    private IndexEntry[][] _chunks = new IndexEntry[16][];
    private int _head;
    private int _count;
    private ulong _baseChunk;
    private readonly Stack<IndexEntry[]> _free = new();

    /// <summary>One past the highest sequence held.</summary>
    public ulong End { get; private set; } = 1;

    /// <summary>Lowest sequence the index may still hold.</summary>
    public ulong Low => _baseChunk << Shift;

    public void Reset(ulong nextSequence)
    {
        for (int i = 0; i < _count; i++) Release(_chunks[(_head + i) & (_chunks.Length - 1)]);
        Array.Clear(_chunks);
        _head = 0;
        _count = 0;
        _baseChunk = nextSequence >> Shift;
        End = nextSequence;
    }

    public bool Holds(ulong seq) => seq < End && seq >= Low;

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public ref IndexEntry Get(ulong seq)
    {
        ulong k = (seq >> Shift) - _baseChunk;
        return ref _chunks[(int)(((ulong)_head + k) & (ulong)(_chunks.Length - 1))][seq & Mask];
    }

    /// <summary>Appends the entry for sequence <see cref="End"/> and returns it (zeroed).</summary>
    public ref IndexEntry Add()
    {
        ulong seq = End;
        ulong k = (seq >> Shift) - _baseChunk;
        if (k >= (ulong)_count)
        {
            if (_count == _chunks.Length) Grow();
            _chunks[(_head + _count) & (_chunks.Length - 1)] = Rent();
            _count++;
        }
        End = seq + 1;
        ref var e = ref Get(seq);
        e = default;
        return ref e;
    }

    /// <summary>Forgets the entry just added (a failed append).</summary>
    public void RemoveLast() => End--;

    /// <summary>Recycles every chunk wholly below <paramref name="seq"/>.</summary>
    public void TrimBelow(ulong seq)
    {
        while (_count > 1 && ((_baseChunk + 1) << Shift) <= seq)
        {
            Release(_chunks[_head]);
            _chunks[_head] = null!;
            _head = (_head + 1) & (_chunks.Length - 1);
            _baseChunk++;
            _count--;
        }
    }

    private void Grow()
    {
        var n = new IndexEntry[_chunks.Length * 2][];
        for (int i = 0; i < _count; i++) n[i] = _chunks[(_head + i) & (_chunks.Length - 1)];
        _chunks = n;
        _head = 0;
    }

    private IndexEntry[] Rent() => _free.Count > 0 ? _free.Pop() : new IndexEntry[ChunkSize];

    private void Release(IndexEntry[]? c)
    {
        if (c is not null && _free.Count < MaxFree) _free.Push(c);
    }
}
