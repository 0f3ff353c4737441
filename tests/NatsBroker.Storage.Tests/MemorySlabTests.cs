using NatsBroker.Contracts;
using static NatsBroker.Storage.Tests.U;

namespace NatsBroker.Storage.Tests;

/// <summary>
/// The memory engine keeps message bytes in slabs: managed arrays first, then 2 MiB huge-page slabs (native memory,
/// one prepared ahead on the make-ahead thread) once a store grows, and managed ones whenever none is ready. Every byte must read back the same across both
/// kinds, through removals, erases, purges and recycling.
/// </summary>
public sealed class MemorySlabTests
{
    private static bool HugePagesOn()
    {
        try
        {
            return !System.IO.File.ReadAllText("/sys/kernel/mm/transparent_hugepage/enabled").Contains("[never]", StringComparison.Ordinal);
        }
        catch (IOException)
        {
            return false;
        }
    }

    private static int HugeSlabs(IStreamStore s)
        => (int)s.GetType().GetProperty("HugeSlabsInUse", System.Reflection.BindingFlags.Instance | System.Reflection.BindingFlags.NonPublic)!.GetValue(s)!;

    private static byte[] Payload(int i)
    {
        // Sizes from 1 B to 3,000 B, so messages straddle every slab boundary position.
        var p = new byte[1 + (i * 37) % 3000];
        for (int k = 0; k < p.Length; k++) p[k] = (byte)(i + k);
        return p;
    }

    [Fact]
    public void Messages_read_back_across_managed_and_huge_slabs_through_removals_and_purges()
    {
        var cfg = new StreamStoreConfig
        {
            StreamName = "SLABS",
            EngineOptions = new Dictionary<string, string> { ["slab_size"] = "65536" },
        };
        var r = new Memory.MemoryStoreFactory().Open(cfg, null);
        Assert.True(r.IsOk, r.Error);
        using var s = r.Store!;
        const int n = 12_000; // ~18 MB: two managed 64 KiB slabs, then huge slabs
        for (int i = 0; i < n; i++)
        {
            // Past the managed slabs, give the make-ahead thread time to have a huge slab ready (it runs concurrently).
            if (i % 3_000 == 2_000) Thread.Sleep(100);
            string hdr = i % 5 == 0 ? "NATS/1.0\r\nI: " + i + "\r\n\r\n" : "";
            Assert.Equal(StoreStatus.Ok, s.Append(B("slab." + (i % 7)), B(hdr), Payload(i)).Status);
        }

        // Huge slabs are made ahead on another thread; an append that finds none ready takes a managed slab instead
        // (MemoryStore.MakeSlabMemory), so how many of the ~9 slabs are huge depends on timing: at least one is.
        int huge = HugeSlabs(s);
        if (HugePagesOn()) Assert.True(huge >= 1, $"huge slabs in use: {huge}");
        else Assert.Equal(0, huge);

        void Check(ulong seq)
        {
            var m = s.Get(seq);
            int i = (int)seq - 1;
            Assert.Equal("slab." + (i % 7), S(m.Subject));
            Assert.True(Payload(i).AsSpan().SequenceEqual(m.Payload), $"payload of {seq}");
            Assert.Equal(i % 5 == 0 ? "NATS/1.0\r\nI: " + i + "\r\n\r\n" : "", S(m.Headers));
        }

        for (ulong q = 1; q <= n; q++) Check(q);

        // Remove every other message (erase some: their bytes are overwritten in place), then check the rest.
        for (ulong q = 1; q <= n; q += 2) Assert.Equal(StoreStatus.Ok, q % 4 == 1 ? s.Remove(q) : s.Erase(q));
        for (ulong q = 2; q <= n; q += 2) Check(q);

        // Removing the front releases whole slabs to the pool (or frees them); appends then reuse them.
        Assert.Equal(StoreStatus.Ok, s.Purge(default, upToSequence: n / 2).Status);
        for (int i = n; i < n + 3_000; i++) Assert.Equal((ulong)i + 1, s.Append(B("slab." + (i % 7)), i % 5 == 0 ? B("NATS/1.0\r\nI: " + i + "\r\n\r\n") : default, Payload(i)).Sequence);
        for (ulong q = n / 2 + 2; q <= n; q += 2) Check(q);
        for (ulong q = n + 1; q <= n + 3_000; q++) Check(q);

        Assert.Equal(StoreStatus.Ok, s.Purge().Status);
        Assert.Equal(0UL, s.GetState().Messages);
        Assert.Equal((ulong)n + 3_001, s.Append(B("slab.0"), default, B("after purge")).Sequence);
        Assert.Equal("after purge", S(s.Get((ulong)n + 3_001).Payload));
    }
}
