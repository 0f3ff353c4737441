using NatsBroker.Contracts;
using static NatsBroker.Storage.Tests.U;

namespace NatsBroker.Storage.Tests;

/// <summary>
/// Stores written by earlier versions of the file engine must keep opening. <c>Fixtures/filestore-v1</c> was
/// written by the format-1 engine before index snapshots existed (blocks only: no index files), with
/// this workload (periodic sync, block_size 4096): 200 messages on fx.0..fx.4 in 4 KiB blocks, compact to 5, removes of
/// 10/20/30, and a consumer "dur" that delivered 3 (stream 7) and acked 1 (stream 5):
/// <code>
/// internal static void Describe(IStreamStore s)
/// {
/// for (int i = 1; i <= 200; i++) s.Put("fx." + (i % 5), Payload(i));
/// s.Compact(5);
/// s.Remove(10);
/// s.Remove(20);
/// s.Remove(30);
/// s.OpenConsumer("dur", out var c);
/// c!.UpdateDelivered(1, 5, 1, 1_000);
/// c.UpdateDelivered(2, 6, 1, 2_000);
/// c.UpdateDelivered(3, 7, 1, 3_000);
/// c.UpdateAcked(1, 5);
/// }
/// </code>
/// </summary>
public sealed class FormatFixtureTests : IDisposable
{
    private readonly string _dir = TempDir("fixture");

    public void Dispose()
    {
        try { Directory.Delete(_dir, true); } catch (IOException) { }
    }

    internal static string Payload(int i) => "fixture-" + i + new string('f', i % 37);

    private static void CopyDir(string from, string to)
    {
        Directory.CreateDirectory(to);
        foreach (var f in Directory.GetFiles(from)) System.IO.File.Copy(f, Path.Combine(to, Path.GetFileName(f)));
        foreach (var d in Directory.GetDirectories(from)) CopyDir(d, Path.Combine(to, Path.GetFileName(d)));
    }

    [Fact]
    public void A_format_1_store_without_index_files_opens_with_all_its_data()
    {
        var src = Path.Combine(AppContext.BaseDirectory, "Fixtures", "filestore-v1");
        Assert.True(Directory.Exists(src), "fixture missing: " + src);
        CopyDir(src, _dir);
        var r = new File.FileStoreFactory().Open(new StreamStoreConfig { StreamName = "fixture", EngineOptions = new Dictionary<string, string> { ["block_size"] = "4096" } }, _dir);
        Assert.True(r.IsOk, r.Error);
        using var s = r.Store!;
        Assert.Empty(s.RecoveryReport);
        var st = s.GetState();
        Assert.Equal(5UL, st.FirstSequence);
        Assert.Equal(200UL, st.LastSequence);
        Assert.Equal(193UL, st.Messages);
        Assert.Equal(5, st.Subjects);
        var m = new StoredMessage();
        for (int i = 5; i <= 200; i++)
        {
            if (i is 10 or 20 or 30)
            {
                Assert.Equal(StoreStatus.Deleted, s.Load((ulong)i, m));
                continue;
            }
            Assert.Equal(StoreStatus.Ok, s.Load((ulong)i, m));
            Assert.Equal("fx." + (i % 5), S(m.Subject));
            Assert.Equal(Payload(i), S(m.Payload));
        }
        Assert.Equal(StoreStatus.Ok, s.LoadLast(B("fx.3"), m));
        Assert.Equal(198UL, m.Sequence);
        Assert.Equal(StoreStatus.Ok, s.OpenConsumer("dur", out var c));
        var cs = new ConsumerState();
        c!.GetState(cs);
        Assert.Equal(new SequencePair(3, 7), cs.Delivered);
        Assert.Equal(new SequencePair(1, 5), cs.AckFloor);
        Assert.Equal(2, cs.Pending.Count);
        // The old store takes new writes and reopens (its first clean close adds idx/: snapshots and the index image).
        Assert.Equal(201UL, s.Put("fx.1", "after-upgrade"));
        s.Dispose();
        Assert.True(Directory.Exists(Path.Combine(_dir, "idx")), "no index files after the first clean close");
        var r2 = new File.FileStoreFactory().Open(new StreamStoreConfig { StreamName = "fixture", EngineOptions = new Dictionary<string, string> { ["block_size"] = "4096" } }, _dir);
        Assert.True(r2.IsOk, r2.Error);
        using var s2 = r2.Store!;
        Assert.Empty(s2.RecoveryReport);
        var st2 = s2.GetState();
        Assert.Equal(5UL, st2.FirstSequence);
        Assert.Equal(201UL, st2.LastSequence);
        Assert.Equal(194UL, st2.Messages);
        for (int i = 5; i <= 200; i++)
        {
            var ls = s2.Load((ulong)i, m);
            if (i is 10 or 20 or 30)
            {
                Assert.Equal(StoreStatus.Deleted, ls);
                continue;
            }
            Assert.Equal(StoreStatus.Ok, ls);
            Assert.Equal(Payload(i), S(m.Payload));
        }
        Assert.Equal(StoreStatus.Ok, s2.Load(201, m));
        Assert.Equal("after-upgrade", S(m.Payload));
        Assert.Equal(StoreStatus.Ok, s2.OpenConsumer("dur", out var c2));
        c2!.GetState(cs);
        Assert.Equal(new SequencePair(1, 5), cs.AckFloor);
    }
}
