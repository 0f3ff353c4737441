using System.Buffers;
using System.Collections.Concurrent;
using System.Numerics;

namespace NatsBroker.JetStream;

/// <summary>
/// Buffers for messages on their way into a stream (<c>JsStream.Inbound</c>): rented on a publisher's socket thread,
/// returned on the stream's ingest worker. <see cref="ArrayPool{T}.Shared"/> keeps returned arrays per thread and per
/// core, so an array returned on the worker was rarely found by the publisher's next rent: perf of
/// <c>js-asyncpub-128-file</c> showed 14% of the server's CPU in that rent, 6% of it allocating new arrays (and
/// their collection), 4% in its per-core locks. Here each power-of-two size class is one lock-free queue that both
/// sides share, bounded to about 4 MiB per class; larger messages use the shared pool.
/// </summary>
internal static class InboundBuffers
{
    private const int MinShift = 6;   // 64 B
    private const int MaxShift = 16;  // 64 KiB
    private const int BytesPerClass = 4 * 1024 * 1024;

    private static readonly ConcurrentQueue<byte[]>[] Classes = CreateClasses();
    private static readonly int[] Counts = new int[MaxShift - MinShift + 1];

    private static ConcurrentQueue<byte[]>[] CreateClasses()
    {
        var classes = new ConcurrentQueue<byte[]>[MaxShift - MinShift + 1];
        for (int i = 0; i < classes.Length; i++) classes[i] = new ConcurrentQueue<byte[]>();
        return classes;
    }

    /// <summary>An array of at least <paramref name="size"/> bytes (its length is a power of two).</summary>
    public static byte[] Rent(int size)
    {
        int shift = Math.Max(MinShift, size <= 1 ? 0 : 32 - BitOperations.LeadingZeroCount((uint)(size - 1)));
        if (shift > MaxShift) return ArrayPool<byte>.Shared.Rent(size);
        int c = shift - MinShift;
        if (Classes[c].TryDequeue(out var buffer))
        {
            Interlocked.Decrement(ref Counts[c]);
            return buffer;
        }
        return GC.AllocateUninitializedArray<byte>(1 << shift);
    }

    /// <summary>Takes back an array from <see cref="Rent"/> (or from <see cref="ArrayPool{T}.Shared"/>).</summary>
    public static void Return(byte[] buffer)
    {
        int length = buffer.Length;
        if (length == 0) return;
        if (length > 1 << MaxShift)
        {
            ArrayPool<byte>.Shared.Return(buffer);
            return;
        }
        if (!BitOperations.IsPow2(length) || length < 1 << MinShift) return; // not one of ours: left to the GC
        int c = BitOperations.Log2((uint)length) - MinShift;
        if (Interlocked.Increment(ref Counts[c]) > Math.Max(32, BytesPerClass >> (c + MinShift)))
        {
            Interlocked.Decrement(ref Counts[c]); // full: left to the GC
            return;
        }
        Classes[c].Enqueue(buffer);
    }
}
