using System.Runtime.InteropServices;
using NatsBroker.Storage.Internal;

namespace NatsBroker.Storage.Tests.Faults;

/// <summary>
/// The index capture of an image checkpoint (storage/common/SequenceIndex.Freeze.cs): the part under the store lock
/// looks only at the chunks changed since the last capture; the rest of the chunk list is worked out afterwards,
/// without the lock, and a chunk found to need a page after all is frozen late only if it is still unchanged.
/// </summary>
public sealed class IndexFreezeTests
{
    private const int Chunk = SequenceIndex.EntriesPerChunk;

    private static SequenceIndex Filled(int chunks)
    {
        var ix = new SequenceIndex();
        for (ulong q = 1; q <= (ulong)(chunks * Chunk); q++)
        {
            ref var e = ref ix.Add();
            e.SubjectId = (int)(q % 7);
            e.Timestamp = (long)q;
            e.Location = (long)q * 3;
            ix.MarkLive(q);
        }
        return ix;
    }

    private static byte[] Content(SequenceIndex ix, ulong chunk)
    {
        for (int k = 0; k < ix.ChunkSlots; k++)
        {
            if (ix.ChunkAt(k, out var data, out _, out _) == chunk) return MemoryMarshal.AsBytes(data!.Span).ToArray();
        }
        throw new InvalidOperationException($"chunk {chunk} not in memory");
    }

    /// <summary>What writers do to the index meanwhile: an entry rewritten, a message removed, one appended (its sequence returned).</summary>
    private static ulong RewriteRemoveAppend(SequenceIndex ix, ulong rewrite, long timestamp, ulong remove, int subject)
    {
        ix.GetForWrite(rewrite).Timestamp = timestamp;
        ix.GetForWrite(remove).SubjectId = -1;
        ix.MarkDead(remove);
        ulong next = ix.End;
        ix.Add().SubjectId = subject;
        ix.MarkLive(next);
        return next;
    }

    /// <summary>A first capture freezes everything; then one freeze each time so the next capture starts clean.</summary>
    private static void CaptureAll(SequenceIndex ix)
    {
        var f = ix.Freeze(all: true);
        f.Classify(_ => false);
        Assert.True(ix.FreezeLate(f));
        ix.EndFreeze(f);
    }

    [Fact]
    public void An_incremental_capture_freezes_only_the_chunks_changed_since_the_last_one_and_lists_every_chunk()
    {
        var ix = Filled(300);
        CaptureAll(ix);
        // Changes in 3 of 300 chunks: an entry rewritten (chunk 5), a message removed (chunk 120), an append (the last chunk).
        ix.GetForWrite(5UL * Chunk + 3).Timestamp = -5;
        ix.GetForWrite(120UL * Chunk + 9).SubjectId = -1;
        ix.MarkDead(120UL * Chunk + 9);
        ulong next = ix.End;
        ix.Add().SubjectId = 1;
        ix.MarkLive(next);
        ulong lastChunk = next / Chunk;
        var expected = new[] { 5UL, 120UL, lastChunk }.ToDictionary(c => c, c => Content(ix, c));

        ulong endAtCapture = ix.End;
        var f = ix.Freeze(all: false);
        // Under the lock: exactly the changed chunks, not the 300 others.
        Assert.Equal(expected.Keys.Order(), f.Frozen.Order());
        // Writers go on before the page copies: each frozen chunk is copied as it was at the capture.
        next = RewriteRemoveAppend(ix, rewrite: 5UL * Chunk + 4, timestamp: -6, remove: 120UL * Chunk + 10, subject: 2);

        f.Classify(_ => true);
        Assert.Empty(f.Late);
        Assert.Equal(ix.ChunkSlots, f.Chunks.Count);
        Assert.Equal(Enumerable.Range(0, ix.ChunkSlots).Select(k => (ulong)k), f.Chunks.Select(c => c.Chunk));
        var page = new byte[Chunk * IndexEntrySize];
        for (int k = 0; k < f.Chunks.Count; k++)
        {
            var (no, live, source) = f.Chunks[k];
            if (!expected.TryGetValue(no, out var want))
            {
                Assert.Equal(SequenceIndex.ChunkSource.Clean, source);
                continue;
            }
            Assert.Equal(SequenceIndex.ChunkSource.Frozen, source);
            int length = ix.CopyFrozen(f, k, page);
            if (length == page.Length) Assert.True(page.AsSpan().SequenceEqual(want), $"chunk {no} changed after the capture");
            else
            {
                // A compact page (few live entries): its live entries as captured, every other one dead. In the chunk
                // being appended to, only the entries below the capture's End count (the rest are not written yet).
                var got = new IndexEntry[Chunk];
                Assert.True(CompactIndexPage.Decode(page.AsSpan(0, length), got, out var error), error);
                var wanted = MemoryMarshal.Cast<byte, IndexEntry>(want);
                int held = (int)Math.Min((ulong)Chunk, endAtCapture - no * Chunk);
                for (int i = 0; i < held; i++)
                {
                    Assert.True(wanted[i].IsLive == got[i].IsLive, $"chunk {no} entry {i} changed after the capture");
                    if (wanted[i].IsLive) Assert.Equal(wanted[i], got[i]);
                }
            }
            if (no == 120) Assert.Equal(Chunk - 1, live); // the live count as captured (one more removed since)
        }
        ix.EndFreeze(f);

        // The writes made during that capture are the next capture's changes, and only those.
        var again = ix.Freeze(all: false);
        Assert.Equal(new[] { 5UL, 120UL, lastChunk }, again.Frozen.Order());
        ix.EndFreeze(again);
    }

