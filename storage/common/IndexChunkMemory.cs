using System.Numerics;

namespace NatsBroker.Storage.Internal;

/// <summary>
/// Process-wide allocator of native index chunks (48 KiB) carved from 2 MiB huge-page blocks (<see cref="HugePages"/>):
/// 42 chunks per block. Thread-safe (one lock; taken once per 1,024 appended sequences and by the finalizer thread).
/// A block whose chunks are all free is given back to the system, except one kept as a spare so an index that
/// oscillates around a block boundary does not map and unmap a block each time.
/// </summary>
internal static unsafe class IndexChunkMemory
{
    private const int ChunkBytes = SequenceIndex.EntriesPerChunk * 48;
    private const int PerBlock = HugePages.Size / ChunkBytes;
    private const ulong AllFree = (1UL << PerBlock) - 1;

    private sealed class Block(nint start)
    {
        public readonly nint Start = start;
        public ulong FreeBits = AllFree;
        public bool Listed;
    }

    private static readonly Lock Gate = new();
    private static readonly Dictionary<nint, Block> Blocks = [];
    private static readonly List<Block> WithRoom = [];
    private static Block? _spare;

    /// <summary>Blocks currently mapped (tests, diagnostics).</summary>
    public static int BlockCount
    {
        get
        {
            lock (Gate) return Blocks.Count;
        }
    }

    /// <summary>A chunk's memory (not zeroed), or null where huge pages are not available.</summary>
    public static IndexEntry* TryTake()
    {
        if (!HugePages.Supported) return null;
        lock (Gate)
        {
            var p = TakeLocked();
            if (p is not null) return p;
        }
        // Map a new block outside the lock (the finalizer thread returns chunks under it).
        var start = (nint)HugePages.TryAllocate();
        if (start == 0) return null;
        GC.AddMemoryPressure(HugePages.Size);
        lock (Gate)
        {
            var b = new Block(start) { FreeBits = AllFree & ~1UL, Listed = true };
            Blocks.Add(start, b);
            WithRoom.Add(b);
        }
        return (IndexEntry*)start;
    }

    private static IndexEntry* TakeLocked()
    {
        while (WithRoom.Count > 0)
        {
            var b = WithRoom[^1];
            if (b.FreeBits == 0)
            {
                b.Listed = false;
                WithRoom.RemoveAt(WithRoom.Count - 1);
                continue;
            }
            if (b == _spare) _spare = null;
            int i = BitOperations.TrailingZeroCount(b.FreeBits);
            b.FreeBits &= ~(1UL << i);
            return (IndexEntry*)(b.Start + (nint)i * ChunkBytes);
        }
        return null;
    }

    /// <summary>Gives back a chunk from <see cref="TryTake"/> (the chunk's finalizer).</summary>
    public static void Return(IndexEntry* chunk)
    {
        nint p = (nint)chunk;
        nint start = p & ~(nint)(HugePages.Size - 1);
        void* release = null;
        lock (Gate)
        {
            if (!Blocks.TryGetValue(start, out var b)) throw new InvalidOperationException($"index chunk 0x{p:x} is not from the index chunk allocator");
            b.FreeBits |= 1UL << (int)((p - start) / ChunkBytes);
            if (!b.Listed)
            {
                b.Listed = true;
                WithRoom.Add(b);
            }
            if (b.FreeBits == AllFree)
            {
                if (_spare is null || _spare == b) _spare = b;
                else
                {
                    Blocks.Remove(start);
                    WithRoom.Remove(b);
                    release = (void*)start;
                }
            }
        }
        if (release is not null)
        {
            HugePages.Free(release);
            GC.RemoveMemoryPressure(HugePages.Size);
        }
    }
}
