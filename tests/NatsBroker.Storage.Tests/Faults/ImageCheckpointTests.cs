using NatsBroker.Contracts;
using NatsBroker.Storage.File;
using Xunit.Abstractions;
using static NatsBroker.Storage.Tests.U;

namespace NatsBroker.Storage.Tests.Faults;

/// <summary>
/// Index image checkpoints (FORMAT.md "Index image", storage/filestore/FileStore.ImageCheckpoint.cs): the image is
/// written at checkpoints too, so an open after a crash or power cut starts from it and replays only what was
/// written after it. Power cuts at every fsync of a checkpoint, torn and corrupted images, and images that no
/// longer match the blocks (older or newer) never lose an acknowledged append or bring back a removed message.
/// </summary>
public sealed class ImageCheckpointTests(ITestOutputHelper output)
{
    private const string Root = "/ckpt";
    private const string Dir = Root + "/x";
    private const int BlockSize = 4096;
    private const string ImagePath = Dir + "/idx/index.img";

    private static FaultFileSystem NewFileSystem() => FaultFileSystem.WithDirectory(Root);

    private static FileStore Open(FaultFileSystem fs, long imageInterval = 16 << 10)
    {
        var cfg = new StreamStoreConfig { StreamName = "X", Sync = SyncPolicy.Always, SyncInterval = TimeSpan.FromHours(1) };
        var opt = new FileStoreOptions { BlockSize = BlockSize, CacheBlocks = 1, FileSystem = fs.Session(), ImageIntervalBytes = imageInterval };
        var r = FileStore.Open(cfg, Dir, opt);
        Assert.True(r.IsOk, $"{r.Status} {r.Error}");
        return (FileStore)r.Store!;
    }

    /// <summary>The .blk files (a spare block, msgs/spare.tmp, may be there too: it is not read at open).</summary>
    private static int BlockCount(FaultFileSystem fs) => fs.Session().ListFiles(Dir + "/msgs").Count(n => n.EndsWith(".blk", StringComparison.Ordinal));

    private static string Subject(ulong seq) => "s." + (seq % 5);
    private static string Payload(ulong seq) => "p-" + seq + new string((char)('a' + (int)(seq % 26)), 30 + (int)(seq % 40));

    /// <summary>
    /// The acknowledged history: the last sequence and the removed ones (sync always: every Ok is durable). An
    /// operation that failed (the power went while it waited for its fsync) may or may not have happened: it is
    /// resolved at the next check from what the store holds (never acknowledged, so either outcome is right).
    /// </summary>
    private sealed class Model
    {
        public ulong N;
        public readonly HashSet<ulong> Gone = [];
        private readonly HashSet<ulong> _maybeGone = [];
        private bool _maybeAppended;

        public void Fill(IStreamStore s, ulong count)
        {
            for (ulong i = 0; i < count; i++)
            {
                var a = s.Append(B(Subject(N + 1)), default, B(Payload(N + 1)));
                if (!a.IsOk)
                {
                    _maybeAppended = true;
                    return;
                }
                Assert.Equal(N + 1, a.Sequence);
                N = a.Sequence;
            }
        }

        public void RemoveSome(IStreamStore s, Random rng, int count)
        {
            for (int i = 0; i < count && N > 0; i++)
            {
                ulong q = (ulong)rng.NextInt64(1, (long)N + 1);
                if (Gone.Contains(q)) continue;
                var st = s.Remove(q);
                if (st == StoreStatus.Ok) Gone.Add(q);
                else if (st is not StoreStatus.NotFound and not StoreStatus.Deleted)
                {
                    _maybeGone.Add(q);
                    return;
                }
            }
        }

