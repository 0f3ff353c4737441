using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using NatsBroker.Storage.Internal;

namespace NatsBroker.Storage.Memory;

/// <summary>
/// The bytes of one slab: a managed array, or native memory backed by transparent huge pages.
/// </summary>
/// <remarks>
/// Why huge pages: a memory stream that grows touches fresh memory for every message it keeps, and the first touch
/// of a page is a page fault. On the paravirtualised VMs this project is measured on, that fault costs ~17 µs per
/// 4 KiB page (0.24 GB/s); the same first touch of 2 MiB-aligned memory advised with <c>MADV_HUGEPAGE</c> ran at
/// ~8 GB/s (one fault per 2 MiB). Before this, page faults were over half of the server's CPU in a fast-ingest
/// batch into a memory stream. Huge slabs are used only once a store has outgrown its first managed slabs: a huge
/// page is resident in full on its first touch, so a store holding a few messages must not pay 2 MiB for them.
/// Native memory is freed by <see cref="Free"/> (the store's close, purge and recycling), or by the finalizer if a
/// store is dropped without being closed.
/// </remarks>
internal sealed unsafe class SlabMemory
{
    /// <summary>The size of a huge slab: one transparent huge page on x86-64 and arm64 (4 KiB base pages).</summary>
    public const int HugeSize = HugePages.Size;

    // A managed slab is a pinned array (so both kinds are read through one pointer: Span stays a two-field
    // constructor on the append and load paths); _array keeps it alive.
    private readonly byte[]? _array;
    private byte* _p;

    private SlabMemory(byte[] pinned)
    {
        _array = pinned;
        _p = (byte*)Unsafe.AsPointer(ref MemoryMarshal.GetArrayDataReference(pinned));
        Length = pinned.Length;
        GC.SuppressFinalize(this); // nothing native to free
    }

    private SlabMemory(byte* native, int length)
    {
        _p = native;
        Length = length;
    }

    ~SlabMemory() => FreeNative();

    /// <summary>The slab's size in bytes.</summary>
    public int Length { get; }

    /// <summary>True for native huge-page memory.</summary>
    public bool IsHuge => _array is null;

    /// <summary>The slab's bytes. Must not be used after <see cref="Free"/>.</summary>
    public Span<byte> Span => new(_p, Length);

    /// <summary>A managed slab (ordinary pages, pinned, not zeroed: every byte read was written first).</summary>
    public static SlabMemory Managed(int size) => new(GC.AllocateUninitializedArray<byte>(size, pinned: true));

    /// <summary>A 2 MiB slab advised for huge pages, or null where that is not available (not Linux, THP off, allocation refused).</summary>
    public static SlabMemory? TryHuge()
    {
        void* p = HugePages.TryAllocate();
        if (p is null) return null;
        return new SlabMemory((byte*)p, HugeSize);
    }

    /// <summary>
    /// Touches every page, so the page faults (and the kernel's zeroing of the pages) happen on the calling thread
    /// and not on the thread that later appends into the slab.
    /// </summary>
    public void Prefault()
    {
        var span = Span;
        for (int i = 0; i < span.Length; i += 4096) span[i] = 0;
    }

    /// <summary>Returns native memory to the system; a managed slab is left to the GC.</summary>
    public void Free()
    {
        FreeNative();
        GC.SuppressFinalize(this);
    }

    private void FreeNative()
    {
        if (_array is not null || _p is null) return;
        HugePages.Free(_p);
        _p = null;
    }
}
