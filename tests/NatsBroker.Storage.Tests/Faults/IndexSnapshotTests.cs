using NatsBroker.Contracts;
using NatsBroker.Storage.File;
using static NatsBroker.Storage.Tests.U;

namespace NatsBroker.Storage.Tests.Faults;

/// <summary>
/// Per-block index snapshots (FORMAT.md "Index snapshots"): open reads the snapshots and only the newest block,
/// counted in bytes read through <see cref="FaultFileSystem"/>; stale, corrupt or missing snapshots fall back to
/// a scan; a power cut between a checkpoint and shutdown still recovers every acknowledged change.
/// </summary>
public sealed class IndexSnapshotTests
{
    private const string Root = "/snap";
    private const int BlockSize = 4096;

    private static FaultFileSystem NewFileSystem() => FaultFileSystem.WithDirectory(Root);

    private static IStreamStore Open(FaultFileSystem fs, SyncPolicy sync = SyncPolicy.Always)
    {
        var cfg = new StreamStoreConfig { StreamName = "X", Sync = sync, SyncInterval = TimeSpan.FromHours(1) };
        var opt = new FileStoreOptions { BlockSize = BlockSize, CacheBlocks = 1, FileSystem = fs.Session() };
        var r = FileStore.Open(cfg, Root + "/x", opt);
        Assert.True(r.IsOk, $"{r.Status} {r.Error}");
        return r.Store!;
    }

    private static string Payload(ulong seq) => "payload-" + seq + new string((char)('a' + (int)(seq % 26)), 40 + (int)(seq % 50));

    private static long TotalBlockBytes(FaultFileSystem fs)
    {
        var v = fs.Session();
        long total = 0;
        foreach (var name in v.ListFiles(Root + "/x/msgs"))
        {
            using var f = v.OpenFile(Root + "/x/msgs/" + name, create: false);
            total += f.Length;
        }
        return total;
    }

    private static void AssertContent(IStreamStore s, ulong n, ISet<ulong> gone)
    {
        var m = new StoredMessage();
        for (ulong q = 1; q <= n; q++)
        {
            if (gone.Contains(q))
            {
                Assert.NotEqual(StoreStatus.Ok, s.Load(q, m));
                continue;
            }
            Assert.Equal(StoreStatus.Ok, s.Load(q, m));
            Assert.Equal(Payload(q), S(m.Payload));
            Assert.Equal("s." + (q % 7), S(m.Subject));
        }
        var st = s.GetState();
        Assert.Equal(n - (ulong)gone.Count, st.Messages);
        Assert.Equal(n, st.LastSequence);
    }

    [Fact]
    public void Open_after_a_clean_close_reads_the_snapshots_and_only_the_newest_block()
    {
        var fs = NewFileSystem();
        var s = Open(fs);
        const ulong n = 3000;
        for (ulong q = 1; q <= n; q++) Assert.True(s.Append(B("s." + (q % 7)), default, B(Payload(q))).IsOk);
        var gone = new HashSet<ulong> { 5, 77, 1500 };
        foreach (var q in gone) Assert.Equal(StoreStatus.Ok, s.Remove(q));
        s.Dispose();
        long blockBytes = TotalBlockBytes(fs);
        Assert.True(blockBytes > 60 * BlockSize, $"the workload should fill many blocks ({blockBytes} bytes)");

        fs.ResetReadCounters();
        var s2 = Open(fs);
        long withSnapshots = fs.BlockBytesRead;
        long allWithSnapshots = fs.BytesRead;
        AssertContent(s2, n, gone);
        Assert.Equal(3000UL - 3, s2.CountMatching(B(">")));
        s2.Dispose();
        // From msgs/ only the newest block (at most one block size) and each sealed block's 40-byte header are read;
        // the snapshots are a fraction of the data.
        int blockCount = fs.Session().ListFiles(Root + "/x/msgs").Count;
        Assert.True(withSnapshots <= BlockSize + 40 * blockCount, $"open read {withSnapshots} block bytes of {blockBytes} ({blockCount} blocks)");
        Assert.True(allWithSnapshots < blockBytes / 2, $"open read {allWithSnapshots} bytes in all, blocks hold {blockBytes}");

        // Without the snapshots the same open scans every block: the counter above measures what it claims.
        fs.Session().DeleteDirectory(Root + "/x/idx");
        fs.ResetReadCounters();
        var s3 = Open(fs);
        Assert.True(fs.BlockBytesRead >= blockBytes - BlockSize, $"a scan reads every block ({fs.BlockBytesRead} of {blockBytes})");
        AssertContent(s3, n, gone);
        s3.Dispose();
    }