    private static int IndexEntrySize => System.Runtime.CompilerServices.Unsafe.SizeOf<IndexEntry>();

    [Fact]
    public void A_chunk_taken_for_encoding_without_the_lock_keeps_the_captured_content_while_writers_change_it()
    {
        // The checkpoint takes a frozen chunk under the lock and encodes it without the lock (FileStore.ImageCheckpoint.cs):
        // writers meanwhile must work on a copy (SequenceIndex.Thaw), never on the chunk being encoded. Chunk 1 dense,
        // chunk 2 sparse (few live entries left), chunk 3 the one being appended to.
        var ix = Filled(3);
        for (ulong q = 2UL * Chunk; q < 3UL * Chunk; q++)
        {
            if (q % 8 == 0) continue;
            ix.GetForWrite(q).SubjectId = -1;
            ix.MarkDead(q);
        }
        ulong next = ix.End;
        ix.Add().SubjectId = 3;
        ix.MarkLive(next);
        CaptureAll(ix);
        ix.GetForWrite(1UL * Chunk + 5).Timestamp = -1;
        ix.GetForWrite(2UL * Chunk + 8).Timestamp = -2;
        next = ix.End;
        ix.Add().SubjectId = 4;
        ix.MarkLive(next);

        ulong endAtCapture = ix.End;
        var f = ix.Freeze(all: false);
        f.Classify(_ => true);
        Assert.Equal(new[] { 1UL, 2UL, 3UL }, f.Frozen.Order());
        var taken = new Dictionary<ulong, (int K, object Src, byte[] Page)>();
        var page = new byte[Chunk * IndexEntrySize];
        foreach (ulong no in new[] { 1UL, 2UL, 3UL })
        {
            int k = f.Chunks.FindIndex(c => c.Chunk == no);
            var src = ix.TakeFrozen(f, k);
            // What the page must be: encoded now, before any writer runs.
            int length = SequenceIndex.EncodeFrozen(f, k, src, page);
            taken[no] = (k, src, page.AsSpan(0, length).ToArray());
        }
        Assert.IsType<SparseChunk>(taken[2].Src);

        // Writers go on (under the lock, in the store) while the pages are encoded (without it).
        ix.GetForWrite(2UL * Chunk + 16).Timestamp = -4;
        next = RewriteRemoveAppend(ix, rewrite: 1UL * Chunk + 6, timestamp: -3, remove: 2UL * Chunk + 24, subject: 5);
        Assert.True(next < 4UL * Chunk);

        foreach (var (no, (k, src, want)) in taken)
        {
            int length = SequenceIndex.EncodeFrozen(f, k, src, page);
            Assert.True(page.AsSpan(0, length).SequenceEqual(want), $"chunk {no}: the page changed after the capture");
            ix.ReleaseFrozen(f, k);
        }
        ix.EndFreeze(f);
        Assert.True(endAtCapture <= next);

        // The index has every write, made on its copies.
        Assert.Equal(-3, ix.Get(1UL * Chunk + 6).Timestamp);
        Assert.Equal(-1, ix.Get(1UL * Chunk + 5).Timestamp);
        Assert.Equal(-4, ix.Get(2UL * Chunk + 16).Timestamp);
        Assert.False(ix.Get(2UL * Chunk + 24).IsLive);
        Assert.Equal(5, ix.Get(next).SubjectId);
        Assert.Equal((int)((1UL * Chunk + 7) % 7), ix.Get(1UL * Chunk + 7).SubjectId);
    }

    [Fact]
    public void A_clean_chunk_the_previous_image_lacks_is_frozen_late_only_while_it_is_unchanged()
    {
        var ix = Filled(40);
        CaptureAll(ix);
        ulong next = ix.End;
        ix.Add().SubjectId = 1;
        ix.MarkLive(next);

        // The previous image lacks chunks 7 and 9 (e.g. it was written before they were): they need pages.
        var f = ix.Freeze(all: false);
        var want7 = Content(ix, 7);
        f.Classify(c => c != 7 && c != 9);
        Assert.Equal(new[] { 7UL, 9UL }, f.Late.Select(l => l.Chunk));
        Assert.True(ix.FreezeLate(f));
        ix.GetForWrite(7UL * Chunk + 1).Timestamp = -1; // after the late freeze: copied first
        var page = new byte[Chunk * IndexEntrySize];
        int k7 = f.Chunks.FindIndex(c => c.Chunk == 7);
        Assert.Equal(SequenceIndex.ChunkSource.Frozen, f.Chunks[k7].Source);
        ix.CopyFrozen(f, k7, page);
        Assert.True(page.AsSpan().SequenceEqual(want7));
        int k9 = f.Chunks.FindIndex(c => c.Chunk == 9);
        ix.CopyFrozen(f, k9, page);
        ix.EndFreeze(f);

        // A chunk written between the capture and the late freeze has lost the content the capture saw: refused.
        var g = ix.Freeze(all: false);
        g.Classify(c => c != 11);
        Assert.Equal(new[] { 11UL }, g.Late.Select(l => l.Chunk));
        ix.GetForWrite(11UL * Chunk + 2).Timestamp = -2;
        Assert.False(ix.FreezeLate(g));
        ix.EndFreeze(g);
    }
}
