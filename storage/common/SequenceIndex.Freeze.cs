using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;

namespace NatsBroker.Storage.Internal;

/// <summary>
/// Consistent capture of the index for an index image (file engine checkpoints, FORMAT.md "Index image").
/// <para>
/// The part under the caller's lock (<see cref="Freeze"/>) is O(chunks changed since the last capture), plus a
/// plain copy of the per-chunk counters (a few bytes per chunk, no per-chunk work): the changed chunks are frozen
/// (copy-on-write for a writer that touches one first), nothing else is looked at. Which of the other chunks
/// the image reuses from its previous checkpoint and which are still on disk is worked out afterwards, without
/// the lock (<see cref="IndexFreeze.Classify"/>), from that copy. A full capture (<c>all</c>: a new image file)
/// freezes every chunk in memory, one flag each.
/// </para>
/// </summary>
internal sealed partial class SequenceIndex
{
    /// <summary>A chunk is written: if its flag goes from clean to changed, it is listed for the next capture (see <see cref="_dirtyList"/>).</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private void MarkDirty(int slot, ulong chunkNo)
    {
        if (!_slots[slot].Dirty) MarkChanged(slot, chunkNo);
    }

    /// <summary>
    /// The first write to a chunk since the last capture (out of line: the memory engine never captures, so for it
    /// this runs once per chunk, and the write paths stay small).
    /// </summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    private void MarkChanged(int slot, ulong chunkNo)
    {
        _slots[slot].Dirty = true;
        if (_dirtyOverflow) return;
        if (_dirtyList.Count >= _slots.Length)
        {
            _dirtyList.Clear();
            _dirtyOverflow = true;
            return;
        }
        _dirtyList.Add(chunkNo);
    }

    /// <summary>Where the content of a chunk kept in an image comes from.</summary>
    public enum ChunkSource : byte
    {
        /// <summary>In memory and captured: copied by <see cref="CopyFrozen"/> (as it was at the capture).</summary>
        Frozen,
        /// <summary>In memory, unchanged since the last image that the caller said holds it: that page is reused.</summary>
        Clean,
        /// <summary>Not in memory: still the page of the image it was restored from (<see cref="RestorePaged"/>).</summary>
        OnDisk,
    }

    /// <summary>A running capture: what <see cref="Freeze"/> saw, the chunks kept, and the copies writers made before changing a frozen chunk.</summary>
    public sealed class IndexFreeze
    {
        /// <summary>Every chunk the image keeps, ascending (filled by <see cref="Classify"/>).</summary>
        public readonly List<(ulong Chunk, int Live, ChunkSource Source)> Chunks = [];
        /// <summary>Per position in <see cref="Chunks"/>: the position of a frozen chunk in <see cref="Frozen"/> (-1 otherwise).</summary>
        internal readonly List<int> FrozenAt = [];
        /// <summary>Chunk numbers frozen by this capture; a chunk's <see cref="ChunkSlot.Frozen"/> holds 1 + its position here.</summary>
        internal readonly List<ulong> Frozen = [];
        /// <summary>
        /// Per position in <see cref="Frozen"/>: the captured chunk once the index let go of it (a writer swapped in a
        /// copy, or the chunk was dropped): an <see cref="IndexChunk"/> or a <see cref="SparseChunk"/>, written by nobody.
        /// </summary>
        internal readonly List<object?> Preserved = [];
        /// <summary>In-memory chunks unchanged since the last capture that the previous image lacks: frozen late by <see cref="FreezeLate"/>.</summary>
        internal readonly List<(ulong Chunk, int Live)> Late = [];

        // What the index held at the capture, chunk k = BaseChunk + k (copies, read without the lock; the buffers
        // are the index's, reused by its next capture).
        internal ulong BaseChunk;
        internal ulong AppendChunk;
        /// <summary>The index's End at the capture: entries of the chunk being appended to from there on are not written yet (undefined).</summary>
        internal ulong End;
        internal bool All;
        /// <summary>Chunks captured: entries [0, Count) of <see cref="Live"/> and <see cref="Paged"/>.</summary>
        internal int Count;
        internal int[] Live = [];
        internal bool[] Paged = [];
        /// <summary>The chunk being appended to is in memory (the only chunk whose presence is not implied by its counters).</summary>
        internal bool AppendPresent;

