using System.Runtime.InteropServices;
using NatsBroker.Contracts;
using NatsBroker.Storage.File;
using NatsBroker.Storage.Internal;
using static NatsBroker.Storage.Tests.U;
using static NatsBroker.Storage.Tests.Faults.FiveSubjectContent;

namespace NatsBroker.Storage.Tests.Faults;

/// <summary>
/// Sparse index chunks and the index image (storage/common/SequenceIndex.Sparse.cs, FORMAT.md "Index image"): a
/// chunk with few live entries is written as a compact page (image version 3), so an image written from sparse chunks
/// is small and reopens to the same content, also after a power cut; a chunk frozen by a capture that goes sparse
/// meanwhile still yields its page as captured.
/// </summary>
public sealed class SparseIndexImageTests
{
    private const string Root = "/sparse";
    private const int Chunk = SequenceIndex.EntriesPerChunk;

    private static IStreamStore Open(FaultFileSystem fs)
    {
        var cfg = new StreamStoreConfig { StreamName = "X", Sync = SyncPolicy.Always, SyncInterval = TimeSpan.FromHours(1) };
        var opt = new FileStoreOptions { BlockSize = 64 * 1024, CacheBlocks = 1, FileSystem = fs.Session(), ImageIntervalBytes = 256 * 1024 };
        var r = FileStore.Open(cfg, Root + "/x", opt);
        Assert.True(r.IsOk, $"{r.Status} {r.Error}");
        return r.Store!;
    }

    [Fact]
    public async Task A_store_whose_index_went_sparse_reopens_after_checkpoints_and_power_cuts()
    {
        var fs = FaultFileSystem.WithDirectory(Root);
        var s = Open(fs);
        const ulong n = 40_000;
        var live = new SortedSet<ulong>();
        for (ulong q = 1; q <= n; q++)
        {
            Assert.True(s.Append(B(Subject(q)), default, B(Payload(q))).IsOk);
            live.Add(q);
        }
        var rng = new Random(17);
        for (int round = 0; round < 6; round++)
        {
            // Scattered removals: most of what is left in every chunk, sequence 1 kept, so most chunks go sparse.
            foreach (ulong q in live.Where(q => q != 1 && rng.Next(3) != 0).ToList())
            {
                Assert.Equal(StoreStatus.Ok, s.Remove(q));
                live.Remove(q);
            }
            Assert.Equal(StoreStatus.Ok, await s.FlushAsync()); // a checkpoint: pages of sparse chunks, expanded
            foreach (ulong q in live.Where(q => q != 1 && rng.Next(10) == 0).ToList())
            {
                Assert.Equal(StoreStatus.Ok, s.Remove(q)); // after the checkpoint: replayed from the blocks
                live.Remove(q);
            }
            if (round % 2 == 0)
            {
                fs.PowerCut(rng);
                s.Dispose();
            }
            else s.Dispose(); // a clean close: the next open is from the image alone
            s = Open(fs);
            FiveSubjectContent.AssertHolds(s, n, live, "checkpoint round");
        }
        s.Dispose();
    }

    [Fact]
    public void A_frozen_chunk_that_goes_sparse_is_copied_as_captured_and_a_sparse_one_expands_to_its_page()
    {
        var ix = new SequenceIndex();
        for (ulong q = 1; q <= 4 * Chunk; q++)
        {
            ref var e = ref ix.Add();
            e.SubjectId = (int)(q % 7);
            e.Timestamp = (long)q;
            e.Location = (long)q * 3;
            ix.MarkLive(q);
        }
        var f0 = ix.Freeze(all: true);
        f0.Classify(_ => false);
        Assert.True(ix.FreezeLate(f0));
        ix.EndFreeze(f0);

        // Chunk 2 loses all but 10 entries after a capture froze it: it goes sparse; the capture still gets it whole.
        var f = ix.Freeze(all: false);
        Assert.Empty(f.Frozen); // nothing changed since the previous capture
        ix.EndFreeze(f);
        ix.GetForWrite(2UL * Chunk).Timestamp = -1;
        f = ix.Freeze(all: false);
        Assert.Equal(new[] { 2UL }, f.Frozen);
        var captured = Page(ix, 2);
        for (ulong q = 2UL * Chunk; q < 3UL * Chunk; q++)
        {
            if (q % 100 == 0) continue;
            ix.GetForWrite(q).SubjectId = -1;
            ix.MarkDead(q);
        }
        Assert.Equal(1, ix.SparseChunks);
        f.Classify(_ => true);
        Assert.True(ix.FreezeLate(f));
        var page = new byte[Chunk * SequenceIndex.EntrySize];
        Assert.Equal(page.Length, ix.CopyFrozen(f, f.Chunks.FindIndex(c => c.Chunk == 2), page)); // 1024 live at the capture: dense
        Assert.True(page.AsSpan().SequenceEqual(captured), "the frozen chunk changed after the capture");
        ix.EndFreeze(f);

        // The next capture freezes the sparse chunk and writes it compact (10 survivors: 50 bytes each); expanded, the
        // survivors are as they are and the rest dead.
        var g = ix.Freeze(all: false);
        Assert.Equal(new[] { 2UL }, g.Frozen);
        g.Classify(_ => true);
        int length = ix.CopyFrozen(g, g.Chunks.FindIndex(c => c.Chunk == 2), page);
        ix.EndFreeze(g);
        Assert.Equal(10 * CompactIndexPage.BytesPerEntry, length);
        var entries = new IndexEntry[Chunk];
        Assert.True(CompactIndexPage.Decode(page.AsSpan(0, length), entries, out var error), error);
        for (int i = 0; i < Chunk; i++)
        {
            ulong q = 2UL * Chunk + (ulong)i;
            if (q % 100 == 0)
            {
                Assert.Equal((int)(q % 7), entries[i].SubjectId);
                Assert.Equal((long)q * 3, entries[i].Location);
                Assert.Equal(q == 2UL * Chunk ? -1 : (long)q, entries[i].Timestamp);
            }
            else Assert.False(entries[i].IsLive, $"seq {q} reads live");
        }
        Assert.Equal(2100UL, ix.NextLive(2UL * Chunk + 1, ix.End - 1)); // chunk 2 is 2048..3071; its survivors 2100, 2200 .. 3000
        Assert.Equal(3UL * Chunk, ix.NextLive(2UL * Chunk + 1001, ix.End - 1));
        Assert.Equal(2400L * 3, ix.Get(2400).Location);
        Assert.False(ix.Get(2401).IsLive);
    }

    /// <summary>Chunk <paramref name="chunk"/> as it is now, dense.</summary>
    private static byte[] Page(SequenceIndex ix, ulong chunk)
    {
        for (int k = 0; k < ix.ChunkSlots; k++)
        {
            if (ix.ChunkAt(k, out var data, out _, out _) == chunk) return MemoryMarshal.AsBytes(data!.Span).ToArray();
        }
        throw new InvalidOperationException($"chunk {chunk} not dense in memory");
    }
}
