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
    /// <summary>The message's stored size as the engine counts it (IndexedStore.StoredSize: nats-server's per-engine figure).</summary>
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

    /// <summary>
    /// What the index keeps per chunk, one ring slot per chunk from <see cref="Low"/> to <see cref="End"/>. One array
    /// of structs rather than an array per field: every write to an entry reads the slot's chunk, live count and
    /// capture flags, which then cost one bounds check and one cache line. With the inlined fast paths of
    /// <see cref="GetForWrite"/>, <see cref="MarkDead"/> and <see cref="NextLive"/> this took the memory engine's
    /// purge from 0.69x to 0.92x of the code before the sparse index (bench/results/session-2026-11-29).
    /// </summary>
    private unsafe struct ChunkSlot
    {
        private IndexChunk? _dense;

        /// <summary>The chunk's entries in dense form, or null (sparse, released, paged or never allocated).</summary>
        public IndexChunk? Dense
        {
            readonly get => _dense;
            set
            {
                _dense = value;
                Entries = value is null ? null : value.Pointer;
            }
        }

        /// <summary>
        /// <see cref="Dense"/>'s entries, or null: lookups read them without loading the chunk object first (one
        /// dependent load less per lookup). Valid while <see cref="Dense"/> holds the chunk (IndexChunk.cs: its
        /// memory goes back only once the chunk object is unreachable).
        /// </summary>
        public IndexEntry* Entries { readonly get; private set; }
        /// <summary>The chunk's live entries in sparse form (SequenceIndex.Sparse.cs), or null.</summary>
        public SparseChunk? Sparse;
        /// <summary>Live entries in the chunk.</summary>
        public int Live;
        /// <summary>0, or 1 + the position of the chunk in the running <see cref="_freeze"/> (copy-on-write pending).</summary>
        public int Frozen;
        /// <summary>Not in memory but on the engine's disk (<see cref="IIndexPager"/>); <see cref="Live"/> is known.</summary>
        public bool Paged;
        /// <summary>Written since the engine last captured it for an index image (<see cref="Freeze"/>).</summary>
        public bool Dirty;
    }

    private ChunkSlot[] _slots = new ChunkSlot[16];
    private IndexFreeze? _freeze;
    /// <summary>
    /// Chunk numbers whose <see cref="ChunkSlot.Dirty"/> flag went from false to true since the last <see cref="Freeze"/>, so a
    /// capture finds what changed in O(changes) instead of scanning every chunk (SequenceIndex.Freeze.cs). Bounded:
    /// past <see cref="_slots"/>.Length entries it is dropped and <see cref="_dirtyOverflow"/> makes the next
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
        if (!_slots[slot].Paged || _slots[slot].Dense is not null) return false;
        _slots[slot].Paged = false;
        PagedChunks--;
        AllocatedChunks++;
        _slots[slot].Dense = page;
        CompactIfSparse(slot, chunkNo);
        return true;
    }

    /// <summary>Entries per chunk (the unit a pager loads).</summary>
    public const int EntriesPerChunk = ChunkSize;

    public void Reset(ulong nextSequence)
    {
        for (int i = 0; i < _count; i++) ReleaseSlot(Slot(i));
        Array.Clear(_slots);
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

    private int Slot(int k) => (_head + k) & (_slots.Length - 1);
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private int SlotOf(ulong seq) => (int)(((ulong)_head + ((seq >> Shift) - _baseChunk)) & (ulong)(_slots.Length - 1));

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public unsafe ref IndexEntry Get(ulong seq)
    {
        var p = _slots[SlotOf(seq)].Entries;
        if (p is not null) return ref p[seq & Mask];
        return ref GetCold(seq);
    }

    /// <summary>A sparse, released or paged chunk: kept out of <see cref="Get"/> so the hot path stays as small as before.</summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    private ref IndexEntry GetCold(ulong seq)
    {
        int slot = SlotOf(seq);
        var sp = _slots[slot].Sparse;
        if (sp is null && PageIn(slot, seq >> Shift))
        {
            var c = _slots[slot].Dense;
            if (c is not null) return ref c[seq & Mask];
            sp = _slots[slot].Sparse; // compacted as it came in
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
        if (!_slots[slot].Paged) return false;
        if (DeferPaging && !force)
        {
            if (!_missed) (_missed, _missedChunk) = (true, chunkNo);
            return false;
        }
        _slots[slot].Paged = false;
        PagedChunks--;
        var c = Rent();
        if (_pager!.Load(chunkNo, c.Span))
        {
            _slots[slot].Dense = c;
            CompactIfSparse(slot, chunkNo);
            return true;
        }
        // The pager reported the failure (the engine fail-stops); the chunk reads as deleted entries.
        Release(c);
        _slots[slot].Live = 0;
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
        _slots = new ChunkSlot[cap];
        _dirtyList.Clear();
        _dirtyOverflow = false;
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
            _slots[slot].Paged = true;
            _slots[slot].Live = live;
            PagedChunks++;
        }
    }

    /// <summary>Number of chunk slots from <see cref="Low"/> to <see cref="End"/> (for writing an index image).</summary>
    public int ChunkSlots => _count;

    /// <summary>The chunk number of slot <paramref name="k"/> (0 = the lowest) and its state.</summary>
    public ulong ChunkAt(int k, out IndexChunk? data, out int live, out bool paged)
    {
        int slot = Slot(k);
        data = _slots[slot].Dense;
        live = _slots[slot].Live;
        paged = _slots[slot].Paged;
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
            if (_count == _slots.Length) Grow();
            ClearNewSlot(Slot(_count));
            _count++;
        }
        int slot = SlotOf(seq);
        var c = _slots[slot].Dense;
        if (c is null)
        {
            if (_slots[slot].Sparse is { } sp)
            {
                // Cannot happen (MayBeSparse keeps End's chunk and End - 1's dense); if it did, appending into a fresh
                // dense chunk would turn the sparse chunk's dead sequences live: expand it instead.
                c = Rent();
                sp.ExpandInto(c.Span);
                ReleaseSlot(slot);
                _slots[slot].Dense = c;
            }
            else
            {
                PageIn(slot, seq >> Shift, force: true);
                c = _slots[slot].Dense ?? (_slots[slot].Dense = Rent());
            }
        }
        if (_slots[slot].Frozen != 0)
        {
            Thaw(slot);
            c = _slots[slot].Dense!; // the writer's copy: the chunk read above now belongs to the capture
        }
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
                    if (_count == _slots.Length) Grow();
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
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public void MarkLive(ulong seq)
    {
        int slot = SlotOf(seq);
        ref var s = ref _slots[slot];
        s.Live++;
        if (!s.Dirty) MarkChanged(slot, seq >> Shift);
    }

    /// <summary>
    /// The entry for <paramref name="seq"/> was deleted; its chunk is released once nothing in it is live, becomes
    /// sparse once few entries in it are, and a sparse one is rebuilt smaller once mostly dead. A ref into the chunk
    /// must not be used after this.
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public void MarkDead(ulong seq)
    {
        int slot = SlotOf(seq);
        ref var s = ref _slots[slot];
        if (!s.Dirty) MarkChanged(slot, seq >> Shift);
        // The common cases, inlined into every removal: a chunk that keeps more than SparseMax live entries stays dense
        // (a sparse chunk never holds more than that), and the chunk being appended to is never made sparse or
        // released (Add re-allocates any other released chunk it needs, e.g. after RemoveLast). Nor is the first chunk:
        // it is never made sparse (MayBeSparse), and when its last live entry goes, that entry was the store's first
        // message, so TrimBelow releases the chunk as the first sequence moves past it. A stream at its limits drains
        // its first chunk one removal at a time: its last quarter no longer calls the slow path for nothing.
        if (--s.Live > SparseMax || (seq >> Shift) == (End >> Shift) || slot == _head) return;
        MarkDeadSlow(slot, seq);
    }

    /// <summary>The rest of <see cref="MarkDead"/>: a chunk left with few live entries becomes sparse, smaller or released.</summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    private void MarkDeadSlow(int slot, ulong seq)
    {
        ref var s = ref _slots[slot];
        if (s.Live > 0)
        {
            if (s.Dense is not null) CompactIfSparse(slot, seq >> Shift);
            else ShrinkIfSparse(slot);
            return;
        }
        ReleaseSlot(slot);
    }

    /// <summary>
    /// The entry for <paramref name="seq"/>, to be written: every write to an entry other than through
    /// <see cref="Add"/> goes through here (or is preceded by it), so that a chunk captured by a running
    /// <see cref="Freeze"/> is copied first and the chunk is marked as changed since the last image.
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public unsafe ref IndexEntry GetForWrite(ulong seq)
    {
        int slot = SlotOf(seq);
        ref var s = ref _slots[slot];
        // One test for the usual case (changed since the last capture already, not frozen by a running one).
        if (s.Frozen != 0 || !s.Dirty) PrepareWrite(slot, seq >> Shift);
        var p = s.Entries;
        if (p is not null) return ref p[seq & Mask];
        return ref GetCold(seq);
    }

    /// <summary>The first write to a chunk since the last capture, or to one a running capture froze.</summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    private void PrepareWrite(int slot, ulong chunkNo)
    {
        if (_slots[slot].Frozen != 0) Thaw(slot);
        MarkDirty(slot, chunkNo);
    }

    /// <summary>The first live sequence in [<paramref name="seq"/>, <paramref name="last"/>], skipping released chunks; 0 if none.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public unsafe ulong NextLive(ulong seq, ulong last)
    {
        // Inlined: the answer is usually seq itself (a stream at its limits advancing its first sequence by one).
        if (seq <= last && seq < End)
        {
            var p = _slots[SlotOf(seq)].Entries;
            if (p is not null && p[seq & Mask].IsLive) return seq;
        }
        return NextLiveScan(seq, last);
    }

    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    private ulong NextLiveScan(ulong seq, ulong last)
    {
        while (seq <= last && seq < End)
        {
            int slot = SlotOf(seq);
            if (_slots[slot].Live != 0)
            {
                var c = _slots[slot].Dense;
                if (c is null && _slots[slot].Sparse is null && PageIn(slot, seq >> Shift)) c = _slots[slot].Dense;
                if (c is not null)
                {
                    if (c[seq & Mask].IsLive) return seq;
                    seq++;
                    continue;
                }
                if (_slots[slot].Sparse is { } sp)
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
            _slots[_head].Live = 0;
            _slots[_head].Dirty = false;
            if (_slots[_head].Paged)
            {
                _slots[_head].Paged = false;
                PagedChunks--;
            }
            _head = (_head + 1) & (_slots.Length - 1);
            _baseChunk++;
            _count--;
        }
    }

    private void Grow()
    {
        var n = new ChunkSlot[_slots.Length * 2];
        for (int i = 0; i < _count; i++) n[i] = _slots[Slot(i)];
        _slots = n;
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
        return _spare.Take(makeNext: true) ?? IndexChunk.TakeReady();
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

    private void ClearNewSlot(int slot) => _slots[slot] = default;

    /// <summary>
    /// A slot's chunk (dense or sparse) is dropped (trim, reset, last entry deleted, rebuilt in another form); a frozen
    /// one is handed to the freeze unchanged instead of being pooled. The slot is empty afterwards.
    /// </summary>
    private void ReleaseSlot(int slot)
    {
        var c = _slots[slot].Dense;
        var sp = _slots[slot].Sparse;
        _slots[slot].Dense = null;
        _slots[slot].Sparse = null;
        int f = _slots[slot].Frozen;
        if (f != 0)
        {
            _slots[slot].Frozen = 0;
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