        /// <summary>
        /// WITHOUT the lock: lists every chunk kept (live entries, or the chunk being appended to) with its source:
        /// frozen at the capture; clean and in the previous image (<paramref name="inPrevious"/>), reused; still on
        /// disk. A clean chunk the previous image lacks is listed as frozen and queued in <see cref="Late"/>: the
        /// caller must then call <see cref="FreezeLate"/> under the lock before any page is copied.
        /// </summary>
        public void Classify(Func<ulong, bool> inPrevious)
        {
            var order = new (ulong Chunk, int At)[Frozen.Count];
            for (int i = 0; i < order.Length; i++) order[i] = (Frozen[i], i);
            Array.Sort(order, static (a, b) => a.Chunk.CompareTo(b.Chunk));
            int f = 0;
            for (int k = 0; k < Count; k++)
            {
                ulong no = BaseChunk + (ulong)k;
                while (f < order.Length && order[f].Chunk < no) f++;
                int live = Live[k];
                // In memory: a chunk with live entries that is not on disk always is (a chunk is released only
                // once nothing in it is live); one without is kept only if it is the chunk being appended to.
                bool present = !Paged[k] && (live != 0 || (no == AppendChunk && AppendPresent));
                if (!Kept(no, live, present, Paged[k], AppendChunk)) continue;
                if (f < order.Length && order[f].Chunk == no)
                {
                    Chunks.Add((no, live, ChunkSource.Frozen));
                    FrozenAt.Add(order[f].At);
                }
                else if (!present)
                {
                    Chunks.Add((no, live, ChunkSource.OnDisk));
                    FrozenAt.Add(-1);
                }
                else if (!All && inPrevious(no))
                {
                    Chunks.Add((no, live, ChunkSource.Clean));
                    FrozenAt.Add(-1);
                }
                else
                {
                    Chunks.Add((no, live, ChunkSource.Frozen));
                    FrozenAt.Add(-1); // set by FreezeLate
                    Late.Add((no, live));
                }
            }
        }
    }

    /// <summary>Empty chunks are not kept, except the one being appended to (its dead entries must stay dead); nor chunks with nothing to read.</summary>
    private static bool Kept(ulong no, int live, bool present, bool paged, ulong appendChunk)
        => (live != 0 || (no == appendChunk && (present || paged))) && (present || paged);

    /// <summary>
    /// Under the lock: captures the index for an image without copying entries and without looking at chunks that
    /// did not change. Every in-memory chunk changed since the last capture (every in-memory chunk when
    /// <paramref name="all"/>) is frozen: the first write to it afterwards swaps in a copy (copy-on-write, once per
    /// chunk), so <see cref="CopyFrozen"/> returns it exactly as it was now, while appends go on. The per-chunk
    /// live counts and on-disk flags are copied (one pass over the chunk slots) for <see cref="IndexFreeze.Classify"/>.
    /// Only one capture runs at a time; <see cref="EndFreeze"/> ends it.
    /// </summary>
    public IndexFreeze Freeze(bool all)
    {
        if (_freeze is not null) EndFreeze(_freeze);
        if (_captureLive.Length < _count)
        {
            // Grown (doubling) and reused: a capture allocates next to nothing under the lock, where a collection
            // it triggered would stall every writer. One capture at a time, so one pair of buffers serves them all.
            _captureLive = new int[Math.Max(_count, _captureLive.Length * 2)];
            _capturePaged = new bool[_captureLive.Length];
        }
        var f = new IndexFreeze
        {
            BaseChunk = _baseChunk,
            AppendChunk = End == 0 ? 0 : (End - 1) >> Shift,
            End = End,
            All = all,
            Count = _count,
            Live = _captureLive,
            Paged = _capturePaged,
        };
        for (int k = 0; k < _count; k++)
        {
            ref readonly var s = ref _slots[Slot(k)];
            f.Live[k] = s.Live;
            f.Paged[k] = s.Paged;
        }
        if (f.AppendChunk >= _baseChunk && f.AppendChunk - _baseChunk < (ulong)_count)
            f.AppendPresent = _slots[Slot((int)(f.AppendChunk - _baseChunk))].Dense is not null;
        if (all || _dirtyOverflow)
        {
            for (int k = 0; k < _count; k++)
            {
                int slot = Slot(k);
                if (all || _slots[slot].Dirty) FreezeSlot(f, slot, _baseChunk + (ulong)k);
            }
        }
        else
        {
            foreach (ulong no in _dirtyList)
            {
                if (no < _baseChunk || no - _baseChunk >= (ulong)_count) continue; // trimmed since
                int slot = Slot((int)(no - _baseChunk));
                if (_slots[slot].Dirty) FreezeSlot(f, slot, no);
            }
        }
        _dirtyList.Clear();
        _dirtyOverflow = false;
        _freeze = f;
        return f;
    }

