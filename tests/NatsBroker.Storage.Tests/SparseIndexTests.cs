using NatsBroker.Contracts;
using Xunit.Abstractions;
using static NatsBroker.Storage.Tests.U;

namespace NatsBroker.Storage.Tests;

/// <summary>
/// Index memory follows the live messages inside chunks too (storage/common/SequenceIndex.Sparse.cs): after
/// scattered removals that leave one message in a thousand over a span of a million sequences, the index holds
/// about the survivors, not 48 KiB per 1024 sequences; lookups, scans, removals and a reopen still work.
/// </summary>
public sealed class SparseIndexTests(ITestOutputHelper output) : IDisposable
{
    private const int N = 1_000_000;
    private const int Keep = 1000;
    private readonly string _dir = TempDir("sparse");

    public void Dispose()
    {
        try { Directory.Delete(_dir, true); } catch (IOException) { }
    }

    // IndexedStore is compiled into each engine assembly (storage/common), so the property is read by name.
    private static long IndexBytes(IStreamStore s)
        => (long)s.GetType().GetProperty("IndexBytes", System.Reflection.BindingFlags.Instance | System.Reflection.BindingFlags.NonPublic)!.GetValue(s)!;

    private static string Subject(ulong seq) => "s." + (seq % 13);
    private static byte[] Payload(ulong seq) => BitConverter.GetBytes(seq * 2654435761UL);

    private IStreamStore Open(string engine)
    {
        var cfg = new StreamStoreConfig { StreamName = "SPARSE" };
        IStreamStoreFactory f = engine == "memory" ? new Memory.MemoryStoreFactory() : new File.FileStoreFactory();
        var r = f.Open(cfg, engine == "memory" ? null : _dir);
        Assert.True(r.IsOk, r.Error);
        return r.Store!;
    }

    /// <summary>Every survivor loads with its own content, every other sequence reads as gone, and a scan visits exactly the survivors.</summary>
    private static void AssertSurvivors(IStreamStore s, SortedSet<ulong> live)
    {
        var m = new StoredMessage(64);
        foreach (ulong q in live)
        {
            Assert.Equal(StoreStatus.Ok, s.Load(q, m));
            Assert.Equal(Subject(q), S(m.Subject));
            Assert.Equal(Payload(q), m.Payload.ToArray());
        }
        foreach (ulong q in new ulong[] { 2, 999, 1001, 500_500, N - 1 })
            if (!live.Contains(q)) Assert.NotEqual(StoreStatus.Ok, s.Load(q, m));
        var seen = new List<ulong>();
        for (ulong q = 1; s.LoadNext(default, q, m) == StoreStatus.Ok; q = m.Sequence + 1) seen.Add(m.Sequence);
        Assert.Equal(live, seen);
        // Per-subject walks go through the entries' linked lists, across sparse chunks.
        for (int k = 0; k < 13; k++)
        {
            var mine = live.Where(q => q % 13 == (ulong)k).ToList();
            Assert.Equal((ulong)mine.Count, s.CountMatching(B("s." + k)));
            if (mine.Count == 0) continue;
            Assert.Equal(StoreStatus.Ok, s.LoadLast(B("s." + k), m));
            Assert.Equal(mine[^1], m.Sequence);
            Assert.Equal(StoreStatus.Ok, s.LoadNext(B("s." + k), mine[0] + 1, m));
            Assert.Equal(mine.Count > 1 ? mine[1] : 0, mine.Count > 1 ? m.Sequence : 0);
        }
        var st = s.GetState();
        Assert.Equal((ulong)live.Count, st.Messages);
        Assert.Equal(live.Min, st.FirstSequence);
    }

    [Theory]
    [InlineData("memory")]
    [InlineData("file")]
    public void Scattered_removals_leave_index_memory_proportional_to_the_survivors(string engine)
    {
        var s = Open(engine);
        for (ulong q = 1; q <= N; q++) Assert.Equal(StoreStatus.Ok, s.Append(B(Subject(q)), default, Payload(q)).Status);
        long full = IndexBytes(s);
        var live = new SortedSet<ulong>();
        // Sequence 1 stays, so the first sequence (and the span) does not move; every 1000th stays.
        for (ulong q = 1; q <= N; q++)
        {
            if (q == 1 || q % Keep == 0) { live.Add(q); continue; }
            Assert.Equal(StoreStatus.Ok, s.Remove(q));
        }
        long sparse = IndexBytes(s);
        output.WriteLine($"{engine}: index {full} B with {N} live, {sparse} B with {live.Count} live");
        // A dense index holds 977 chunks of 48 KiB here (46.9 MiB) whatever the live count. Bound: 512 B per survivor
        // plus a fixed 1 MiB (the lowest and the newest chunk stay dense; pools of reusable chunks; the ring).
        long bound = 512L * live.Count + (1 << 20);
        Assert.True(sparse <= bound, $"index {sparse} B for {live.Count} live messages (bound {bound}, all live {full})");
        Assert.True(full > 40L << 20, $"all live: {full} B"); // the measure itself counts dense chunks
        AssertSurvivors(s, live);

        // Removing more survivors shrinks it further (every other one).
        foreach (ulong q in live.Where(q => q != 1 && q % (2 * Keep) == 0).ToList())
        {
            Assert.Equal(StoreStatus.Ok, s.Remove(q));
            live.Remove(q);
        }
        Assert.True(IndexBytes(s) <= sparse, $"after more removals {IndexBytes(s)} B, before {sparse} B");
        AssertSurvivors(s, live);

        // Appends after the removals: a new dense chunk, the survivors unchanged.
        for (ulong q = N + 1; q <= N + 3000; q++)
        {
            Assert.Equal(StoreStatus.Ok, s.Append(B(Subject(q)), default, Payload(q)).Status);
            live.Add(q);
        }
        AssertSurvivors(s, live);
        if (engine == "memory")
        {
            s.Dispose();
            return;
        }

        // A clean reopen (index image): pages come back as they are touched and are compacted as they come in.
        s.Dispose();
        using var s2 = Open(engine);
        AssertSurvivors(s2, live);
        long reopened = IndexBytes(s2);
        output.WriteLine($"after reopen: {reopened} B with {live.Count} live");
        bound = 512L * live.Count + (1 << 20) + 3 * 48 * 1024;
        Assert.True(reopened <= bound, $"after reopen, every page touched: {reopened} B for {live.Count} live (bound {bound})");
        ulong middle = live.ElementAt(live.Count / 2);
        Assert.Equal(StoreStatus.Ok, s2.Remove(middle));
        live.Remove(middle);
        AssertSurvivors(s2, live);
    }
}
