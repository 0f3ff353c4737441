using NatsBroker.Contracts;
using NatsBroker.Storage.File;
using NatsBroker.Storage.Internal;
using Xunit.Abstractions;
using static NatsBroker.Storage.Tests.U;
using static NatsBroker.Storage.Tests.Faults.FiveSubjectContent;

namespace NatsBroker.Storage.Tests.Faults;

/// <summary>
/// Compact index pages (index image version 3, FORMAT.md "Index image"; storage/common/CompactIndexPage.cs): a chunk
/// with few live entries is written as 50 bytes per live entry instead of a 48 KiB page, so a store whose survivors
/// are scattered writes and reads a small image; it reopens to the same content, and power cuts while such an image
/// is written lose nothing acknowledged.
/// </summary>
public sealed class CompactImagePageTests(ITestOutputHelper output)
{
    private const string Root = "/compact";
    private const string Dir = Root + "/x";
    private const string ImagePath = Dir + "/idx/index.img";
    private const int Chunk = SequenceIndex.EntriesPerChunk;

    private static FileStore Open(FaultFileSystem fs)
    {
        var cfg = new StreamStoreConfig { StreamName = "X", Sync = SyncPolicy.Always, SyncInterval = TimeSpan.FromHours(1) };
        // Checkpoints of the image only at explicit flushes and clean closes (the test decides when they happen).
        var opt = new FileStoreOptions { BlockSize = 64 * 1024, CacheBlocks = 1, FileSystem = fs.Session(), ImageIntervalBytes = 1L << 40 };
        var r = FileStore.Open(cfg, Dir, opt);
        Assert.True(r.IsOk, $"{r.Status} {r.Error}");
        return (FileStore)r.Store!;
    }

    /// <summary>The page lengths of the newest checkpoint of the image on disk (null: no readable image).</summary>
    private static int[]? PageLengths(FaultFileSystem fs)
    {
        using var image = IndexImage.TryRead(fs.Session(), ImagePath, _ => { }, out var head, out _);
        return head is null ? null : [.. head.Pages.Select(p => p.Length)];
    }

    [Fact]
    public void An_image_of_scattered_survivors_is_small_and_an_open_from_it_reads_little()
    {
        var fs = FaultFileSystem.WithDirectory(Root);
        var s = Open(fs);
        const ulong n = 24 * Chunk;
        for (ulong q = 1; q <= n; q++) Assert.True(s.Append(B(Subject(q)), default, B(Payload(q))).IsOk);
        // Every 100th message survives (and sequence 1, so the span does not move): about 10 per chunk.
        var live = new SortedSet<ulong>();
        for (ulong q = 1; q <= n; q++)
        {
            if (q == 1 || q % 100 == 0) live.Add(q);
            else Assert.Equal(StoreStatus.Ok, s.Remove(q));
        }
        s.Dispose(); // a clean close: the first checkpoint, a whole image file

        var pages = PageLengths(fs);
        Assert.NotNull(pages);
        output.WriteLine($"{pages.Length} pages, {pages.Count(l => l < IndexImage.PageSize)} compact, {pages.Sum()} bytes of pages; image {fs.DurableContent(ImagePath)!.Length} bytes");
        // Every chunk holds ~10 survivors (the one being appended to none): all compact, the lowest one included,
        // though it stays dense in memory.
        Assert.All(pages, l => Assert.True(l < IndexImage.PageSize, $"a page of {l} bytes"));
        long imageBytes = fs.DurableContent(ImagePath)!.Length;
        // Dense pages would take 25 x 48 KiB = 1.2 MiB; compact ones ~500 bytes per chunk (plus two 4 KiB superblock slots and the head).
        Assert.True(imageBytes < IndexImage.PageSize, $"index image of {imageBytes} bytes for {live.Count} survivors in {pages.Length} chunks");

        fs.ResetReadCounters();
        var s2 = Open(fs);
        Assert.True(s2.OpenedFromImage, string.Join("; ", s2.RecoveryReport));
        FiveSubjectContent.AssertHolds(s2, n, live, "after the clean reopen");
        long imageRead = fs.BytesRead - fs.BlockBytesRead;
        output.WriteLine($"open + every survivor loaded: {imageRead} bytes read outside the blocks");
        Assert.True(imageRead < IndexImage.PageSize, $"{imageRead} bytes of index read to open and load {live.Count} survivors");

        // Appends and removes after the open page the compact chunks in, and the next image holds them again.
        for (ulong q = n + 1; q <= n + 300; q++)
        {
            Assert.True(s2.Append(B(Subject(q)), default, B(Payload(q))).IsOk);
            live.Add(q);
        }
        foreach (ulong q in live.Where(q => q > 1 && q % 700 == 0).ToList())
        {
            Assert.Equal(StoreStatus.Ok, s2.Remove(q));
            live.Remove(q);
        }
        s2.Dispose();
        var s3 = Open(fs);
        Assert.True(s3.OpenedFromImage, string.Join("; ", s3.RecoveryReport));
        FiveSubjectContent.AssertHolds(s3, n + 300, live, "after the second clean reopen");
        s3.Dispose();
    }

