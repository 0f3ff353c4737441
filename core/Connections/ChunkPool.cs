using System.Collections.Concurrent;

namespace NatsBroker.Connections;

/// <summary>
/// Process-wide pool of outbound chunks. <see cref="System.Buffers.ArrayPool{T}.Shared"/> keeps only a few
/// arrays per size per core, so a burst that queues megabytes for a slow reader would allocate fresh chunks;
/// this pool retains up to <see cref="MaxRetained"/> chunks (64 MiB) so bursts recycle instead.
/// </summary>
internal static class ChunkPool
{
    public const int ChunkSize = 64 * 1024;
    private const int MaxRetained = 1024;
    private static readonly ConcurrentQueue<byte[]> Chunks = new();
    private static int _retained;

    public static byte[] Rent()
    {
        if (Chunks.TryDequeue(out var chunk))
        {
            Interlocked.Decrement(ref _retained);
            return chunk;
        }
        return GC.AllocateUninitializedArray<byte>(ChunkSize);
    }

    public static void Return(byte[] chunk)
    {
        if (chunk.Length != ChunkSize) return;
        if (Interlocked.Increment(ref _retained) > MaxRetained)
        {
            Interlocked.Decrement(ref _retained);
            return;
        }
        Chunks.Enqueue(chunk);
    }
}