        public void Check(IStreamStore s, string when)
        {
            var m = new StoredMessage();
            foreach (var q in _maybeGone) if (s.Load(q, m) != StoreStatus.Ok) Gone.Add(q);
            _maybeGone.Clear();
            var state = s.GetState();
            if (_maybeAppended)
            {
                // Appends that failed after the power went may have reached the disk: they become part of the history.
                for (ulong q = N + 1; q <= state.LastSequence; q++) if (s.Load(q, m) != StoreStatus.Ok) Gone.Add(q);
                N = Math.Max(N, state.LastSequence);
                _maybeAppended = false;
            }
            for (ulong q = 1; q <= N; q++)
            {
                var st = s.Load(q, m);
                if (Gone.Contains(q))
                {
                    Assert.True(st is StoreStatus.Deleted or StoreStatus.NotFound, $"{when}: removed {q} came back ({st})");
                    continue;
                }
                Assert.True(st == StoreStatus.Ok, $"{when}: acknowledged {q} missing ({st}); report: {string.Join("; ", s.RecoveryReport)}");
                Assert.Equal(Payload(q), S(m.Payload));
                Assert.Equal(Subject(q), S(m.Subject));
            }
            Assert.True(N - (ulong)Gone.Count == state.Messages, $"{when}: {state.Messages} messages, expected {N - (ulong)Gone.Count}; first {state.FirstSequence} last {state.LastSequence} n {N}; report: {string.Join("; ", s.RecoveryReport)}");
            Assert.Equal(N, state.LastSequence);
            for (int k = 0; k < 5; k++)
            {
                ulong expected = 0, last = 0;
                for (ulong q = 1; q <= N; q++)
                    if (q % 5 == (ulong)k && !Gone.Contains(q)) { expected++; last = q; }
                Assert.Equal(expected, s.CountMatching(B("s." + k)));
                if (last == 0) continue;
                Assert.Equal(StoreStatus.Ok, s.LoadLast(B("s." + k), m));
                Assert.Equal(last, m.Sequence);
            }
        }
    }

    [Fact]
    public async Task A_checkpoint_image_is_used_after_a_power_cut_and_what_followed_it_is_replayed()
    {
        var fs = NewFileSystem();
        var rng = new Random(5);
        var model = new Model();
        var s = Open(fs);
        model.Fill(s, 3000);
        model.RemoveSome(s, rng, 40);
        Assert.Equal(StoreStatus.Ok, await s.FlushAsync());
        long gen = s.ImageGeneration;
        Assert.True(gen > 0, "no image checkpoint was written");
        // After the checkpoint: appends (new blocks), removes in old and new blocks, a purge of a subject.
        model.Fill(s, 700);
        model.RemoveSome(s, rng, 60);
        var p = s.Purge(B("s.2"), 0, 0);
        Assert.Equal(StoreStatus.Ok, p.Status);
        for (ulong q = 1; q <= model.N; q++) if (q % 5 == 2) model.Gone.Add(q);
        fs.PowerCut(rng);
        s.Dispose();

        var s2 = Open(fs);
        Assert.True(s2.OpenedFromImage, "the checkpoint image was not used: " + string.Join("; ", s2.RecoveryReport));
        model.Check(s2, "after power cut");
        model.Fill(s2, 100);
        s2.Dispose();
        var s3 = Open(fs);
        Assert.True(s3.OpenedFromImage);
        model.Check(s3, "after clean close");
        s3.Dispose();
    }

    [Fact]
    public async Task A_power_cut_at_every_fsync_of_a_checkpoint_loses_nothing_acknowledged()
    {
        var fs = NewFileSystem();
        var rng = new Random(17);
        var model = new Model();
        int usedImage = 0, rounds = 0;
        for (int target = 1; target <= 24; target++)
        {
            var s = Open(fs);
            if (s.OpenedFromImage) usedImage++;
            output.WriteLine($"round {target} open: from image {s.OpenedFromImage}, report: {string.Join("; ", s.RecoveryReport)}");
            model.Check(s, $"round {target} open");
            model.Fill(s, (ulong)rng.Next(50, 400));
            model.RemoveSome(s, rng, rng.Next(0, 15));
            // The power goes at the (target % 5 + 1)-th fsync counted from the first fsync of the image file: 1 =
            // while its pages and head (and, for a whole new file, its superblock) are still being written (torn),
            // 2 = after that fsync, at the fsync of the blocks it covers, 3 = at the superblock's fsync (appended
            // checkpoints) or later, 5 = usually after the checkpoint completed.
            int syncs = 0, at = target % 5 + 1;
            bool armed = false, cut = false;
            fs.BeforeSync = path =>
            {
                if (cut) return;
                if (!armed && (path.EndsWith("index.img", StringComparison.Ordinal) || path.EndsWith("index.img.tmp", StringComparison.Ordinal))) armed = true;
                if (!armed || Interlocked.Increment(ref syncs) != at) return;
                cut = true;
                fs.PowerCut(rng);
            };
            var st = await s.FlushAsync(); // a checkpoint: snapshots, then the image
            if (!cut)
            {
                model.Fill(s, (ulong)rng.Next(1, 100));
                fs.BeforeSync = null;
                fs.PowerCut(rng);
            }
            fs.BeforeSync = null;
            output.WriteLine($"round {target}: cut at fsync {at} ({(cut ? "during the checkpoint" : "after it")}), flush {st}, n {model.N}");
            s.Dispose();
            rounds++;
        }
        var last = Open(fs);
        model.Check(last, "final");
        last.Dispose();
        output.WriteLine($"{rounds} rounds, {usedImage} opens from an image");
        Assert.True(usedImage > 0, "no open used a checkpoint image");
    }

