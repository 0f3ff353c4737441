using System.Runtime.CompilerServices;

namespace NatsBroker.Storage.Internal;

/// <summary>
/// Per-sequence index entry shared by the engines. <see cref="Location"/> and <see cref="Aux"/> are
/// engine-defined (memstore: slab/offset and header length; filestore: block/offset and record length).
/// Entries of one subject form a doubly linked list through <see cref="Prev"/>/<see cref="Next"/> (0 = none),
/// which gives O(1) last-by-subject, per-subject limits and purge-by-subject in O(removed).
/// The file engine persists this struct raw (48 bytes, little-endian, field order as declared) in its index image
/// (storage/filestore/FORMAT.md "Index image"): changing the fields needs a new image version there.
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

/// <summary>Loads a chunk of index entries the engine kept on disk (see <see cref="SequenceIndex.RestorePaged"/>).</summary>
internal interface IIndexPager
{
    /// <summary>Fills <paramref name="into"/> (<see cref="SequenceIndex.EntriesPerChunk"/> entries) with chunk <paramref name="chunkNo"/>; false = unreadable (the engine reports it).</summary>
    bool Load(ulong chunkNo, Span<IndexEntry> into);

    /// <summary>
    /// Like <see cref="Load"/>, but called WITHOUT the store lock (a reader's deferred page-in) and reports
    /// nothing: false (unreadable, damaged, or the pager closed meanwhile) makes the caller retry under the
    /// lock with <see cref="Load"/>, which reports the failure exactly.
    /// </summary>
    bool TryLoadDetached(ulong chunkNo, Span<IndexEntry> into);
}

/// <summary>
/// Sequence-indexed ring of fixed-size chunks of <see cref="IndexEntry"/>. Appends and lookups are O(1);
/// chunks below the first sequence are recycled, so a steady-state append allocates nothing.
/// <para>
/// Sparse: each chunk counts its live entries, and a chunk whose entries are all deleted (and that is not the
/// one being appended to) is released, as are chunks inside skipped ranges. Memory therefore follows the live
/// messages, not the span from first to last sequence (a KV bucket where one key is never updated keeps a
/// first sequence far behind). A released chunk reads as deleted entries (<see cref="Get"/> returns a scratch
/// dead entry); callers write only through entries they checked are live.
/// </para>
/// <para>
/// Sparse chunks (SequenceIndex.Sparse.cs): a chunk whose live entries fall to a quarter is held as a sorted array
/// of its live entries (binary search), so the memory also follows the live messages inside chunks that still hold
/// some: a stream where scattered removals leave one message in a thousand costs about 50 bytes per live entry plus
/// a ring slot per 1024 sequences, not 48 KiB per chunk.
/// </para>
/// <para>
/// Paged (file engine, fast open): <see cref="RestorePaged"/> makes every chunk "on disk" with only its live
/// count in memory; the first touch of any entry in such a chunk loads it through the <see cref="IIndexPager"/>
/// (under the caller's lock). The hot path is unchanged: only a null chunk slot looks at the paged flag.
/// </para>
/// </summary>
internal sealed partial class SequenceIndex
{
    // 1024 entries x 48 B = 48 KiB (IndexChunk.cs: managed for a small index, huge-page memory for a growing one).
    private const int Shift = 10;
    private const int ChunkSize = 1 << Shift;
    private const int Mask = ChunkSize - 1;
    private const int MaxFree = 8;

    private IndexChunk?[] _chunks = new IndexChunk?[16];
    private int[] _live = new int[16];
    /// <summary>Chunk not in memory but on the engine's disk (<see cref="IIndexPager"/>); its <see cref="_live"/> count is known.</summary>
    private bool[] _paged = new bool[16];
    /// <summary>Chunk written since the engine last captured it for an index image (<see cref="Freeze"/>).</summary>
    private bool[] _dirty = new bool[16];
    /// <summary>0, or 1 + the position of the chunk in the running <see cref="_freeze"/> (copy-on-write pending).</summary>
    private int[] _frozen = new int[16];
    private IndexFreeze? _freeze;
    /// <summary>
    /// Chunk numbers whose <see cref="_dirty"/> flag went from false to true since the last <see cref="Freeze"/>, so a
    /// capture finds what changed in O(changes) instead of scanning every chunk (SequenceIndex.Freeze.cs). Bounded:
    /// past <see cref="_chunks"/>.Length entries it is dropped and <see cref="_dirtyOverflow"/> makes the next
    /// capture scan the flags instead (an engine that never captures, like the memory engine, pays nothing more).
    /// </summary>
    private readonly List<ulong> _dirtyList = [];
    private bool _dirtyOverflow;
    private IIndexPager? _pager;
    private bool _missed;
    private ulong _missedChunk;
    private int _head;
    private int _count;
    private ulong _baseChunk;
    private readonly Stack<IndexChunk> _free = new();
    private IndexEntry _dead;

