using System.Collections.Concurrent;
using System.Numerics;

namespace NatsBroker.Gateways.Link;

/// <summary>
/// The gateways' per-session read buffers (<see cref="AdaptiveReadBuffer"/>): arrays of 32-256 KiB on the pinned
/// object heap, allocated uninitialized, kept in a bounded free list per size.
/// </summary>
/// <remarks>
/// An idle session waits in a read into its buffer, and the kernel makes resident only the pages a read wrote (a
/// CONNECT and a PING: one page). That holds only for memory nothing else touches: an array from
/// <c>ArrayPool.Shared</c> is movable, so a compacting collection copies all of it and makes it resident (2,000
/// idle TLS clients cost the terminator 68 KB each, ~64 KB of it these buffers), and an array handed back by an
/// earlier session is resident already. Pinned arrays are never moved; the free lists are bounded so a connect
/// storm's buffers do not stay resident for the next one beyond <see cref="MaxRetainedBytes"/> per size.
/// The same reasoning as the core's read buffers (core/Connections/ReadBufferPool.cs).
/// </remarks>
public static class PinnedBuffers
{
    public const int MinSize = 32 * 1024, MaxSize = 256 * 1024;

    /// <summary>Free arrays kept per size: 8 MiB (256 of 32 KiB, 32 of 256 KiB).</summary>
    public const int MaxRetainedBytes = 8 * 1024 * 1024;

    private static readonly int Classes = BitOperations.Log2(MaxSize / MinSize) + 1;
    private static readonly ConcurrentQueue<byte[]>[] Free = [.. Enumerable.Range(0, Classes).Select(_ => new ConcurrentQueue<byte[]>())];
    private static readonly int[] Retained = new int[Classes];

    /// <summary>An array of exactly <paramref name="size"/> bytes (a power of two from 32 to 256 KiB), contents undefined.</summary>
    public static byte[] Rent(int size)
    {
        int c = ClassOf(size);
        if (Free[c].TryDequeue(out var array))
        {
            Interlocked.Decrement(ref Retained[c]);
            return array;
        }
        return GC.AllocateUninitializedArray<byte>(size, pinned: true);
    }

    /// <summary>Gives an array from <see cref="Rent"/> back; beyond the bound it is left to the collector.</summary>
    public static void Return(byte[] array)
    {
        ArgumentNullException.ThrowIfNull(array);
        int c = ClassOf(array.Length);
        if (Interlocked.Increment(ref Retained[c]) * array.Length > MaxRetainedBytes)
        {
            Interlocked.Decrement(ref Retained[c]);
            return;
        }
        Free[c].Enqueue(array);
    }

    private static int ClassOf(int size)
    {
        if (size < MinSize || size > MaxSize || !BitOperations.IsPow2(size))
            throw new ArgumentOutOfRangeException(nameof(size), size, "a power of two from 32 to 256 KiB");
        return BitOperations.Log2((uint)(size / MinSize));
    }
}