    [Fact]
    public void Stale_or_corrupt_snapshots_are_ignored_and_the_block_is_scanned()
    {
        var fs = NewFileSystem();
        var s = Open(fs);
        const ulong n = 600;
        for (ulong q = 1; q <= n; q++) Assert.True(s.Append(B("s." + (q % 7)), default, B(Payload(q))).IsOk);
        s.Dispose();
        var v = fs.Session();
        // Without the index image (which would make open skip the snapshots altogether).
        v.DeleteFile(Root + "/x/idx/index.img");
        var snaps = v.ListFiles(Root + "/x/idx").Where(f => f.EndsWith(".idx", StringComparison.Ordinal)).Order(StringComparer.Ordinal).ToArray();
        Assert.True(snaps.Length >= 5);
        // Corrupt one (flip a byte), make another stale (its snapshot claims another block length), drop a third.
        var p0 = Root + "/x/idx/" + snaps[0];
        var bytes = v.ReadAllBytes(p0);
        bytes[bytes.Length / 2] ^= 0x5A;
        using (var f = v.OpenFile(p0, create: true)) f.Write(bytes, 0);
        var p1 = Root + "/x/idx/" + snaps[1];
        bytes = v.ReadAllBytes(p1);
        // Length field at offset 16; the checksum is recomputed so only staleness can reject it.
        BitConverter.GetBytes(BitConverter.ToInt64(bytes, 16) + 1).CopyTo(bytes, 16);
        BitConverter.GetBytes(Crc32C.Compute(bytes.AsSpan(0, bytes.Length - 4))).CopyTo(bytes, bytes.Length - 4);
        using (var f = v.OpenFile(p1, create: true)) f.Write(bytes, 0);
        v.DeleteFile(Root + "/x/idx/" + snaps[3]);

        fs.ResetReadCounters();
        var s2 = Open(fs);
        AssertContent(s2, n, new HashSet<ulong>());
        Assert.Contains(s2.RecoveryReport, r => r.Contains(snaps[0], StringComparison.Ordinal) && r.Contains("corrupt", StringComparison.Ordinal));
        // Three blocks scanned besides the newest.
        Assert.True(fs.BlockBytesRead > 3 * (BlockSize / 2), $"expected three scanned blocks, read {fs.BlockBytesRead}");
        s2.Dispose();
        // The clean close rewrote them: the next open reads only the newest block again.
        fs.ResetReadCounters();
        var s3 = Open(fs);
        Assert.True(fs.BlockBytesRead <= BlockSize + 40 * fs.Session().ListFiles(Root + "/x/msgs").Count, $"read {fs.BlockBytesRead}");
        AssertContent(s3, n, new HashSet<ulong>());
        s3.Dispose();
    }

    [Fact]
    public async Task A_power_cut_between_a_checkpoint_and_shutdown_loses_nothing_acknowledged()
    {
        for (int round = 0; round < 20; round++)
        {
            var fs = NewFileSystem();
            var s = Open(fs);
            var rng = new Random(round);
            ulong n = 0;
            var gone = new HashSet<ulong>();
            while (n < 800) Assert.True(s.Append(B("s." + (++n % 7)), default, B(Payload(n))).IsOk);
            Assert.Equal(StoreStatus.Ok, await s.FlushAsync()); // checkpoint: sealed blocks get snapshots
            Assert.NotEmpty(fs.Session().ListFiles(Root + "/x/idx"));

            // After the checkpoint: appends, removes and erases that hit snapshotted blocks, then the power goes.
            for (int i = 0; i < 200; i++)
            {
                int op = rng.Next(10);
                if (op < 6)
                {
                    Assert.True(s.Append(B("s." + (++n % 7)), default, B(Payload(n))).IsOk);
                }
                else
                {
                    ulong q = (ulong)rng.NextInt64(1, (long)n + 1);
                    if (gone.Contains(q)) continue;
                    var st = op < 9 ? s.Remove(q) : s.Erase(q);
                    Assert.Equal(StoreStatus.Ok, st);
                    gone.Add(q);
                }
            }
            fs.PowerCut(rng);
            s.Dispose();

            var s2 = Open(fs);
            AssertContent(s2, n, gone);
            s2.Dispose();
            // And once more after a clean close (snapshots rewritten for the blocks the cut left without one).
            var s3 = Open(fs);
            AssertContent(s3, n, gone);
            s3.Dispose();
        }
    }

    [Fact]
    public void A_bit_flip_in_a_block_restored_from_its_snapshot_is_found_when_read()
    {
        var fs = NewFileSystem();
        var s = Open(fs);
        const ulong n = 600;
        for (ulong q = 1; q <= n; q++) Assert.True(s.Append(B("s." + (q % 7)), default, B(Payload(q))).IsOk);
        s.Dispose();
        var v = fs.Session();
        var blocks = v.ListFiles(Root + "/x/msgs").Order(StringComparer.Ordinal).ToArray();
        var target = Root + "/x/msgs/" + blocks[2];
        using (var f = v.OpenFile(target, create: false))
        {
            var b = new byte[1];
            long pos = f.Length / 2;
            f.Read(b, pos);
            b[0] ^= 0x10;
            f.Write(b, pos);
        }
        var s2 = Open(fs);
        var m = new StoredMessage();
        int corrupt = 0;
        for (ulong q = 1; q <= n; q++)
        {
            var r = s2.Load(q, m);
            if (r == StoreStatus.Corrupt) { corrupt++; Assert.Contains(blocks[2], s2.LastError!, StringComparison.Ordinal); }
            else { Assert.Equal(StoreStatus.Ok, r); Assert.Equal(Payload(q), S(m.Payload)); }
        }
        Assert.Equal(1, corrupt);
        s2.Dispose();
    }