    [Fact]
    public async Task A_power_cut_at_every_fsync_of_a_checkpoint_with_compact_pages_loses_nothing_acknowledged()
    {
        var fs = FaultFileSystem.WithDirectory(Root);
        var rng = new Random(23);
        var live = new SortedSet<ulong>();
        ulong n = 0;
        int fromImage = 0, compactCommitted = 0;
        for (int round = 1; round <= 20; round++)
        {
            var s = Open(fs);
            if (s.OpenedFromImage) fromImage++;
            FiveSubjectContent.AssertHolds(s, n, live, $"round {round} open");
            // Sync always: every acknowledged append and remove is durable before it returns.
            int add = rng.Next(300, 2500);
            for (int i = 0; i < add; i++)
            {
                var a = s.Append(B(Subject(n + 1)), default, B(Payload(n + 1)));
                Assert.True(a.IsOk, $"append: {a.Status}");
                n = a.Sequence;
                live.Add(n);
            }
            // Scattered removals of most survivors (sequence 1 kept): chunks go sparse and are written compact.
            foreach (ulong q in live.Where(q => q != 1 && rng.Next(10) != 0).ToList())
            {
                Assert.Equal(StoreStatus.Ok, s.Remove(q));
                live.Remove(q);
            }
            // The power goes at the (round % 5 + 1)-th fsync counted from the first fsync of the image: while its
            // pages and head are written, at the fsync of the blocks it covers, at its superblock's, or after it.
            int syncs = 0, at = round % 5 + 1;
            bool armed = false, cut = false;
            fs.BeforeSync = path =>
            {
                if (cut) return;
                if (!armed && (path.EndsWith("index.img", StringComparison.Ordinal) || path.EndsWith("index.img.tmp", StringComparison.Ordinal))) armed = true;
                if (!armed || Interlocked.Increment(ref syncs) != at) return;
                cut = true;
                fs.PowerCut(rng);
            };
            var st = await s.FlushAsync();
            fs.BeforeSync = null;
            if (!cut)
            {
                if (PageLengths(fs) is { } pages && pages.Any(l => l < IndexImage.PageSize)) compactCommitted++;
                fs.PowerCut(rng);
            }
            output.WriteLine($"round {round}: cut at fsync {at} ({(cut ? "during the checkpoint" : "after it")}), flush {st}, n {n}, live {live.Count}");
            s.Dispose();
        }
        var last = Open(fs);
        FiveSubjectContent.AssertHolds(last, n, live, "final");
        last.Dispose();
        output.WriteLine($"{fromImage} opens from an image, {compactCommitted} committed images with compact pages");
        Assert.True(fromImage > 0, "no open used an image");
        Assert.True(compactCommitted > 0, "no committed image held a compact page");
    }
}
