using System.Buffers.Binary;
using NatsBroker.Contracts;
using static NatsBroker.Storage.Tests.U;

namespace NatsBroker.Storage.Tests;

/// <summary>
/// The file engine's stored bytes (nats-server's fileStoreMsgSize, <see cref="GoSizes.File"/>) are the same however
/// a store is opened: from its index image (with a replay of what was written after the checkpoint), from its
/// per-block index snapshots, or by scanning the blocks; and images and snapshots written before sizes were counted
/// this way (image versions 2 and 3, snapshot version 1) are rebuilt, not misread.
/// </summary>
public sealed class FileStoreSizeRecoveryTests : IDisposable
{
    private readonly string _dir = TempDir("sizes");
    private readonly List<IStreamStore> _open = [];
    private const string Hdr = "NATS/1.0\r\nNats-Msg-Id: m\r\n\r\n";

    public void Dispose()
    {
        foreach (var s in _open) s.Dispose();
        foreach (var d in new[] { _dir, _dir + "-copy" })
            try { if (Directory.Exists(d)) Directory.Delete(d, true); } catch (IOException) { }
    }

    private File.FileStore Open(string? dir = null)
    {
        var r = new File.FileStoreFactory().Open(new StreamStoreConfig { StreamName = "Z", EngineOptions = new Dictionary<string, string> { ["block_size"] = "8192" } }, dir ?? _dir);
        Assert.True(r.IsOk, r.Error);
        _open.Add(r.Store!);
        return (File.FileStore)r.Store!;
    }

    private void Close(IStreamStore s)
    {
        s.Dispose();
        _open.Remove(s);
    }

    /// <summary>Appends messages <paramref name="from"/>..<paramref name="to"/> (every third with headers, subjects of two lengths); their bytes.</summary>
    private static long Fill(IStreamStore s, int from, int to)
    {
        long bytes = 0;
        for (int i = from; i <= to; i++)
        {
            string subject = i % 2 == 0 ? "z." + i : "zone.europe.west.rack-17.sensor." + i;
            string headers = i % 3 == 0 ? Hdr : "";
            string payload = new('p', i % 50);
            Assert.Equal((ulong)i, s.Put(subject, payload, headers));
            bytes += GoSizes.File(B(subject).Length, B(headers).Length, B(payload).Length);
        }
        return bytes;
    }

    private static long SizeOf(IStreamStore s, ulong seq)
    {
        var m = s.Get(seq);
        return GoSizes.File(m.SubjectLength, m.HeadersLength, m.PayloadLength);
    }

    /// <summary>A closed store of 400 messages over several blocks, a few removed; its bytes.</summary>
    private long Build()
    {
        var s = Open();
        long bytes = Fill(s, 1, 400);
        foreach (ulong q in new ulong[] { 3, 10, 150, 299 })
        {
            bytes -= SizeOf(s, q);
            Assert.Equal(StoreStatus.Ok, s.Remove(q));
        }
        Assert.Equal((ulong)bytes, s.GetState().Bytes);
        Close(s);
        return bytes;
    }

    [Fact]
    public void Image_snapshots_and_a_scan_give_the_same_bytes()
    {
        long bytes = Build();
        var s = Open();
        Assert.True(s.OpenedFromImage, "a clean close writes the index image");
        Assert.Empty(s.RecoveryReport);
        Assert.Equal((ulong)bytes, s.GetState().Bytes);
        Close(s);

        System.IO.File.Delete(Path.Combine(_dir, "idx", "index.img"));
        s = Open();
        Assert.False(s.OpenedFromImage);
        Assert.NotEmpty(Directory.GetFiles(Path.Combine(_dir, "idx"), "*.idx"));
        Assert.Empty(s.RecoveryReport);
        Assert.Equal((ulong)bytes, s.GetState().Bytes);
        Close(s);

        Directory.Delete(Path.Combine(_dir, "idx"), true);
        s = Open();
        Assert.False(s.OpenedFromImage);
        Assert.Empty(s.RecoveryReport);
        Assert.Equal((ulong)bytes, s.GetState().Bytes);
        // Removing after a scan takes off the same figure.
        bytes -= SizeOf(s, 6);
        Assert.Equal(StoreStatus.Ok, s.Remove(6));
        Assert.Equal((ulong)bytes, s.GetState().Bytes);
    }

    [Fact]
    public async Task An_open_from_the_image_replays_later_appends_with_the_same_figure()
    {
        long bytes = Build();
        var s = Open();
        await s.FlushAsync(); // a checkpoint of the image
        bytes += Fill(s, 401, 460);
        Assert.Equal(StoreStatus.Ok, s.Commit());
        // The directory as a crash would leave it: the image of the checkpoint and the blocks written since.
        CopyDir(_dir, _dir + "-copy");
        var copy = Open(_dir + "-copy");
        Assert.True(copy.OpenedFromImage);
        Assert.Equal((ulong)bytes, copy.GetState().Bytes);
        Assert.Equal(s.GetState(), copy.GetState() with { Consumers = s.GetState().Consumers });
    }

    [Fact]
    public void Version_1_snapshots_are_rebuilt_silently()
    {
        long bytes = Build();
        System.IO.File.Delete(Path.Combine(_dir, "idx", "index.img"));
        var snaps = Directory.GetFiles(Path.Combine(_dir, "idx"), "*.idx");
        Assert.NotEmpty(snaps);
        foreach (var f in snaps)
        {
            var b = System.IO.File.ReadAllBytes(f);
            Assert.Equal(2, BinaryPrimitives.ReadUInt16LittleEndian(b.AsSpan(4)));
            BinaryPrimitives.WriteUInt16LittleEndian(b.AsSpan(4), 1);
            System.IO.File.WriteAllBytes(f, b);
        }
        var s = Open();
        Assert.Empty(s.RecoveryReport);
        Assert.Equal((ulong)bytes, s.GetState().Bytes);
        Close(s);
        foreach (var f in Directory.GetFiles(Path.Combine(_dir, "idx"), "*.idx"))
            Assert.Equal(2, BinaryPrimitives.ReadUInt16LittleEndian(System.IO.File.ReadAllBytes(f).AsSpan(4)));
    }

    [Fact]
    public void A_version_3_image_is_refused_and_the_next_checkpoint_writes_version_4()
    {
        long bytes = Build();
        var path = Path.Combine(_dir, "idx", "index.img");
        var img = System.IO.File.ReadAllBytes(path);
        for (int slot = 0; slot < 2; slot++)
            if (img.AsSpan(slot * 4096, 4).SequenceEqual("NBIS"u8))
                BinaryPrimitives.WriteUInt16LittleEndian(img.AsSpan(slot * 4096 + 4), 3);
        System.IO.File.WriteAllBytes(path, img);
        var s = Open();
        Assert.False(s.OpenedFromImage);
        Assert.Contains(s.RecoveryReport, r => r.Contains("version 3", StringComparison.Ordinal));
        Assert.Equal((ulong)bytes, s.GetState().Bytes);
        Close(s);
        s = Open();
        Assert.True(s.OpenedFromImage);
        Assert.Empty(s.RecoveryReport);
        Assert.Equal((ulong)bytes, s.GetState().Bytes);
    }

    private static void CopyDir(string from, string to)
    {
        Directory.CreateDirectory(to);
        foreach (var f in Directory.GetFiles(from)) System.IO.File.Copy(f, Path.Combine(to, Path.GetFileName(f)));
        foreach (var d in Directory.GetDirectories(from)) CopyDir(d, Path.Combine(to, Path.GetFileName(d)));
    }
}