    [Fact]
    public async Task A_torn_or_corrupted_image_falls_back_to_the_previous_checkpoint_or_a_rebuild()
    {
        var rng = new Random(23);
        for (int round = 0; round < 12; round++)
        {
            var fs = NewFileSystem();
            var model = new Model();
            var s = Open(fs);
            model.Fill(s, 1500);
            Assert.Equal(StoreStatus.Ok, await s.FlushAsync());
            model.RemoveSome(s, rng, 20);
            model.Fill(s, 300);
            Assert.Equal(StoreStatus.Ok, await s.FlushAsync()); // a second checkpoint, appended: two superblocks in use
            model.Fill(s, 50);
            fs.PowerCut(rng);
            s.Dispose();

            var v = fs.Session();
            var bytes = v.ReadAllBytes(ImagePath);
            string what;
            switch (round % 4)
            {
                case 0: // torn: the file cut short anywhere
                    int len = rng.Next(0, bytes.Length);
                    bytes = bytes[..len];
                    what = $"truncated to {len}";
                    break;
                case 1: // the newest head damaged: the other superblock's checkpoint is used
                    int at = bytes.Length - 1 - rng.Next(0, 200);
                    bytes[at] ^= 0x41;
                    what = $"byte {at} of the last head flipped";
                    break;
                case 2: // a superblock damaged
                    int sb = rng.Next(0, 2) * IndexImage.PageAlign + rng.Next(0, IndexImage.SuperblockSize);
                    bytes[sb] ^= 0x10;
                    what = $"superblock byte {sb} flipped";
                    break;
                default: // both superblocks gone
                    Array.Clear(bytes, 0, (int)IndexImage.DataStart);
                    what = "both superblocks zeroed";
                    break;
            }
            v.DeleteFile(ImagePath);
            using (var f = v.OpenFile(ImagePath, create: true)) f.Write(bytes, 0);

            var s2 = Open(fs);
            output.WriteLine($"round {round}: {what}; opened from image: {s2.OpenedFromImage}; report: {string.Join("; ", s2.RecoveryReport)}");
            if (round % 4 == 3) Assert.False(s2.OpenedFromImage);
            model.Check(s2, what);
            s2.Dispose();
        }
    }