    /// <summary>Under the lock, at a capture: the chunk's change is consumed; a chunk the image keeps and holds in memory is frozen.</summary>
    private void FreezeSlot(IndexFreeze f, int slot, ulong no)
    {
        _slots[slot].Dirty = false;
        if ((_slots[slot].Dense is null && _slots[slot].Sparse is null) || _slots[slot].Frozen != 0 || !Kept(no, _slots[slot].Live, true, _slots[slot].Paged, f.AppendChunk)) return;
        f.Frozen.Add(no);
        f.Preserved.Add(null);
        _slots[slot].Frozen = f.Frozen.Count;
    }

    /// <summary>
    /// Under the lock, after <see cref="IndexFreeze.Classify"/>: freezes the chunks it queued (unchanged since the
    /// capture, so their content now is their content then). False if one changed, went, or was replaced meanwhile:
    /// the capture cannot be completed (the caller abandons the checkpoint).
    /// </summary>
    public bool FreezeLate(IndexFreeze f)
    {
        if (_freeze != f) return f.Late.Count == 0;
        foreach (var (no, live) in f.Late)
        {
            if (no < _baseChunk || no - _baseChunk >= (ulong)_count) return false;
            int slot = Slot((int)(no - _baseChunk));
            if (_slots[slot].Dirty || _slots[slot].Frozen != 0 || (_slots[slot].Dense is null && _slots[slot].Sparse is null) || _slots[slot].Live != live) return false;
            f.Frozen.Add(no);
            f.Preserved.Add(null);
            _slots[slot].Frozen = f.Frozen.Count;
        }
        // Fill in FrozenAt for the late chunks, in the order Classify queued them.
        int next = f.Frozen.Count - f.Late.Count;
        for (int k = 0; k < f.Chunks.Count; k++)
        {
            if (f.Chunks[k].Source == ChunkSource.Frozen && f.FrozenAt[k] < 0) f.FrozenAt[k] = next++;
        }
        f.Late.Clear();
        return true;
    }

    private int[] _captureLive = [];
    private bool[] _capturePaged = [];

    /// <summary>
    /// Under the lock: the captured content of kept chunk <paramref name="k"/> (a position in <see cref="IndexFreeze.Chunks"/>),
    /// which must be frozen, into <paramref name="into"/> as an image page (see <see cref="EncodeFrozen"/>); returns the
    /// page's length. <see cref="TakeFrozen"/>, <see cref="EncodeFrozen"/> and <see cref="ReleaseFrozen"/> in one call.
    /// </summary>
    public int CopyFrozen(IndexFreeze f, int k, Span<byte> into)
    {
        var src = TakeFrozen(f, k);
        int length = EncodeFrozen(f, k, src, into);
        ReleaseFrozen(f, k);
        return length;
    }

    /// <summary>
    /// Under the lock: what holds the captured content of kept chunk <paramref name="k"/> (which must be frozen): the
    /// chunk handed over to the capture, or the index's own chunk, which stays frozen until <see cref="ReleaseFrozen"/>.
    /// Nobody writes either until then (a writer of a frozen chunk swaps in a copy first, <see cref="Thaw"/>), so the
    /// caller may encode it WITHOUT the lock: an image checkpoint that scanned and copied ~900 chunks of 48 KiB under
    /// the lock (an estimated ~15 µs each) held appends up: the file engine appended at 0.85x of its rate without them.
    /// </summary>
    public object TakeFrozen(IndexFreeze f, int k)
    {
        int at = f.FrozenAt[k];
        ulong no = f.Chunks[k].Chunk;
        if (at < 0) throw new InvalidOperationException($"index chunk {no} is not frozen");
        if (f.Preserved[at] is { } handed) return handed;
        if (_freeze != f || no < _baseChunk || no - _baseChunk >= (ulong)_count) throw new InvalidOperationException($"index chunk {no} is not frozen");
        int slot = Slot((int)(no - _baseChunk));
        if (_slots[slot].Frozen != at + 1) throw new InvalidOperationException($"index chunk {no} is not frozen");
        return (object?)_slots[slot].Dense ?? _slots[slot].Sparse ?? throw new InvalidOperationException($"index chunk {no} is not in memory");
    }

