using System.Runtime.InteropServices;
using NatsBroker.Storage.Internal;

namespace NatsBroker.Storage.Tests.Faults;

/// <summary>
/// The sequence index against a model (a sorted map of live sequences) under random appends, scattered and front
/// removals, rewrites and captures (storage/common/SequenceIndex.Sparse.cs): chunks go dense to sparse, shrink, are
/// released and trimmed while captures are running; every lookup, every <see cref="SequenceIndex.NextLive"/> and
/// every captured page must match the model as it was at the capture.
/// </summary>
public sealed class SparseIndexModelTests
{
    private const int Chunk = SequenceIndex.EntriesPerChunk;

    private sealed class Model
    {
        public readonly SortedDictionary<ulong, long> Live = [];
        private readonly List<ulong> _list = [];
        private readonly Dictionary<ulong, int> _pos = [];

        public void Add(ulong q, long ts)
        {
            Live[q] = ts;
            _pos[q] = _list.Count;
            _list.Add(q);
        }

        public void Remove(ulong q)
        {
            Live.Remove(q);
            int i = _pos[q];
            ulong last = _list[^1];
            _list[i] = last;
            _pos[last] = i;
            _list.RemoveAt(_list.Count - 1);
            _pos.Remove(q);
        }

        public ulong Pick(Random rng) => _list[rng.Next(_list.Count)];
        public int Count => _list.Count;
    }

    private static void AddOne(SequenceIndex ix, Model m)
    {
        ulong q = ix.End;
        ref var e = ref ix.Add();
        e.SubjectId = (int)(q % 7);
        e.Timestamp = (long)q;
        e.Location = (long)q * 3;
        e.Size = (int)(q % 100);
        ix.MarkLive(q);
        m.Add(q, (long)q);
    }

    private static void RemoveOne(SequenceIndex ix, Model m, ulong q)
    {
        ulong first = m.Live.First().Key;
        ref var e = ref ix.GetForWrite(q);
        Assert.True(e.IsLive, $"seq {q} should be live");
        e.SubjectId = -1;
        e.Prev = e.Next = 0;
        ix.MarkDead(q);
        m.Remove(q);
        // As IndexedStore does: an empty index is reset; a removed first message trims the chunks below the new first.
        if (m.Count == 0) ix.Reset(ix.End);
        else if (q == first) ix.TrimBelow(m.Live.First().Key);
    }

    private static void Check(SequenceIndex ix, Model m, Random rng)
    {
        if (m.Count == 0) return;
        ulong lo = m.Live.First().Key, hi = ix.End - 1;
        for (int i = 0; i < 200; i++)
        {
            ulong q = lo + (ulong)rng.NextInt64((long)(hi - lo + 1));
            ref var e = ref ix.Get(q);
            bool live = m.Live.TryGetValue(q, out long ts);
            Assert.True(live == e.IsLive, $"seq {q}: model live {live}, index live {e.IsLive}");
            if (live)
            {
                Assert.Equal(ts, e.Timestamp);
                Assert.Equal((long)q * 3, e.Location);
                Assert.Equal((int)(q % 7), e.SubjectId);
            }
            ulong expected = 0;
            foreach (var k in m.Live.Keys)
            {
                if (k >= q) { expected = k; break; }
            }
            Assert.Equal(expected, ix.NextLive(q, hi));
        }
    }