    [Fact]
    public async Task An_image_that_no_longer_matches_the_blocks_is_refused()
    {
        var rng = new Random(31);
        for (int round = 0; round < 3; round++)
        {
            var fs = NewFileSystem();
            var model = new Model();
            var s = Open(fs, imageInterval: 1L << 40);
            model.Fill(s, 800);
            Assert.Equal(StoreStatus.Ok, await s.FlushAsync()); // the image covers the newest block to its end
            fs.PowerCut(rng);
            s.Dispose();
            var v = fs.Session();
            var blocks = v.ListFiles(Dir + "/msgs").Where(n => n.EndsWith(".blk", StringComparison.Ordinal)).OrderBy(n => n, StringComparer.Ordinal).ToList(); // not a spare block (spare.tmp)
            var newest = Dir + "/msgs/" + blocks[^1];
            var data = v.ReadAllBytes(newest);
            string what;
            if (round == 0)
            {
                // The image is newer than the blocks: the newest block lost bytes the image covers (as if the
                // blocks had not been fsynced before the image). Its last 10 records go; they are not acknowledged
                // in this model any more.
                data = data[..Math.Max(40, data.Length - 10 * 110)];
                what = "newest block shorter than the image says";
            }
            else if (round == 1)
            {
                // Same length, different bytes in the prefix the image covers: the CRC check refuses the image and
                // the scan reports the damaged record.
                data[60] ^= 0x01;
                what = "a byte of the newest block's prefix changed";
            }
            else
            {
                // An older block the image does not list (a deletion that did not survive): refused.
                var extra = Dir + "/msgs/" + "0000000000.blk";
                using (var f = v.OpenFile(extra, create: true)) f.Write(v.ReadAllBytes(Dir + "/msgs/" + blocks[0]).AsSpan(0, 40), 0);
                what = "a block the image does not list";
            }
            if (round < 2)
            {
                v.DeleteFile(newest);
                using var f = v.OpenFile(newest, create: true);
                f.Write(data, 0);
            }
            var s2 = Open(fs);
            output.WriteLine($"{what}: opened from image {s2.OpenedFromImage}; report: {string.Join("; ", s2.RecoveryReport)}");
            Assert.False(s2.OpenedFromImage, what);
            if (round == 2) model.Check(s2, what);
            else Assert.True(s2.GetState().LastSequence <= model.N);
            s2.Dispose();
        }
    }

    [Fact]
    public async Task Blocks_deleted_after_the_checkpoint_never_bring_removed_messages_back()
    {
        var rng = new Random(41);
        for (int round = 0; round < 4; round++)
        {
            var fs = NewFileSystem();
            var model = new Model();
            var s = Open(fs, imageInterval: 1L << 40);
            model.Fill(s, 2000);
            Assert.Equal(StoreStatus.Ok, await s.FlushAsync());
            long gen = s.ImageGeneration;
            // After the checkpoint: whole blocks in the middle emptied (deleted, their removals as tombstones in
            // newer blocks), then those newer blocks emptied and deleted too, so the tombstones are gone with them.
            ulong from = 300 + (ulong)rng.Next(0, 200), to = from + 400;
            for (ulong q = from; q <= to; q++) if (s.Remove(q) == StoreStatus.Ok) model.Gone.Add(q);
            ulong before = model.N;
            model.Fill(s, 600);
            for (ulong q = before + 1; q <= model.N; q++) if (s.Remove(q) == StoreStatus.Ok) model.Gone.Add(q);
            model.Fill(s, 200);
            // Front removals too (a compact): the floor moves past blocks the image lists.
            if (round % 2 == 1)
            {
                Assert.Equal(StoreStatus.Ok, s.Compact(150).Status);
                for (ulong q = 1; q < 150; q++) model.Gone.Add(q);
            }
            Assert.Equal(gen, s.ImageGeneration); // no checkpoint since
            fs.PowerCut(rng);
            s.Dispose();

            var s2 = Open(fs);
            output.WriteLine($"round {round}: opened from image {s2.OpenedFromImage}; report: {string.Join("; ", s2.RecoveryReport)}");
            Assert.True(s2.OpenedFromImage, "the image was not used: " + string.Join("; ", s2.RecoveryReport));
            model.Check(s2, $"round {round}");
            s2.Dispose();
        }
    }

    [Fact]
    public async Task A_checkpoint_stalled_in_the_image_fsync_does_not_block_appends_or_removes()
    {
        // The image is written outside the store lock: with its fsync hanging, appends and removes go on. The
        // removes touch index chunks the checkpoint captured (copy-on-write), and the image committed afterwards
        // still describes the capture, which the open after a power cut checks.
        var fs = NewFileSystem();
        var rng = new Random(3);
        var model = new Model();
        var s = Open(fs);
        model.Fill(s, 1500);
        using var entered = new ManualResetEventSlim();
        using var release = new ManualResetEventSlim();
        int stalled = 0;
        fs.BeforeSync = path =>
        {
            if (!path.EndsWith("index.img.tmp", StringComparison.Ordinal) && !path.EndsWith("index.img", StringComparison.Ordinal)) return;
            if (Interlocked.Exchange(ref stalled, 1) == 1) return;
            entered.Set();
            release.Wait(TimeSpan.FromSeconds(60));
        };
        var flush = Task.Run(async () => await s.FlushAsync());
        Assert.True(entered.Wait(TimeSpan.FromSeconds(30)), "no image checkpoint reached its fsync");
        var work = Task.Run(() =>
        {
            model.Fill(s, 300);
            model.RemoveSome(s, rng, 100);
        });
        bool finished = await Task.WhenAny(work, Task.Delay(TimeSpan.FromSeconds(40))) == work;
        release.Set();
        Assert.True(finished, "appends or removes were blocked by a checkpoint waiting on the disk");
        await work;
        Assert.Equal(StoreStatus.Ok, await flush);
        fs.BeforeSync = null;
        Assert.True(s.ImageGeneration > 0);
        fs.PowerCut(rng);
        s.Dispose();
        var s2 = Open(fs);
        Assert.True(s2.OpenedFromImage, string.Join("; ", s2.RecoveryReport));
        model.Check(s2, "after the stalled checkpoint");
        s2.Dispose();
    }

