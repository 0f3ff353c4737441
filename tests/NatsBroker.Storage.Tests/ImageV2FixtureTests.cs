using System.Buffers.Binary;
using NatsBroker.Contracts;
using static NatsBroker.Storage.Tests.U;

namespace NatsBroker.Storage.Tests;

/// <summary>
/// An index image of version 2 (every page dense, 24-byte page table entries), written before message sizes were
/// counted as nats-server counts them (image version 4), is refused with a report and the store is rebuilt from its
/// blocks: every message and delete intact, its bytes in the new figure; the next checkpoint writes a version 4 image
/// the following open uses. <c>Fixtures/filestore-image-v2</c> was written by the engine before version 3 (its
/// per-block snapshots, idx/*.idx, removed: only the image and the blocks are kept), block_size 65536, periodic sync:
/// <code>
/// for (int i = 1; i &lt;= 2100; i++) s.Append("fx." + (i % 5), payload "p" + i);
/// s.Remove(10); s.Remove(20); s.Remove(30);
/// for (int i = 1024; i &lt; 2048; i++) if (i % 50 != 0) s.Remove(i);   // chunk 1 keeps 20 survivors
/// s.Remove(2090);
/// s.Dispose();                                                       // a clean close writes the image (version 2)
/// </code>
/// </summary>
public sealed class ImageV2FixtureTests : IDisposable
{
    private readonly string _dir = TempDir("fixture-image-v2");

    public void Dispose()
    {
        try { Directory.Delete(_dir, true); } catch (IOException) { }
    }

    private static void CopyDir(string from, string to)
    {
        Directory.CreateDirectory(to);
        foreach (var f in Directory.GetFiles(from)) System.IO.File.Copy(f, Path.Combine(to, Path.GetFileName(f)));
        foreach (var d in Directory.GetDirectories(from)) CopyDir(d, Path.Combine(to, Path.GetFileName(d)));
    }

    private static bool Gone(ulong q) => q is 10 or 20 or 30 or 2090 || (q >= 1024 && q < 2048 && q % 50 != 0);

    private IStreamStore OpenStore()
    {
        var r = new File.FileStoreFactory().Open(new StreamStoreConfig { StreamName = "fixture", EngineOptions = new Dictionary<string, string> { ["block_size"] = "65536" } }, _dir);
        Assert.True(r.IsOk, r.Error);
        return r.Store!;
    }

    private static void AssertContent(IStreamStore s, ulong last)
    {
        var m = new StoredMessage();
        ulong live = 0;
        for (ulong q = 1; q <= last; q++)
        {
            var st = s.Load(q, m);
            if (q <= 2100 && Gone(q))
            {
                Assert.Equal(StoreStatus.Deleted, st);
                continue;
            }
            Assert.Equal(StoreStatus.Ok, st);
            Assert.Equal("fx." + (q % 5), S(m.Subject));
            Assert.Equal(q <= 2100 ? "p" + q : "after-upgrade-" + q, S(m.Payload));
            live++;
        }
        var state = s.GetState();
        Assert.Equal(live, state.Messages);
        Assert.Equal(1UL, state.FirstSequence);
        Assert.Equal(last, state.LastSequence);
        Assert.Equal(StoreStatus.Ok, s.LoadLast(B("fx.0"), m));
        Assert.Equal(last - last % 5, m.Sequence);
    }

    /// <summary>(version, generation) of the newest valid-looking superblock slot of the image.</summary>
    private (int Version, long Generation) NewestSuperblock()
    {
        var bytes = System.IO.File.ReadAllBytes(Path.Combine(_dir, "idx", "index.img"));
        (int, long) best = (0, 0);
        for (int slot = 0; slot < 2; slot++)
        {
            var sb = bytes.AsSpan(slot * 4096, 48);
            if (!sb[..4].SequenceEqual("NBIS"u8)) continue;
            long gen = BinaryPrimitives.ReadInt64LittleEndian(sb[8..]);
            if (gen > best.Item2) best = (BinaryPrimitives.ReadUInt16LittleEndian(sb[4..]), gen);
        }
        return best;
    }

    /// <summary>The live messages' bytes as nats-server's file store counts them (no message of the fixture has headers).</summary>
    private static ulong ExpectedBytes(ulong last)
    {
        ulong bytes = 0;
        for (ulong q = 1; q <= last; q++)
        {
            if (q <= 2100 && Gone(q)) continue;
            string payload = q <= 2100 ? "p" + q : "after-upgrade-" + q;
            bytes += (ulong)GoSizes.File(B("fx." + (q % 5)).Length, 0, B(payload).Length);
        }
        return bytes;
    }

    [Fact]
    public void A_version_2_index_image_is_refused_and_the_next_checkpoint_writes_version_4()
    {
        var src = Path.Combine(AppContext.BaseDirectory, "Fixtures", "filestore-image-v2");
        Assert.True(Directory.Exists(src), "fixture missing: " + src);
        CopyDir(src, _dir);
        Assert.Equal((2, 1L), NewestSuperblock());

        var s = OpenStore();
        Assert.False(((File.FileStore)s).OpenedFromImage, "the version 2 image counts sizes in the old meaning");
        Assert.Contains(s.RecoveryReport, r => r.Contains("version 2", StringComparison.Ordinal));
        AssertContent(s, 2100);
        Assert.Equal(ExpectedBytes(2100), s.GetState().Bytes);
        for (ulong q = 2101; q <= 2110; q++) Assert.Equal(q, s.Put("fx." + (q % 5), "after-upgrade-" + q));
        s.Dispose(); // a clean close: a checkpoint, in a new version 4 file

        var (version, gen) = NewestSuperblock();
        Assert.Equal(4, version);
        Assert.True(gen >= 1);
        var s2 = OpenStore();
        Assert.Empty(s2.RecoveryReport);
        Assert.True(((File.FileStore)s2).OpenedFromImage, "the version 4 image was not used");
        AssertContent(s2, 2110);
        Assert.Equal(ExpectedBytes(2110), s2.GetState().Bytes);
        s2.Dispose();
    }
}
