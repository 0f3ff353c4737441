using System.Numerics;

namespace NatsBroker.Storage.Internal;

/// <summary>
/// Process-wide allocator of native index chunks (48 KiB) carved from 2 MiB huge-page blocks (<see cref="HugePages"/>):
/// 42 chunks per block. Thread-safe (one lock; taken once per 1,024 appended sequences and by the finalizer thread).
/// A block whose chunks are all free is given back to the system, except one kept as a spare so an index that
/// oscillates around a block boundary does not map and unmap a block each time.
/// <para>
/// The next block is mapped and touched ahead (on the <see cref="MakeAheadThread"/>) once fewer than half a block's chunks are free:
/// the first touch of a block is one huge-page fault that clears 2 MiB, and before this it landed on the appending
/// thread for most blocks (the sequence index's own chunk made ahead is often not ready at a million appends a
/// second on two busy cores; half a block is ~20 ms of runway at that rate).
/// </para>
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
    private static int _free; // free chunks over all blocks (under Gate)
    private static int _mappingAhead; // 1 while a block is being mapped ahead
    private const int LowWater = PerBlock / 2;

    /// <summary>Blocks currently mapped (tests, diagnostics).</summary>
    public static int BlockCount
    {
        get
        {
            lock (Gate) return Blocks.Count;
        }
    }

    /// <summary>
    /// A chunk's memory (not zeroed), or null where huge pages are not available, or when no block has a free chunk
    /// and <paramref name="mapHere"/> is false (the block mapped ahead is not ready yet).
    /// </summary>
    public static IndexEntry* TryTake(bool mapHere)
    {
        if (!HugePages.Supported) return null;
        IndexEntry* p;
        bool ahead;
        lock (Gate)
        {
            p = TakeLocked();
            ahead = _free < LowWater;
        }
        if (ahead && Interlocked.CompareExchange(ref _mappingAhead, 1, 0) == 0)
            MakeAheadThread.Queue(Ahead);
        if (p is not null || !mapHere) return p;
        // None free and the block ahead not ready: map one here (outside the lock: the finalizer thread returns
        // chunks under it).
        var start = Map(touch: false);
        if (start == 0) return null;
        lock (Gate)
        {
            Add(start);
            return TakeLocked();
        }
    }

    private static readonly MapAheadWork Ahead = new();

    private sealed class MapAheadWork : IMakeAhead
    {
        public void MakeAhead() => MapAhead();
    }

    private static void MapAhead()
    {
        try
        {
            var start = Map(touch: true);
            if (start == 0) return;
            lock (Gate) Add(start);
        }
        finally
        {
            Volatile.Write(ref _mappingAhead, 0);
        }
    }

    private static nint Map(bool touch)
    {
        var start = (byte*)HugePages.TryAllocate();
        if (start is null) return 0;
        GC.AddMemoryPressure(HugePages.Size);
        // One write per 4 KiB page: with a huge page the first one faults (and clears) all 2 MiB.
        if (touch) for (int i = 0; i < HugePages.Size; i += 4096) start[i] = 0;
        return (nint)start;
    }

    private static void Add(nint start)
    {
        var b = new Block(start) { Listed = true };
        Blocks.Add(start, b);
        WithRoom.Add(b);
        _free += PerBlock;
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
            _free--;
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
            _free++;
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
                    _free -= PerBlock;
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