    [Fact]
    public async Task Appends_and_removes_go_on_while_a_checkpoint_holds_its_capture_and_the_image_still_describes_the_capture()
    {
        // The checkpoint is held right after its capture (the store lock released, no page copied yet): appends
        // and removes must complete meanwhile, in chunks frozen by the capture (copied first) and in new ones, and
        // the image committed afterwards must still be the state at the capture, which the open after a power cut
        // checks by replaying what followed it.
        var fs = NewFileSystem();
        var rng = new Random(11);
        var model = new Model();
        var s = Open(fs, imageInterval: 1L << 40); // checkpoints of the image only at explicit flushes
        model.Fill(s, 5000);
        Assert.Equal(StoreStatus.Ok, await s.FlushAsync()); // the first checkpoint: a whole image
        long first = s.ImageGeneration;
        Assert.True(first > 0);
        model.RemoveSome(s, rng, 200);
        model.Fill(s, 500);
        using var entered = new ManualResetEventSlim();
        using var release = new ManualResetEventSlim();
        int held = 0;
        s.AfterImageCapture = () =>
        {
            if (Interlocked.Exchange(ref held, 1) == 1) return;
            entered.Set();
            release.Wait(TimeSpan.FromSeconds(60));
        };
        var flush = Task.Run(async () => await s.FlushAsync());
        Assert.True(entered.Wait(TimeSpan.FromSeconds(30)), "no image checkpoint reached its capture");
        var work = Task.Run(() =>
        {
            model.Fill(s, 1500);
            model.RemoveSome(s, rng, 300);
        });
        bool finished = await Task.WhenAny(work, Task.Delay(TimeSpan.FromSeconds(40))) == work;
        release.Set();
        Assert.True(finished, "appends or removes were blocked by a checkpoint holding its capture");
        await work;
        Assert.Equal(StoreStatus.Ok, await flush);
        s.AfterImageCapture = null;
        Assert.Equal(first + 1, s.ImageGeneration); // an incremental checkpoint, committed
        fs.PowerCut(rng);
        s.Dispose();
        var s2 = Open(fs);
        Assert.True(s2.OpenedFromImage, string.Join("; ", s2.RecoveryReport));
        model.Check(s2, "after the held checkpoint");
        s2.Dispose();
    }

