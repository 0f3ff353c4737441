using NatsBroker.Contracts;
using static NatsBroker.Storage.Tests.U;

namespace NatsBroker.Storage.Tests;

/// <summary>
/// Index memory follows the live messages, not the span from the first to the last sequence: a KV-style
/// stream (max messages per subject 1) where one key is never updated keeps its first sequence at 1 while
/// the last sequence grows with every update.
/// </summary>
public sealed class IndexMemoryTests : IDisposable
{
    private readonly string _dir = TempDir("kvmem");

    public void Dispose()
    {
        try { Directory.Delete(_dir, true); } catch (IOException) { }
    }

    private static int KvWorkload(IStreamStore s, int updates, ref int done)
    {
        var payload = new byte[64];
        for (; done < updates; done++) Assert.True(s.Append(B("kv.k" + (done % 100)), default, payload).IsOk);
        var st = s.GetState();
        Assert.Equal(101UL, st.Messages);
        Assert.Equal(1UL, st.FirstSequence);
        return Chunks(s);
    }

    // IndexedStore is compiled into each engine assembly (storage/common), so the property is read by name.
    private static int Chunks(IStreamStore s)
        => (int)s.GetType().GetProperty("IndexChunks", System.Reflection.BindingFlags.Instance | System.Reflection.BindingFlags.NonPublic)!.GetValue(s)!;

    [Theory]
    [InlineData("memory")]
    [InlineData("file")]
    public void A_kv_workload_over_a_fixed_key_set_keeps_the_index_flat(string engine)
    {
        var cfg = new StreamStoreConfig
        {
            StreamName = "KV",
            Limits = new StreamLimits { MaxMessagesPerSubject = 1 },
            EngineOptions = new Dictionary<string, string> { ["block_size"] = "65536" },
        };
        IStreamStoreFactory f = engine == "memory" ? new Memory.MemoryStoreFactory() : new File.FileStoreFactory();
        var r = f.Open(cfg, engine == "memory" ? null : _dir);
        Assert.True(r.IsOk, r.Error);
        using var s = r.Store!;
        Assert.True(s.Append(B("kv.stuck"), default, B("written once")).IsOk);
        int done = 0;
        int early = KvWorkload(s, 20_000, ref done);
        int late = KvWorkload(s, 80_000, ref done);
        // A dense index would hold 80 chunks (80k sequences / 1024); the live entries sit in at most 3-4 chunks:
        // the stuck key's, and the ones the last 100 updates fall in.
        Assert.True(early <= 4, $"index chunks after 20k updates: {early}");
        Assert.True(late <= 4, $"index chunks after 80k updates: {late}");
        Assert.Equal("written once", S(s.Get(1).Payload));
        if (engine == "file")
        {
            // Reopen rebuilds the same sparse index.
            s.Dispose();
            var r2 = f.Open(cfg, _dir);
            Assert.True(r2.IsOk, r2.Error);
            using var s2 = r2.Store!;
            Assert.Equal(101UL, s2.GetState().Messages);
            Assert.True(Chunks(s2) <= 4, $"after reopen: {Chunks(s2)}");
            Assert.Equal("written once", S(s2.Get(1).Payload));
        }
    }
}
