using NatsBroker.Contracts;
using NatsBroker.Storage.File;
using static NatsBroker.Storage.Tests.U;

namespace NatsBroker.Storage.Tests.Faults;

/// <summary>
/// The index image (FORMAT.md "Index image"): after a clean close, open reads the image's head, the newest block
/// and 40 bytes per sealed block, and keeps the sequence index on disk until it is touched; a store that changed
/// since (crash, power cut) is recovered from the blocks; a damaged page stops the store and the next open
/// rebuilds the index; Erase in a block the image describes survives a power cut.
/// </summary>
public sealed class IndexImageTests
{
    private const string Root = "/img";
    private const int BlockSize = 4096;
    private const string ImagePath = Root + "/x/idx/index.img";

    private static FaultFileSystem NewFileSystem() => FaultFileSystem.WithDirectory(Root);

    private static IStreamStore Open(FaultFileSystem fs, SyncPolicy sync = SyncPolicy.Always, StreamLimits? limits = null)
    {
        var cfg = new StreamStoreConfig { StreamName = "X", Sync = sync, SyncInterval = TimeSpan.FromHours(1), Limits = limits ?? StreamLimits.None };
        var opt = new FileStoreOptions { BlockSize = BlockSize, CacheBlocks = 1, FileSystem = fs.Session() };
        var r = FileStore.Open(cfg, Root + "/x", opt);
        Assert.True(r.IsOk, $"{r.Status} {r.Error}");
        return r.Store!;
    }

    private static string Subject(ulong seq) => "s." + (seq % 7);
    private static string Payload(ulong seq) => "payload-" + seq + new string((char)('a' + (int)(seq % 26)), 40 + (int)(seq % 50));

    private static void Fill(IStreamStore s, ref ulong n, ulong upTo)
    {
        while (n < upTo)
        {
            n++;
            Assert.True(s.Append(B(Subject(n)), default, B(Payload(n))).IsOk);
        }
    }

    private static void AssertContent(IStreamStore s, ulong n, ISet<ulong> gone)
    {
        var m = new StoredMessage();
        for (ulong q = 1; q <= n; q++)
        {
            var st = s.Load(q, m);
            if (gone.Contains(q))
            {
                Assert.True(st is StoreStatus.Deleted or StoreStatus.NotFound, $"seq {q}: {st}");
                continue;
            }
            Assert.Equal(StoreStatus.Ok, st);
            Assert.Equal(Payload(q), S(m.Payload));
            Assert.Equal(Subject(q), S(m.Subject));
        }
        var state = s.GetState();
        Assert.Equal(n - (ulong)gone.Count, state.Messages);
        Assert.Equal(n, state.LastSequence);
        // Per-subject state came back too: counts and the last message of each subject.
        for (int k = 0; k < 7; k++)
        {
            ulong expected = 0, last = 0;
            for (ulong q = 1; q <= n; q++)
                if (q % 7 == (ulong)k && !gone.Contains(q)) { expected++; last = q; }
            Assert.Equal(expected, s.CountMatching(B("s." + k)));
            if (last == 0) continue;
            Assert.Equal(StoreStatus.Ok, s.LoadLast(B("s." + k), m));
            Assert.Equal(last, m.Sequence);
        }
    }

    private static int Paged(IStreamStore s) => ((FileStore)s).PagedIndexChunks;
    private static int InMemory(IStreamStore s) => ((FileStore)s).IndexChunks;

    [Fact]
    public void Open_after_a_clean_close_keeps_the_index_on_disk_until_it_is_touched()
    {
        var fs = NewFileSystem();
        var s = Open(fs);
        ulong n = 0;
        Fill(s, ref n, 6000);
        var gone = new HashSet<ulong> { 3, 700, 2500, 5999 };
        foreach (var q in gone) Assert.Equal(StoreStatus.Ok, s.Remove(q));
        s.Dispose();
        Assert.True(fs.Session().FileExists(ImagePath));
        int blockCount = fs.Session().ListFiles(Root + "/x/msgs").Count;

        fs.ResetReadCounters();
        var s2 = Open(fs);
        // From msgs/: the newest block and the 40-byte header of each sealed block, nothing else.
        Assert.True(fs.BlockBytesRead <= BlockSize + 40 * blockCount, $"open read {fs.BlockBytesRead} block bytes ({blockCount} blocks)");
        int pagedAtOpen = Paged(s2);
        Assert.True(pagedAtOpen >= 4, $"index pages left on disk: {pagedAtOpen}");
        Assert.True(InMemory(s2) <= 2, $"index chunks in memory after open: {InMemory(s2)}");
        AssertContent(s2, n, gone);
        Assert.Equal(0, Paged(s2)); // everything was touched by the reads

        // Writes after a fast open: appends, removes (in paged-in chunks), a purge of one subject.
        Fill(s2, ref n, 6500);
        foreach (var q in new ulong[] { 10, 4000, 6400 })
        {
            Assert.Equal(StoreStatus.Ok, s2.Remove(q));
            gone.Add(q);
        }
        s2.Dispose();

        var s3 = Open(fs);
        AssertContent(s3, n, gone);
        var purged = s3.Purge(B("s.3"));
        Assert.Equal(StoreStatus.Ok, purged.Status);
        for (ulong q = 1; q <= n; q++) if (q % 7 == 3) gone.Add(q);
        s3.Dispose();

        var s4 = Open(fs);
        AssertContent(s4, n, gone);
        s4.Dispose();
    }