    [Theory]
    [InlineData(1)]
    [InlineData(2)]
    [InlineData(3)]
    public void Random_appends_removals_and_captures_match_a_model(int seed)
    {
        var rng = new Random(seed);
        var ix = new SequenceIndex();
        var m = new Model();
        SequenceIndex.IndexFreeze? freeze = null;
        Dictionary<ulong, long>? atCapture = null;
        ulong firstAtCapture = 0, endAtCapture = 0;
        int sparseSeen = 0, pagesChecked = 0, compactSeen = 0;
        for (int round = 0; round < 60; round++)
        {
            int burst = rng.Next(1, 4 * Chunk);
            for (int i = 0; i < burst; i++) AddOne(ix, m);
            // Scattered removals of most of what is live, sometimes nearly all, sometimes from the front.
            double share = rng.Next(4) switch { 0 => 0.5, 1 => 0.9, 2 => 0.99, _ => 0.2 };
            int removals = (int)(m.Count * share);
            for (int i = 0; i < removals && m.Count > 0; i++)
                RemoveOne(ix, m, rng.Next(5) == 0 ? m.Live.First().Key : m.Pick(rng));
            // Rewrites of live entries (a subject list's Prev/Next, a timestamp).
            for (int i = 0; i < 20 && m.Count > 0; i++)
            {
                ulong q = m.Pick(rng);
                long ts = rng.NextInt64();
                ix.GetForWrite(q).Timestamp = ts;
                m.Live[q] = ts;
            }
            sparseSeen = Math.Max(sparseSeen, ix.SparseChunks);
            Check(ix, m, rng);

            if (freeze is not null)
            {
                // Finish the capture started a round ago: every frozen page is the content the model had then.
                freeze.Classify(_ => false);
                if (ix.FreezeLate(freeze))
                {
                    var page = new byte[Chunk * SequenceIndex.EntrySize];
                    for (int k = 0; k < freeze.Chunks.Count; k++)
                    {
                        var (no, live, source) = freeze.Chunks[k];
                        Assert.Equal(SequenceIndex.ChunkSource.Frozen, source);
                        int length = ix.CopyFrozen(freeze, k, page);
                        // Dense (48 KiB) or, with few live entries, compact (image version 3): read both the way the image does.
                        var entries = length == page.Length ? MemoryMarshal.Cast<byte, IndexEntry>(page) : Compact(page.AsSpan(0, length));
                        if (length != page.Length) compactSeen++;
                        int liveInPage = 0;
                        for (int i = 0; i < Chunk; i++)
                        {
                            ulong q = no * Chunk + (ulong)i;
                            // Outside [first, End) at the capture entries are undefined: below the first live sequence
                            // (lowest chunk: a pooled chunk after a reset is written from the reset sequence on) and at
                            // or above End (the chunk being appended to: each entry is written by Add). The store never
                            // looks there.
                            if (q < firstAtCapture || q >= endAtCapture) continue;
                            bool want = atCapture!.TryGetValue(q, out long ts);
                            Assert.True(want == entries[i].IsLive, $"chunk {no} seq {q}: captured live {want}, page live {entries[i].IsLive} (round {round}, end at capture {endAtCapture}, first {firstAtCapture}, live now {m.Live.ContainsKey(q)}, page ts {entries[i].Timestamp} subj {entries[i].SubjectId}, source {source}, live {live}, low {ix.Low})");
                            if (!want) continue;
                            liveInPage++;
                            Assert.Equal(ts, entries[i].Timestamp);
                            Assert.Equal((long)q * 3, entries[i].Location);
                        }
                        Assert.Equal(live, liveInPage);
                        pagesChecked++;
                    }
                }
                ix.EndFreeze(freeze);
                freeze = null;
            }
            if (rng.Next(2) == 0)
            {
                // A capture now; the next round's changes happen while it runs.
                freeze = ix.Freeze(all: rng.Next(3) == 0);
                atCapture = new Dictionary<ulong, long>(m.Live);
                firstAtCapture = m.Count > 0 ? m.Live.First().Key : ix.End;
                endAtCapture = ix.End;
            }
        }
        Assert.True(sparseSeen > 0, "no chunk ever went sparse: the test does not exercise the sparse form");
        Assert.True(pagesChecked > 0, "no captured page was checked");
        Assert.True(compactSeen > 0, "no captured page was compact: the test does not exercise compact pages");
        // Memory follows the live entries: at most 512 B each plus a fixed 1 MiB (two dense chunks, pools, ring).
        Assert.True(ix.MemoryBytes <= 512L * m.Count + (1 << 20), $"index {ix.MemoryBytes} B for {m.Count} live");
    }

    /// <summary>A compact page expanded to the chunk's dense entries, as the index image loads it.</summary>
    private static Span<IndexEntry> Compact(ReadOnlySpan<byte> page)
    {
        var dense = new IndexEntry[Chunk];
        Assert.True(CompactIndexPage.Decode(page, dense, out var error), error);
        return dense;
    }
}