    /// <summary>One past the highest sequence held.</summary>
    public ulong End { get; private set; } = 1;

    /// <summary>Lowest sequence the index may still hold.</summary>
    public ulong Low => _baseChunk << Shift;

    /// <summary>Chunks currently allocated (1024 entries each): the index's memory is this x 48 KiB.</summary>
    public int AllocatedChunks { get; private set; }

    /// <summary>Chunks still on disk (restored by <see cref="RestorePaged"/> and not touched since).</summary>
    public int PagedChunks { get; private set; }

    /// <summary>
    /// Set by a reader under the lock: a touch of a paged chunk does not load it (a 48 KiB pread under the store
    /// lock would stall appends) but reads as deleted entries and is recorded (<see cref="TakeMiss"/>); the
    /// reader then discards what it computed, loads the page without the lock (<see cref="ReadDetached"/>,
    /// <see cref="InstallDetached"/>) and starts again.
    /// </summary>
    public bool DeferPaging { get; set; }

    /// <summary>A paged chunk was touched while <see cref="DeferPaging"/> was set (walks stop early: their result is void).</summary>
    public bool HasMiss => _missed;

    /// <summary>True (with the first chunk missed) if a paged chunk was touched while <see cref="DeferPaging"/> was set; clears it.</summary>
    public bool TakeMiss(out ulong chunkNo)
    {
        chunkNo = _missedChunk;
        if (!_missed) return false;
        _missed = false;
        return true;
    }

    /// <summary>
    /// Reads chunk <paramref name="chunkNo"/> from the pager WITHOUT the lock (the pager is fixed once restored;
    /// its reads are positional). A fresh chunk: a cold path, once per chunk. Null if it cannot be read now.
    /// </summary>
    public IndexChunk? ReadDetached(ulong chunkNo)
    {
        var pager = Volatile.Read(ref _pager);
        if (pager is null) return null;
        var c = IndexChunk.Take();
        return pager.TryLoadDetached(chunkNo, c.Span) ? c : null;
    }

    /// <summary>Under the lock: installs a page read by <see cref="ReadDetached"/> if its chunk is still paged (false: dropped).</summary>
    public bool InstallDetached(ulong chunkNo, IndexChunk page)
    {
        if (chunkNo < _baseChunk || chunkNo - _baseChunk >= (ulong)_count) return false;
        int slot = Slot((int)(chunkNo - _baseChunk));
        if (!_paged[slot] || _chunks[slot] is not null) return false;
        _paged[slot] = false;
        PagedChunks--;
        AllocatedChunks++;
        _chunks[slot] = page;
        CompactIfSparse(slot, chunkNo);
        return true;
    }

    /// <summary>Entries per chunk (the unit a pager loads).</summary>
    public const int EntriesPerChunk = ChunkSize;

    public void Reset(ulong nextSequence)
    {
        for (int i = 0; i < _count; i++) ReleaseSlot(Slot(i));
        Array.Clear(_chunks);
        Array.Clear(_sparse);
        Array.Clear(_live);
        Array.Clear(_paged);
        Array.Clear(_dirty);
        _dirtyList.Clear();
        _dirtyOverflow = false;
        PagedChunks = 0;
        _head = 0;
        _count = 0;
        _baseChunk = nextSequence >> Shift;
        End = nextSequence;
    }

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public bool Holds(ulong seq) => seq < End && seq >= Low;

    private int Slot(int k) => (_head + k) & (_chunks.Length - 1);
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private int SlotOf(ulong seq) => (int)(((ulong)_head + ((seq >> Shift) - _baseChunk)) & (ulong)(_chunks.Length - 1));

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public ref IndexEntry Get(ulong seq)
    {
        var c = _chunks[SlotOf(seq)];
        if (c is not null) return ref c[seq & Mask];
        return ref GetCold(seq);
    }