    [Fact]
    public void Index_files_of_another_version_are_ignored_and_the_store_opens_from_its_blocks()
    {
        // FORMAT.md "Compatibility": an index image of version 1 (written by the engine before checkpoint images)
        // and snapshots of another version are refused, with a line in RecoveryReport, and the store opens from its
        // blocks with the same content; its next clean close writes current ones. The version fields are changed
        // with valid checksums, so only the version check can refuse them.
        var fs = NewFileSystem();
        var s = Open(fs);
        ulong n = 0;
        Fill(s, ref n, 400);
        var gone = new HashSet<ulong> { 2, 150, 399 };
        foreach (var q in gone) Assert.Equal(StoreStatus.Ok, s.Remove(q));
        s.Dispose();

        var v = fs.Session();
        using (var img = v.OpenFile(ImagePath, create: false))
        {
            var sb = new byte[48];
            for (long slot = 0; slot < 2; slot++)
            {
                if (img.Read(sb, slot * 4096) < sb.Length || sb[0] != (byte)'N') continue;
                System.Buffers.Binary.BinaryPrimitives.WriteUInt16LittleEndian(sb.AsSpan(4), 1);
                System.Buffers.Binary.BinaryPrimitives.WriteUInt32LittleEndian(sb.AsSpan(44), Crc32C.Compute(sb.AsSpan(0, 44)));
                img.Write(sb, slot * 4096);
            }
            img.Sync();
        }
        var snapshots = v.ListFiles(Root + "/x/idx").Where(f => f.EndsWith(".idx", StringComparison.Ordinal)).ToList();
        Assert.True(snapshots.Count >= 3, $"snapshots: {snapshots.Count}");
        foreach (var name in snapshots)
        {
            var path = Root + "/x/idx/" + name;
            var snap = v.ReadAllBytes(path);
            System.Buffers.Binary.BinaryPrimitives.WriteUInt16LittleEndian(snap.AsSpan(4), 3); // a newer version (2 is current, 1 is rebuilt silently)
            System.Buffers.Binary.BinaryPrimitives.WriteUInt32LittleEndian(snap.AsSpan(snap.Length - 4), Crc32C.Compute(snap.AsSpan(0, snap.Length - 4)));
            using var f = v.OpenFile(path, create: true);
            f.Write(snap, 0);
            f.Sync();
        }

        var s2 = Open(fs);
        Assert.False(((FileStore)s2).OpenedFromImage, "an index image of version 1 was used");
        Assert.Contains(s2.RecoveryReport, r => r.Contains("of another version or layout", StringComparison.Ordinal));
        Assert.Equal(snapshots.Count, s2.RecoveryReport.Count(r => r.Contains("of another version; block scanned", StringComparison.Ordinal)));
        AssertContent(s2, n, gone);
        s2.Dispose();

        var s3 = Open(fs);
        Assert.True(((FileStore)s3).OpenedFromImage, "the close after the refused image wrote a current one");
        AssertContent(s3, n, gone);
        s3.Dispose();
    }

    [Fact]
    public void A_store_that_changed_after_the_close_is_recovered_from_its_blocks()
    {
        var fs = NewFileSystem();
        var s = Open(fs);
        ulong n = 0;
        Fill(s, ref n, 3000);
        s.Dispose();
        var rng = new Random(11);
        var gone = new HashSet<ulong>();
        for (int round = 0; round < 10; round++)
        {
            // Opened from the image, changed (sync always: every change is acknowledged durable), power cut.
            var s2 = Open(fs);
            Fill(s2, ref n, n + (ulong)rng.Next(1, 300));
            for (int i = 0; i < 5; i++)
            {
                ulong q = (ulong)rng.NextInt64(1, (long)n + 1);
                if (!gone.Add(q)) continue;
                Assert.Equal(StoreStatus.Ok, round % 2 == 0 ? s2.Remove(q) : s2.Erase(q));
            }
            fs.PowerCut(rng);
            s2.Dispose();
            var s3 = Open(fs);
            AssertContent(s3, n, gone);
            s3.Dispose(); // a clean close: the next round opens from a fresh image
        }
    }