    /// <summary>Under the lock, once the page of kept chunk <paramref name="k"/> is encoded: the chunk is no longer frozen for this capture.</summary>
    public void ReleaseFrozen(IndexFreeze f, int k)
    {
        int at = f.FrozenAt[k];
        ulong no = f.Chunks[k].Chunk;
        if (at < 0) return;
        f.Preserved[at] = null;
        if (_freeze != f || no < _baseChunk || no - _baseChunk >= (ulong)_count) return;
        int slot = Slot((int)(no - _baseChunk));
        if (_slots[slot].Frozen == at + 1) _slots[slot].Frozen = 0;
    }

    /// <summary>
    /// With or without the lock: the image page of kept chunk <paramref name="k"/> from <paramref name="src"/> (what
    /// <see cref="TakeFrozen"/> returned) into <paramref name="into"/> (at least <see cref="EntriesPerChunk"/> x
    /// <see cref="EntrySize"/> bytes); returns the page's length. A chunk with at most
    /// <see cref="CompactIndexPage.MaxEntries"/> live entries is written as a compact page (50 bytes per live entry,
    /// <see cref="CompactIndexPage"/>), any other as the dense 48 KiB page.
    /// </summary>
    public static int EncodeFrozen(IndexFreeze f, int k, object src, Span<byte> into)
    {
        ulong no = f.Chunks[k].Chunk;
        if (src is SparseChunk sp)
        {
            int spLive = 0;
            for (int i = 0; i < sp.Count; i++) if (sp.Entries[i].IsLive) spLive++;
            if (spLive <= CompactIndexPage.MaxEntries) return CompactIndexPage.Encode(sp, spLive, into);
            sp.ExpandInto(MemoryMarshal.Cast<byte, IndexEntry>(into)[..ChunkSize]); // a sparse chunk that grew past the bound cannot happen; dense then
            return ChunkSize * EntrySize;
        }
        var dense = ((IndexChunk)src).Span;
        // In the chunk being appended to, the entries from End on are not written yet: a pooled chunk may hold
        // anything there, which a compact page must not list (a dense page carries it along, unread).
        var held = dense;
        if (no == f.AppendChunk && f.End > no << Shift) held = held[..(int)Math.Min((ulong)ChunkSize, f.End - (no << Shift))];
        int live = 0;
        foreach (ref readonly var e in held) if (e.IsLive) live++;
        int length;
        if (live <= CompactIndexPage.MaxEntries) length = CompactIndexPage.Encode(held, live, into);
        else
        {
            MemoryMarshal.AsBytes(dense).CopyTo(into);
            length = ChunkSize * EntrySize;
        }
        // The span points into the chunk's memory, which goes back to the allocator when the chunk object is finalized:
        // keep the object alive until the span is no longer read.
        GC.KeepAlive(src);
        return length;
    }

    /// <summary>Under the lock: ends a capture (done or abandoned); chunks still frozen are released from it (O(chunks frozen)).</summary>
    public void EndFreeze(IndexFreeze f)
    {
        if (_freeze != f) return;
        for (int i = 0; i < f.Frozen.Count; i++)
        {
            ulong no = f.Frozen[i];
            if (no < _baseChunk || no - _baseChunk >= (ulong)_count) continue;
            int slot = Slot((int)(no - _baseChunk));
            if (_slots[slot].Frozen == i + 1) _slots[slot].Frozen = 0;
        }
        _freeze = null;
    }

    /// <summary>
    /// A writer touches a frozen chunk: the chunk, as it is now, is handed over to the capture, and the index continues
    /// with a copy of it, which the write then changes. The capture may be reading the chunk without the lock
    /// (<see cref="TakeFrozen"/>): nobody writes a chunk once it is handed over.
    /// </summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    private void Thaw(int slot)
    {
        int f = _slots[slot].Frozen;
        _slots[slot].Frozen = 0;
        var c = _slots[slot].Dense;
        if (c is not null)
        {
            var copy = Rent();
            c.Span.CopyTo(copy.Span);
            _slots[slot].Dense = copy;
            AllocatedChunks--; // the original now belongs to the capture (its memory goes back when it is collected)
            _freeze!.Preserved[f - 1] = c;
            return;
        }
        var sp = _slots[slot].Sparse!;
        _slots[slot].Sparse = sp.Clone(); // same capacity: the sparse counters do not change
        _freeze!.Preserved[f - 1] = sp;
    }
}