    /// <summary>A sparse, released or paged chunk: kept out of <see cref="Get"/> so the hot path stays as small as before.</summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    private ref IndexEntry GetCold(ulong seq)
    {
        int slot = SlotOf(seq);
        var sp = _sparse[slot];
        if (sp is null && PageIn(slot, seq >> Shift))
        {
            var c = _chunks[slot];
            if (c is not null) return ref c[seq & Mask];
            sp = _sparse[slot]; // compacted as it came in
        }
        if (sp is not null) return ref GetSparse(sp, seq);
        return ref Dead();
    }

    /// <summary>
    /// Loads a paged chunk (cold path), dense, or sparse if it has few live entries; false if the slot is not paged
    /// or the pager failed.
    /// </summary>
    private bool PageIn(int slot, ulong chunkNo, bool force = false)
    {
        if (!_paged[slot]) return false;
        if (DeferPaging && !force)
        {
            if (!_missed) (_missed, _missedChunk) = (true, chunkNo);
            return false;
        }
        _paged[slot] = false;
        PagedChunks--;
        var c = Rent();
        if (_pager!.Load(chunkNo, c.Span))
        {
            _chunks[slot] = c;
            CompactIfSparse(slot, chunkNo);
            return true;
        }
        // The pager reported the failure (the engine fail-stops); the chunk reads as deleted entries.
        Release(c);
        _live[slot] = 0;
        return false;
    }

    /// <summary>
    /// Replaces the index with one whose chunks all live on disk: <paramref name="chunks"/> lists (chunk number,
    /// live entries) in ascending order, every other chunk in [<paramref name="baseChunk"/>, end) is empty.
    /// Each paged chunk is loaded through <paramref name="pager"/> the first time any entry in it is touched.
    /// </summary>
    public void RestorePaged(ulong baseChunk, ulong end, ReadOnlySpan<(ulong Chunk, int Live)> chunks, IIndexPager pager)
    {
        Reset(baseChunk << Shift);
        _pager = pager;
        ulong span = end == 0 ? 0 : ((end - 1) >> Shift) - baseChunk + 1;
        int cap = 16;
        while ((ulong)cap < span + 1) cap <<= 1;
        _chunks = new IndexChunk?[cap];
        _sparse = new SparseChunk?[cap];
        _live = new int[cap];
        _paged = new bool[cap];
        _dirty = new bool[cap];
        _dirtyList.Clear();
        _dirtyOverflow = false;
        _frozen = new int[cap];
        _freeze = null;
        _count = (int)span;
        End = Math.Max(end, baseChunk << Shift);
        ulong appendChunk = end == 0 ? 0 : (end - 1) >> Shift;
        foreach (var (chunk, live) in chunks)
        {
            // A chunk without live entries is kept only if appends continue in it: its dead entries must read as
            // dead once an append allocates it (a fresh chunk would read as live subject 0).
            if (chunk < baseChunk || chunk - baseChunk >= span || (live <= 0 && chunk != appendChunk)) continue;
            int slot = (int)(chunk - baseChunk);
            _paged[slot] = true;
            _live[slot] = live;
            PagedChunks++;
        }
    }

    /// <summary>Number of chunk slots from <see cref="Low"/> to <see cref="End"/> (for writing an index image).</summary>
    public int ChunkSlots => _count;

    /// <summary>The chunk number of slot <paramref name="k"/> (0 = the lowest) and its state.</summary>
    public ulong ChunkAt(int k, out IndexChunk? data, out int live, out bool paged)
    {
        int slot = Slot(k);
        data = _chunks[slot];
        live = _live[slot];
        paged = _paged[slot];
        return _baseChunk + (ulong)k;
    }

    private ref IndexEntry Dead()
    {
        _dead = default;
        _dead.SubjectId = -1;
        _dead.Location = -1;
        return ref _dead;
    }