    [Fact]
    public void A_damaged_index_page_stops_the_store_and_the_next_open_rebuilds_the_index()
    {
        var fs = NewFileSystem();
        var s = Open(fs);
        ulong n = 0;
        Fill(s, ref n, 5000);
        s.Dispose();
        var v = fs.Session();
        var bytes = v.ReadAllBytes(ImagePath);
        // The close wrote the first (whole) image: pages in ascending chunk order from IndexImage.DataStart, the
        // head after them. Flip a byte in the page of the newest messages (chunk 4: sequences 4096..5000).
        bytes[(int)IndexImage.DataStart + 4 * IndexImage.PageSize + 100] ^= 0x5A;
        using (var f = v.OpenFile(ImagePath, create: true)) f.Write(bytes, 0);

        var s2 = Open(fs);
        var m = new StoredMessage();
        Assert.Equal(StoreStatus.Ok, s2.Load(1, m)); // another page: fine
        Assert.NotEqual(StoreStatus.Ok, s2.Load(n, m));
        Assert.NotNull(s2.Failure);
        Assert.Contains("index image", s2.Failure, StringComparison.Ordinal);
        Assert.False(s2.Append(B("s.1"), default, B("x")).IsOk);
        s2.Dispose();

        var s3 = Open(fs);
        Assert.Null(s3.Failure);
        AssertContent(s3, n, new HashSet<ulong>());
        s3.Dispose();
    }

    [Fact]
    public void Deleted_entries_in_the_index_chunk_being_appended_to_stay_deleted_after_a_fast_open()
    {
        var fs = NewFileSystem();
        var s = Open(fs, SyncPolicy.Periodic);
        ulong n = 0;
        Fill(s, ref n, 2100);
        // Everything in the chunk of sequences 2048.. is deleted, the stream still starts at 1.
        for (ulong q = 2048; q <= n; q++) Assert.Equal(StoreStatus.Ok, s.Remove(q));
        s.Dispose();

        var s2 = Open(fs, SyncPolicy.Periodic);
        Assert.True(Paged(s2) > 0);
        Assert.True(s2.Append(B("new"), default, B("x")).IsOk);
        var m = new StoredMessage();
        Assert.Equal(StoreStatus.Ok, s2.LoadNext(B(">"), 2048, m));
        Assert.Equal(2101UL, m.Sequence);
        Assert.Equal(2048UL, s2.CountMatching(B(">")));
        Assert.Equal(StoreStatus.Deleted, s2.Load(2050, m));
        s2.Dispose();
    }

    [Fact]
    public void Limits_and_ttl_state_survive_a_fast_open()
    {
        var fs = NewFileSystem();
        var limits = new StreamLimits { MaxMessagesPerSubject = 2 };
        var s = Open(fs, SyncPolicy.Periodic, limits);
        for (int i = 0; i < 3000; i++) Assert.True(s.Append(B("k." + (i % 50)), default, B("v" + i)).IsOk);
        Assert.True(s.Append(B("ttl.one"), default, B("short"), ttl: 3_600_000_000_000).IsOk);
        var before = s.GetState();
        s.Dispose();

        var s2 = Open(fs, SyncPolicy.Periodic, limits);
        Assert.True(Paged(s2) > 0);
        var after = s2.GetState();
        Assert.Equal(before.Messages, after.Messages);
        Assert.Equal(before.FirstSequence, after.FirstSequence);
        Assert.Equal(before.LastSequence, after.LastSequence);
        Assert.Equal(before.Subjects, after.Subjects);
        // The per-subject limit keeps working on entries that come back from the image.
        for (int i = 0; i < 100; i++) Assert.True(s2.Append(B("k." + (i % 50)), default, B("w" + i)).IsOk);
        Assert.Equal(101UL, s2.CountMatching(B(">")));
        var m = new StoredMessage();
        Assert.Equal(StoreStatus.Ok, s2.LoadLast(B("k.7"), m));
        Assert.Equal("w57", S(m.Payload));
        Assert.Equal(StoreStatus.Ok, s2.LoadNext(B("k.7"), 1, m));
        Assert.Equal("w7", S(m.Payload));
        Assert.Equal(StoreStatus.Ok, s2.LoadLast(B("ttl.one"), m));
        s2.Dispose();
    }