    [Fact]
    public async Task An_unsynced_erase_in_a_snapshotted_block_never_reopens_as_a_corrupt_message()
    {
        // Periodic sync: the erase rewrite of a sealed block and the tombstone in the newest block are not fsynced
        // when the power goes, so a cut can keep the rewrite and lose the tombstone. The block's snapshot must be
        // gone by then (Erase deletes it durably first), or open would index a message whose record is erased.
        int keptErased = 0;
        for (int round = 0; round < 60; round++)
        {
            var fs = NewFileSystem();
            var s = Open(fs, SyncPolicy.Periodic);
            ulong n = 0;
            while (n < 400) Assert.True(s.Append(B("s." + (++n % 7)), default, B(Payload(n))).IsOk);
            Assert.Equal(StoreStatus.Ok, await s.FlushAsync()); // durable, and snapshots for the sealed blocks
            var rng = new Random(round);
            var erased = new HashSet<ulong>();
            while (erased.Count < 5)
            {
                ulong q = (ulong)rng.NextInt64(1, 300);
                if (erased.Add(q)) Assert.Equal(StoreStatus.Ok, s.Erase(q));
            }
            fs.PowerCut(rng);
            s.Dispose();

            var s2 = Open(fs, SyncPolicy.Periodic);
            var m = new StoredMessage();
            for (ulong q = 1; q <= n; q++)
            {
                var r = s2.Load(q, m);
                if (erased.Contains(q) && r != StoreStatus.Ok)
                {
                    Assert.True(r is StoreStatus.Deleted or StoreStatus.NotFound, $"round {round}: erased sequence {q} reopened as {r}");
                    keptErased++;
                    continue;
                }
                Assert.Equal(StoreStatus.Ok, r);
                Assert.Equal(Payload(q), S(m.Payload));
            }
            s2.Dispose();
        }
        Assert.True(keptErased > 0, "some power cut should have kept an erase");
    }

    [Fact]
    public async Task A_checkpoint_stalled_on_the_disk_does_not_block_appends()
    {
        // The flush tick writes the snapshots of sealed blocks (a read of the block, a write and two fsyncs each).
        // It did that under the store lock, so a slow disk (or thousands of blocks made durable by one periodic
        // sync) stalled every publisher. Here the snapshot's fsync hangs until the appends are done.
        var fs = NewFileSystem();
        var cfg = new StreamStoreConfig { StreamName = "X", Sync = SyncPolicy.Always };
        var opt = new FileStoreOptions { BlockSize = BlockSize, CacheBlocks = 0, FileSystem = fs.Session() };
        var r = FileStore.Open(cfg, Root + "/x", opt);
        Assert.True(r.IsOk, r.Error);
        var s = r.Store!;
        using var entered = new ManualResetEventSlim();
        using var release = new ManualResetEventSlim();
        int stalled = 0;
        fs.BeforeSync = path =>
        {
            // Only the first snapshot fsync stalls (later ones may run after the test gave up on a blocked store).
            if (!path.EndsWith(".idx.tmp", StringComparison.Ordinal) || Interlocked.Exchange(ref stalled, 1) == 1) return;
            entered.Set();
            release.Wait(TimeSpan.FromSeconds(60));
        };
        ulong n = 0;
        var appender = Task.Run(() =>
        {
            // Appends roll 4 KiB blocks; the flush tick that follows a roll checkpoints the sealed block and stalls.
            var until = DateTime.UtcNow + TimeSpan.FromSeconds(30);
            while (!entered.IsSet && DateTime.UtcNow < until) Assert.True(s.Append(B("s." + ((n + 1) % 7)), default, B(Payload(++n))).IsOk);
            Assert.True(entered.IsSet, "no checkpoint reached the disk");
            for (int i = 0; i < 200; i++) Assert.True(s.Append(B("s." + ((n + 1) % 7)), default, B(Payload(++n))).IsOk);
        });
        bool finished = await Task.WhenAny(appender, Task.Delay(TimeSpan.FromSeconds(40))) == appender;
        release.Set();
        Assert.True(finished, "appends were blocked by a checkpoint waiting on the disk");
        await appender;
        fs.BeforeSync = null;
        Assert.Equal(StoreStatus.Ok, await s.FlushAsync());
        s.Dispose();
        using var s2 = Open(fs);
        AssertContent(s2, n, new HashSet<ulong>());
    }
}