    /// <summary>Appends the entry for sequence <see cref="End"/> and returns it (zeroed, not live).</summary>
    public ref IndexEntry Add()
    {
        ulong seq = End;
        ulong k = (seq >> Shift) - _baseChunk;
        while (k >= (ulong)_count)
        {
            if (_count == _chunks.Length) Grow();
            ClearNewSlot(Slot(_count));
            _count++;
        }
        int slot = SlotOf(seq);
        var c = _chunks[slot];
        if (c is null)
        {
            if (_sparse[slot] is { } sp)
            {
                // Cannot happen (MayBeSparse keeps End's chunk and End - 1's dense); if it did, appending into a fresh
                // dense chunk would turn the sparse chunk's dead sequences live: expand it instead.
                c = Rent();
                sp.ExpandInto(c.Span);
                ReleaseSlot(slot);
                _chunks[slot] = c;
            }
            else
            {
                PageIn(slot, seq >> Shift, force: true);
                c = _chunks[slot] ?? (_chunks[slot] = Rent());
            }
        }
        if (_frozen[slot] != 0) Thaw(slot);
        MarkDirty(slot, seq >> Shift);
        End = seq + 1;
        // The previous chunk is no longer appended to: if removals left few entries in it, it becomes sparse now
        // (otherwise it would wait for its next removal).
        if ((seq & Mask) == 0 && (seq >> Shift) > _baseChunk) CompactIfSparse(SlotOf(seq - 1), (seq - 1) >> Shift);
        ref var e = ref c[seq & Mask];
        e = default;
        e.SubjectId = -1;
        e.Location = -1;
        return ref e;
    }

    /// <summary>Moves <see cref="End"/> to <paramref name="end"/>: the sequences in between are deleted gaps (no memory for whole chunks).</summary>
    public void AdvanceTo(ulong end)
    {
        while (End < end)
        {
            if ((End & Mask) == 0 && end - End >= ChunkSize)
            {
                // A whole chunk of gaps: reserve its slot without allocating it.
                ulong k = (End >> Shift) - _baseChunk;
                while (k >= (ulong)_count)
                {
                    if (_count == _chunks.Length) Grow();
                    ClearNewSlot(Slot(_count));
                    _count++;
                }
                End += ChunkSize;
                continue;
            }
            Add();
        }
    }

    /// <summary>The entry for <paramref name="seq"/> became live.</summary>
    public void MarkLive(ulong seq)
    {
        int slot = SlotOf(seq);
        _live[slot]++;
        MarkDirty(slot, seq >> Shift);
    }

    /// <summary>
    /// The entry for <paramref name="seq"/> was deleted; its chunk is released once nothing in it is live, becomes
    /// sparse once few entries in it are, and a sparse one is rebuilt smaller once mostly dead. A ref into the chunk
    /// must not be used after this.
    /// </summary>
    public void MarkDead(ulong seq)
    {
        int slot = SlotOf(seq);
        MarkDirty(slot, seq >> Shift);
        if (--_live[slot] > 0)
        {
            if (_chunks[slot] is not null) CompactIfSparse(slot, seq >> Shift);
            else ShrinkIfSparse(slot);
            return;
        }
        // Never the chunk being appended to (Add re-allocates any other released chunk it needs, e.g. after RemoveLast).
        if ((seq >> Shift) == (End >> Shift)) return;
        ReleaseSlot(slot);
    }

    /// <summary>
    /// The entry for <paramref name="seq"/>, to be written: every write to an entry other than through
    /// <see cref="Add"/> goes through here (or is preceded by it), so that a chunk captured by a running
    /// <see cref="Freeze"/> is copied first and the chunk is marked as changed since the last image.
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public ref IndexEntry GetForWrite(ulong seq)
    {
        int slot = SlotOf(seq);
        if (_frozen[slot] != 0) Thaw(slot);
        MarkDirty(slot, seq >> Shift);
        return ref Get(seq);
    }

    /// <summary>The first live sequence in [<paramref name="seq"/>, <paramref name="last"/>], skipping released chunks; 0 if none.</summary>
    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    public ulong NextLive(ulong seq, ulong last)
    {
        while (seq <= last && seq < End)
        {
            int slot = SlotOf(seq);
            if (_live[slot] != 0)
            {
                var c = _chunks[slot];
                if (c is null && _sparse[slot] is null && PageIn(slot, seq >> Shift)) c = _chunks[slot];
                if (c is not null)
                {
                    if (c[seq & Mask].IsLive) return seq;
                    seq++;
                    continue;
                }
                if (_sparse[slot] is { } sp)
                {
                    int off = sp.NextLive((int)(seq & Mask));
                    if (off >= 0)
                    {
                        ulong found = (seq & ~(ulong)Mask) | (uint)off;
                        return found <= last && found < End ? found : 0;
                    }
                }
            }
            if (_missed) return 0; // a deferred page (DeferPaging): the caller discards this walk anyway
            seq = ((seq >> Shift) + 1) << Shift;
        }
        return 0;
    }