    [Fact]
    public async Task A_reader_stalled_on_an_index_page_does_not_block_appends()
    {
        var fs = NewFileSystem();
        ulong n = 0;
        var s = Open(fs, SyncPolicy.Periodic);
        Fill(s, ref n, 3000); // three index chunks (1024 entries each)
        s.Dispose();
        using var s2 = Open(fs, SyncPolicy.Periodic);
        int pagedAtOpen = Paged(s2);
        Assert.True(pagedAtOpen >= 3, $"opened from the image: {pagedAtOpen} pages on disk");
        // One append first: it pages in the chunk being appended to (under the lock, as every write does).
        Assert.True(s2.Append(B("w"), default, B("first")).IsOk);
        using var entered = new ManualResetEventSlim();
        using var release = new ManualResetEventSlim();
        fs.BeforeRead = path =>
        {
            if (!path.EndsWith("index.img", StringComparison.Ordinal)) return;
            entered.Set();
            release.Wait(TimeSpan.FromSeconds(30));
        };
        var reader = Task.Run(() =>
        {
            var m = new StoredMessage();
            var st = s2.Load(2, m); // chunk 0: still on disk
            return (st, st == StoreStatus.Ok ? S(m.Payload) : "");
        });
        Assert.True(entered.Wait(TimeSpan.FromSeconds(30)), "the reader never read the index page");
        // The reader is inside the read of its index page now. Appends (and a hot read) must not wait for it.
        var appender = Task.Run(() =>
        {
            for (int i = 0; i < 200; i++) Assert.True(s2.Append(B("w"), default, B("x")).IsOk);
            // (Not GetState: its first timestamp is in the stalled page, and it waits for it too, outside the lock.)
            return s2.Load(n + 201, new StoredMessage());
        });
        bool finished = await Task.WhenAny(appender, Task.Delay(TimeSpan.FromSeconds(20))) == appender;
        release.Set();
        fs.BeforeRead = null;
        Assert.True(finished, "appends were blocked by a reader waiting on an index page");
        Assert.Equal(StoreStatus.Ok, await appender);
        Assert.Equal((StoreStatus.Ok, Payload(2)), await reader);
        // The page the reader loaded outside the lock was installed: the rest of the old data reads back too.
        var m2 = new StoredMessage();
        for (ulong q = 1; q <= n; q++)
        {
            Assert.Equal(StoreStatus.Ok, s2.Load(q, m2));
            Assert.Equal(Payload(q), S(m2.Payload));
        }
        Assert.Equal(0, Paged(s2));
    }

    [Fact]
    public void Loads_that_walk_several_index_pages_read_them_outside_the_lock_and_find_the_same_messages()
    {
        var fs = NewFileSystem();
        ulong n = 0;
        var s = Open(fs, SyncPolicy.Periodic);
        Fill(s, ref n, 5000); // five index chunks
        var before = s.GetState();
        var gone = new HashSet<ulong>();
        // A gap of removed messages across a page boundary: LoadNext walks from one page into the next.
        for (ulong q = 1000; q <= 2100; q++)
        {
            Assert.Equal(StoreStatus.Ok, s.Remove(q));
            gone.Add(q);
        }
        before = s.GetState();
        s.Dispose();
        using var s2 = Open(fs, SyncPolicy.Periodic);
        Assert.True(Paged(s2) >= 4, $"opened from the image: {Paged(s2)} pages on disk");
        int readsUnderTest = 0;
        fs.BeforeRead = path =>
        {
            if (path.EndsWith("index.img", StringComparison.Ordinal)) Interlocked.Increment(ref readsUnderTest);
        };
        var m = new StoredMessage();
        // The first timestamp is in a page still on disk (GetState reads it outside the lock).
        Assert.Equal(before, s2.GetState());
        Assert.Equal(StoreStatus.Ok, s2.LoadNext(B(">"), 1000, m));
        Assert.Equal(2101UL, m.Sequence);
        Assert.Equal(StoreStatus.Ok, s2.LoadNext(B("s.*"), 999, m));
        Assert.Equal(999UL, m.Sequence);
        Assert.Equal(StoreStatus.Ok, s2.LoadNext(B(Subject(3)), 1500, m));
        Assert.Equal(2101UL + ((3 + 7 - 2101 % 7) % 7), m.Sequence);
        Assert.Equal(StoreStatus.Ok, s2.LoadLast(B(">"), m));
        Assert.Equal(n, m.Sequence);
        Assert.True(readsUnderTest > 0, "no index page was read");
        fs.BeforeRead = null;
        AssertContent(s2, n, gone);
    }
}