    [Fact]
    public void A_frozen_index_chunk_is_copied_as_it_was_at_the_capture_whatever_happens_to_it_after()
    {
        var ix = new NatsBroker.Storage.Internal.SequenceIndex();
        for (ulong q = 1; q <= 5000; q++)
        {
            ref var e = ref ix.Add();
            e.SubjectId = (int)(q % 3);
            e.Timestamp = (long)q;
            e.Location = (long)q * 10;
            ix.MarkLive(q);
        }
        var expected = new List<byte[]>();
        for (int k = 0; k < ix.ChunkSlots; k++)
        {
            ix.ChunkAt(k, out var data, out _, out _);
            expected.Add(System.Runtime.InteropServices.MemoryMarshal.AsBytes(data!.Span).ToArray());
        }
        var freeze = ix.Freeze(all: true);
        freeze.Classify(_ => false);
        Assert.Equal(ix.ChunkSlots, freeze.Chunks.Count);
        // After the capture: an entry rewritten (chunk 0), a whole chunk deleted and released (chunk 2), appends
        // into the last chunk, the first chunk trimmed away (chunk 0 again), and links rewritten in chunk 3.
        ix.GetForWrite(10).Timestamp = -1;
        for (ulong q = 2048; q < 3072; q++)
        {
            ref var e = ref ix.GetForWrite(q);
            e.SubjectId = -1;
            ix.MarkDead(q);
        }
        for (int i = 0; i < 50; i++)
        {
            ulong q = ix.End;
            ref var e = ref ix.Add();
            e.SubjectId = 1;
            e.Timestamp = (long)q;
            ix.MarkLive(q);
        }
        ix.TrimBelow(1500);
        ix.GetForWrite(3100).Next = 77;
        var page = new byte[expected[0].Length];
        for (int k = 0; k < freeze.Chunks.Count; k++)
        {
            Assert.Equal(NatsBroker.Storage.Internal.SequenceIndex.ChunkSource.Frozen, freeze.Chunks[k].Source);
            ix.CopyFrozen(freeze, k, page);
            Assert.True(page.AsSpan().SequenceEqual(expected[k]), $"chunk {freeze.Chunks[k].Chunk} changed after the capture");
        }
        ix.EndFreeze(freeze);
        // A second, incremental capture: only the chunks written since count as changed.
        var again = ix.Freeze(all: false);
        again.Classify(_ => true);
        Assert.Contains(again.Chunks, c => c.Source == NatsBroker.Storage.Internal.SequenceIndex.ChunkSource.Frozen);
        Assert.Contains(again.Chunks, c => c.Chunk == 3 && c.Source == NatsBroker.Storage.Internal.SequenceIndex.ChunkSource.Frozen);
        Assert.Contains(again.Chunks, c => c.Chunk == 1 && c.Source == NatsBroker.Storage.Internal.SequenceIndex.ChunkSource.Clean);
        ix.EndFreeze(again);
    }

    [Fact]
    public async Task Per_subject_limits_and_ttls_hold_after_an_open_from_a_checkpoint_and_a_replay()
    {
        var fs = NewFileSystem();
        var rng = new Random(9);
        var limits = new StreamLimits { MaxMessagesPerSubject = 3 };
        FileStore OpenLimited()
        {
            var cfg = new StreamStoreConfig { StreamName = "X", Sync = SyncPolicy.Always, SyncInterval = TimeSpan.FromHours(1), Limits = limits };
            var opt = new FileStoreOptions { BlockSize = BlockSize, CacheBlocks = 1, FileSystem = fs.Session(), ImageIntervalBytes = 16 << 10 };
            var r = FileStore.Open(cfg, Dir, opt);
            Assert.True(r.IsOk, $"{r.Status} {r.Error}");
            return (FileStore)r.Store!;
        }
        var s = OpenLimited();
        for (ulong q = 1; q <= 400; q++) Assert.True(s.Append(B(Subject(q)), default, B(Payload(q))).IsOk);
        Assert.Equal(StoreStatus.Ok, await s.FlushAsync());
        // After the checkpoint: more of the same (older ones removed by the per-subject limit) and short-lived ones.
        for (ulong q = 401; q <= 600; q++) Assert.True(s.Append(B(Subject(q)), default, B(Payload(q))).IsOk);
        for (int i = 0; i < 20; i++) Assert.True(s.Append(B("t.x"), default, B("short"), 0, 1_000_000).IsOk);
        fs.PowerCut(rng);
        s.Dispose();
        await Task.Delay(20);

        var s2 = OpenLimited();
        Assert.True(s2.OpenedFromImage, string.Join("; ", s2.RecoveryReport));
        var m = new StoredMessage();
        for (int k = 0; k < 5; k++)
        {
            Assert.Equal(3UL, s2.CountMatching(B("s." + k)));
            Assert.Equal(StoreStatus.Ok, s2.LoadLast(B("s." + k), m));
            ulong last = 600 - (ulong)((600 - k + 5) % 5);
            Assert.Equal(last, m.Sequence);
            Assert.Equal(Payload(last), S(m.Payload));
        }
        Assert.Equal(0UL, s2.CountMatching(B("t.x")));
        Assert.Equal(15UL, s2.GetState().Messages);
        s2.Dispose();
    }

