using NatsBroker.Storage.Internal;

namespace NatsBroker.Storage.Tests;

[CollectionDefinition(nameof(IndexChunkMemoryTests), DisableParallelization = true)]
public sealed class IndexChunkMemoryCollection;

/// <summary>
/// The sequence index's chunk allocator (storage/common/IndexChunkMemory.cs): chunks carved from 2 MiB huge-page
/// blocks never overlap, and a block whose chunks were all dropped is given back (one kept as a spare, one mapped ahead). Runs alone:
/// other tests' stores take chunks from the same process-wide allocator.
/// </summary>
[Collection(nameof(IndexChunkMemoryTests))]
public sealed class IndexChunkMemoryTests
{
    private const int N = 200; // about 5 blocks of 42 chunks

    [Fact]
    public void Chunks_do_not_overlap_and_dropped_blocks_are_given_back()
    {
        Collect();
        int before = IndexChunkMemory.BlockCount;
        var chunks = TakeAndFill(N);
        for (int i = 0; i < N; i++)
        {
            Assert.Equal((ulong)i * 1024, chunks[i][0].Prev);
            Assert.Equal((ulong)i * 1024 + 1023, chunks[i][1023].Prev);
        }
        if (!HugePages.Supported)
        {
            // No huge pages (not Linux, or THP "never"): every chunk is a managed array and no block is mapped.
            Assert.Equal(0, IndexChunkMemory.BlockCount);
            return;
        }
        // 42 chunks per 2 MiB block: the live chunks alone need this many blocks (blocks mapped before may hold some).
        Assert.True(IndexChunkMemory.BlockCount >= (N + 41) / 42, $"{IndexChunkMemory.BlockCount} blocks for {N} chunks (before: {before})");
        chunks = null;
        Collect();
        // At most two blocks more than before: the empty one kept as a spare and one mapped ahead.
        Assert.True(IndexChunkMemory.BlockCount <= before + 2, $"{IndexChunkMemory.BlockCount} blocks still mapped after every chunk was dropped (before: {before})");

        // The blocks given back are mapped again on demand, and the chunks are usable.
        var again = TakeAndFill(N);
        Assert.Equal(N * 1024UL - 1, again[N - 1][1023].Prev);
        GC.KeepAlive(again);
    }

    private static IndexChunk[] TakeAndFill(int n)
    {
        var chunks = new IndexChunk[n];
        for (int i = 0; i < n; i++)
        {
            chunks[i] = IndexChunk.Take();
            for (int e = 0; e < 1024; e++) chunks[i][e].Prev = (ulong)(i * 1024 + e);
        }
        return chunks;
    }

    private static void Collect()
    {
        for (int i = 0; i < 3; i++)
        {
            GC.Collect();
            GC.WaitForPendingFinalizers();
        }
    }
}
