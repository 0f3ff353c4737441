using System.Runtime.CompilerServices;

namespace NatsBroker.Storage.Internal;

/// <summary>
/// The entries of one dense chunk of a <see cref="SequenceIndex"/> (<see cref="SequenceIndex.EntriesPerChunk"/> of
/// them, 48 KiB). A small index's first chunks are pinned managed arrays; a growing index takes its chunks from 2 MiB
/// huge-page blocks (<see cref="IndexChunkMemory"/>): the first touch of every fresh 48 KiB was a tenth of the
/// server's CPU in a fast-ingest batch into a file stream, paid in page faults (HugePages.cs says why).
/// </summary>
/// <remarks>
/// Lifetime: a chunk the index recycles goes on its own free list; one it drops (or hands to a running index capture,
/// SequenceIndex.Freeze.cs) is no longer referenced by the index, and its native memory goes back to
/// <see cref="IndexChunkMemory"/> when the GC finalizes it. That rule (memory is reused only when nothing can reach the
/// chunk) is what makes a use after free impossible without an explicit ownership protocol between the index, its
/// captures and the readers that page chunks in without the lock. The flip side: a <see cref="Span"/> or a ref into a
/// chunk is only valid while the chunk object itself is reachable; code that holds nothing but the span keeps the
/// chunk alive with <see cref="GC.KeepAlive"/> (SequenceIndex.EncodeFrozen).
/// </remarks>
internal sealed unsafe class IndexChunk
{
    private const int Entries = SequenceIndex.EntriesPerChunk;
    private const int Mask = Entries - 1;

    private readonly IndexEntry* _p;
    // Keeps a managed chunk's pinned array alive; null for native memory.
    private readonly IndexEntry[]? _array;

    private IndexChunk(IndexEntry[] pinned)
    {
        _array = pinned;
        _p = (IndexEntry*)Unsafe.AsPointer(ref pinned[0]);
        GC.SuppressFinalize(this); // nothing native to give back
    }

    private IndexChunk(IndexEntry* native) => _p = native;

    ~IndexChunk() => IndexChunkMemory.Return(_p);

    /// <summary>A chunk in a pinned managed array (not zeroed: entries are written before they are read).</summary>
    public static IndexChunk Managed() => new(GC.AllocateUninitializedArray<IndexEntry>(Entries, pinned: true));

    /// <summary>
    /// A chunk in huge-page memory, or a managed one where huge pages are not available. May map a 2 MiB block on the
    /// calling thread (whose first touch then clears it): for the make-ahead thread and readers, not for appends.
    /// </summary>
    public static IndexChunk Take()
    {
        var p = IndexChunkMemory.TryTake(mapHere: true);
        return p is null ? Managed() : new IndexChunk(p);
    }

    /// <summary>
    /// For an appending thread whose chunk made ahead was not ready: a chunk of a block already mapped and touched, or
    /// else a managed one (4 KiB pages, faulted in as the entries are written) rather than clearing a whole 2 MiB huge
    /// page here. Clearing huge pages runs at 0.46 GB/s on some VMs we measure on (4 KiB pages: ~1.5 GB/s), so an
    /// append that did it waited ~4 ms (bench/results/session-2026-11-29).
    /// </summary>
    public static IndexChunk TakeReady()
    {
        var p = IndexChunkMemory.TryTake(mapHere: false);
        return p is null ? Managed() : new IndexChunk(p);
    }

    /// <summary>Entry <paramref name="i"/> (masked to the chunk: never outside it).</summary>
    public ref IndexEntry this[ulong i]
    {
        [MethodImpl(MethodImplOptions.AggressiveInlining)]
        get => ref _p[i & Mask];
    }

    /// <summary>Entry <paramref name="i"/> (masked to the chunk: never outside it).</summary>
    public ref IndexEntry this[int i]
    {
        [MethodImpl(MethodImplOptions.AggressiveInlining)]
        get => ref _p[i & Mask];
    }

    public int Length => Entries;

    /// <summary>The first entry (the index caches it per slot; valid while this chunk is reachable).</summary>
    public IndexEntry* Pointer => _p;

    public Span<IndexEntry> Span => new(_p, Entries);

    /// <summary>Touches every page, so the faults of fresh memory happen on the thread that made the chunk ahead.</summary>
    public void Prefault()
    {
        var bytes = (byte*)_p;
        for (int i = 0; i < Entries * sizeof(IndexEntry); i += 4096) bytes[i] = 0;
    }

}