    [Fact]
    public async Task An_open_after_a_power_cut_reads_only_block_headers_and_what_followed_the_checkpoint()
    {
        // The cost of an open from a checkpoint does not grow with the store: 40 bytes per sealed block, the
        // checkpoint's newest block and the blocks written after it; the index pages stay on disk.
        var fs = NewFileSystem();
        var rng = new Random(13);
        var model = new Model();
        var s = Open(fs, imageInterval: 1L << 40);
        model.Fill(s, 6000);
        Assert.Equal(StoreStatus.Ok, await s.FlushAsync());
        int blocksAtCheckpoint = BlockCount(fs);
        model.Fill(s, 100); // about three blocks more
        for (ulong q = model.N - 20; q < model.N - 10; q++) // removes in the newest index page only
        {
            Assert.Equal(StoreStatus.Ok, s.Remove(q));
            model.Gone.Add(q);
        }
        fs.PowerCut(rng);
        s.Dispose();
        int blocks = BlockCount(fs);
        int after = blocks - blocksAtCheckpoint + 1;

        fs.ResetReadCounters();
        var s2 = Open(fs);
        Assert.True(s2.OpenedFromImage, string.Join("; ", s2.RecoveryReport));
        long limit = 40L * blocks + (long)after * BlockSize;
        output.WriteLine($"{blocks} blocks, {after} read whole; open read {fs.BlockBytesRead} block bytes (limit {limit}), {s2.PagedIndexChunks} index pages left on disk");
        Assert.True(fs.BlockBytesRead <= limit, $"open read {fs.BlockBytesRead} block bytes");
        Assert.True(s2.PagedIndexChunks >= 4, $"index pages on disk: {s2.PagedIndexChunks}");
        model.Check(s2, "after the open");
        s2.Dispose();
    }

    [Fact]
    public async Task The_periodic_checkpoint_skips_a_store_that_fits_in_the_interval_and_takes_one_that_outgrows_it()
    {
        // An open after a crash reads at most the blocks on disk beyond the last checkpoint, so a store whose blocks
        // take no more than image_interval_bytes is within that bound without one (ImageCheckpointDue). Only the
        // timers run here: no explicit flush, which is always a checkpoint.
        const long Interval = 64 << 10;
        FileStore OpenWith(FaultFileSystem fs, StreamLimits limits)
        {
            var cfg = new StreamStoreConfig { StreamName = "X", Sync = SyncPolicy.Always, SyncInterval = TimeSpan.FromHours(1), Limits = limits };
            var opt = new FileStoreOptions { BlockSize = BlockSize, CacheBlocks = 1, FileSystem = fs.Session(), ImageIntervalBytes = Interval };
            var r = FileStore.Open(cfg, Dir, opt);
            Assert.True(r.IsOk, $"{r.Status} {r.Error}");
            return (FileStore)r.Store!;
        }
        async Task<bool> ImageWithin(FaultFileSystem fs, TimeSpan wait)
        {
            var until = DateTime.UtcNow + wait;
            while (DateTime.UtcNow < until)
            {
                if (fs.Session().FileExists(ImagePath)) return true;
                await Task.Delay(20);
            }
            return fs.Session().FileExists(ImagePath);
        }

        // Bounded by a limit: ten times the interval written, a few blocks on disk.
        var small = NewFileSystem();
        var bounded = OpenWith(small, new StreamLimits { MaxMessages = 20 });
        for (ulong q = 1; q <= 10 * Interval / 64; q++) Assert.True(bounded.Append(B(Subject(q)), default, B(Payload(q))).IsOk);
        Assert.False(await ImageWithin(small, TimeSpan.FromMilliseconds(500)), "a checkpoint of a store smaller than the interval");
        bounded.Dispose();

        // Unbounded: the same writes stay on disk, past the interval, and the flush tick takes a checkpoint.
        var large = NewFileSystem();
        var growing = OpenWith(large, new StreamLimits());
        for (ulong q = 1; q <= 10 * Interval / 64; q++) Assert.True(growing.Append(B(Subject(q)), default, B(Payload(q))).IsOk);
        Assert.True(await ImageWithin(large, TimeSpan.FromSeconds(10)), "no checkpoint of a store larger than the interval");
        growing.Dispose();
    }
}