    /// <summary>Forgets the entry just added (a failed append).</summary>
    public void RemoveLast() => End--;

    /// <summary>Recycles every chunk wholly below <paramref name="seq"/>.</summary>
    public void TrimBelow(ulong seq)
    {
        while (_count > 1 && ((_baseChunk + 1) << Shift) <= seq)
        {
            ReleaseSlot(_head);
            _live[_head] = 0;
            _dirty[_head] = false;
            if (_paged[_head])
            {
                _paged[_head] = false;
                PagedChunks--;
            }
            _head = (_head + 1) & (_chunks.Length - 1);
            _baseChunk++;
            _count--;
        }
    }

    private void Grow()
    {
        var n = new IndexChunk?[_chunks.Length * 2];
        var sp = new SparseChunk?[_chunks.Length * 2];
        var l = new int[_chunks.Length * 2];
        var p = new bool[_chunks.Length * 2];
        var d = new bool[_chunks.Length * 2];
        var f = new int[_chunks.Length * 2];
        for (int i = 0; i < _count; i++)
        {
            n[i] = _chunks[Slot(i)];
            sp[i] = _sparse[Slot(i)];
            l[i] = _live[Slot(i)];
            p[i] = _paged[Slot(i)];
            d[i] = _dirty[Slot(i)];
            f[i] = _frozen[Slot(i)];
        }
        _chunks = n;
        _sparse = sp;
        _live = l;
        _paged = p;
        _dirty = d;
        _frozen = f;
        _head = 0;
    }

    private IndexChunk Rent()
    {
        AllocatedChunks++;
        if (_free.Count > 0) return _free.Pop();
        // A small index's first chunks are managed (a huge page is resident in full once touched: a stream holding a
        // few messages must not pay 2 MiB for them). A growing index takes a huge-page chunk made ahead: fresh memory's
        // first touch was a quarter of the appending thread's time in a fast-ingest batch into a memory stream. Only an
        // index past its first chunks asks for the next one, so a small stream does not hold a spare chunk.
        if (AllocatedChunks <= ManagedChunksFirst) return IndexChunk.Managed();
        return _spare.Take(makeNext: true) ?? IndexChunk.Take();
    }

    private const int ManagedChunksFirst = 2;

    private readonly PreparedAhead<IndexChunk> _spare = new(static () =>
    {
        var c = IndexChunk.Take();
        c.Prefault();
        return c;
    });

    private void Release(IndexChunk? c)
    {
        if (c is null) return;
        AllocatedChunks--;
        if (_free.Count < MaxFree) _free.Push(c);
    }

    private void ClearNewSlot(int slot)
    {
        _chunks[slot] = null;
        _sparse[slot] = null;
        _live[slot] = 0;
        _paged[slot] = false;
        _dirty[slot] = false;
        _frozen[slot] = 0;
    }

    /// <summary>
    /// A slot's chunk (dense or sparse) is dropped (trim, reset, last entry deleted, rebuilt in another form); a frozen
    /// one is handed to the freeze unchanged instead of being pooled. The slot is empty afterwards.
    /// </summary>
    private void ReleaseSlot(int slot)
    {
        var c = _chunks[slot];
        var sp = _sparse[slot];
        _chunks[slot] = null;
        _sparse[slot] = null;
        int f = _frozen[slot];
        if (f != 0)
        {
            _frozen[slot] = 0;
            // Nobody writes a dropped chunk: it keeps the captured content.
            if (c is not null)
            {
                AllocatedChunks--;
                _freeze!.Preserved[f - 1] = c;
            }
            else if (sp is not null)
            {
                ForgetSparse(sp);
                _freeze!.Preserved[f - 1] = sp;
            }
            return;
        }
        Release(c);
        if (sp is not null) ReturnSparse(sp);
    }

    /// <summary>Replaces the pager (under the lock), e.g. when the engine rewrote its image into a new file.</summary>
    public void SetPager(IIndexPager? pager) => Volatile.Write(ref _pager, pager);
}
