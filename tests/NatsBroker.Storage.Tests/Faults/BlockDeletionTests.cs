using NatsBroker.Contracts;
using NatsBroker.Storage.File;
using Xunit.Abstractions;
using static NatsBroker.Storage.Tests.U;

namespace NatsBroker.Storage.Tests.Faults;

/// <summary>
/// Emptied blocks are deleted outside the store lock (storage/filestore/FileStore.BlockDeletion.cs): the read of the
/// block for its tombstones, the fsync that makes the carried tombstones durable, and the unlink of the file all run
/// after the append that emptied the block released the lock, so other appends go on while they wait on the disk.
/// Before, all of it ran under the lock, and a slow unlink or fsync stalled every publisher. Each test stalls one of
/// those operations in the fault file system and requires appends from another thread to complete meanwhile; then
/// the store must hold exactly what was acknowledged, also after a power cut.
/// </summary>
public sealed class BlockDeletionTests(ITestOutputHelper output)
{
    private const string Root = "/del";
    private const string Dir = Root + "/x";

    private static FileStore Open(FaultFileSystem fs, SyncPolicy sync, StreamLimits limits)
    {
        var cfg = new StreamStoreConfig { StreamName = "X", Sync = sync, SyncInterval = TimeSpan.FromHours(1), Limits = limits };
        var opt = new FileStoreOptions { BlockSize = 4096, CacheBlocks = 1, FileSystem = fs.Session(), ImageIntervalBytes = 1L << 40 };
        var r = FileStore.Open(cfg, Dir, opt);
        Assert.True(r.IsOk, $"{r.Status} {r.Error}");
        return (FileStore)r.Store!;
    }

    private static string Payload(ulong seq) => "p-" + seq + new string((char)('a' + (int)(seq % 26)), 40);

    private static int BlockFiles(FaultFileSystem fs) => fs.Session().ListFiles(Dir + "/msgs").Count(n => n.EndsWith(".blk", StringComparison.Ordinal));

    /// <summary>
    /// Appends on one task until <paramref name="entered"/> (the stalled disk operation began: that task may be the one
    /// stalled in it, after its append released the lock), then 300 more appends on another task, which must finish
    /// while the operation is still stalled. Returns the last sequence appended.
    /// </summary>
    private async Task<ulong> AppendsGoOnWhileStalled(IStreamStore s, Func<ulong, string> subject, ManualResetEventSlim entered, ManualResetEventSlim release)
    {
        ulong n = 0;
        var first = Task.Run(() =>
        {
            var until = DateTime.UtcNow + TimeSpan.FromSeconds(30);
            while (!entered.IsSet && DateTime.UtcNow < until)
            {
                ulong q = Interlocked.Increment(ref n);
                var a = s.Append(B(subject(q)), default, B(Payload(q)));
                Assert.True(a.IsOk, $"append {q}: {a.Status}");
                Assert.Equal(q, a.Sequence);
            }
        });
        Assert.True(entered.Wait(TimeSpan.FromSeconds(30)), "no block deletion reached the stalled operation");
        // The first task may be blocked inside the stalled operation (its append returned its sequence to nobody yet).
        var second = Task.Run(() =>
        {
            for (int i = 0; i < 300; i++)
            {
                var a = s.Append(B(subject(0)), default, B("second"));
                Assert.True(a.IsOk, $"append beside the stalled deletion: {a.Status}");
            }
        });
        bool finished = await Task.WhenAny(second, Task.Delay(TimeSpan.FromSeconds(20))) == second;
        release.Set();
        Assert.True(finished, "appends were blocked while an emptied block's deletion waited on the disk");
        await second;
        await first;
        output.WriteLine($"first task appended {n}, then 300 beside the stalled operation");
        return s.GetState().LastSequence;
    }

    [Fact]
    public async Task An_append_completes_while_the_unlink_of_an_emptied_block_is_stalled()
    {
        // max_msgs keeps a few blocks' worth: every roll empties the oldest block (front removals, no tombstones), so
        // a block file is unlinked at about every roll.
        var fs = FaultFileSystem.WithDirectory(Root);
        var s = Open(fs, SyncPolicy.Always, new StreamLimits { MaxMessages = 100 });
        using var entered = new ManualResetEventSlim();
        using var release = new ManualResetEventSlim();
        fs.BeforeDelete = StallFirstBlockUnlink(entered, release);
        ulong last = await AppendsGoOnWhileStalled(s, q => "s." + (q % 3), entered, release);
        fs.BeforeDelete = null;
        var state = s.GetState();
        Assert.Equal(100UL, state.Messages);
        Assert.Equal(last - 99, state.FirstSequence);

        // Sync always: everything acknowledged is durable; a power cut keeps the last 100 and the deletions that
        // reached the disk (a block whose unlink was lost comes back with nothing live in it).
        fs.PowerCut(new Random(3));
        s.Dispose();
        var s2 = Open(fs, SyncPolicy.Always, new StreamLimits { MaxMessages = 100 });
        var st2 = s2.GetState();
        Assert.Equal(last, st2.LastSequence);
        Assert.Equal(100UL, st2.Messages);
        var m = new StoredMessage();
        for (ulong q = last - 99; q <= last; q++) Assert.Equal(StoreStatus.Ok, s2.Load(q, m));
        s2.Dispose();
        Assert.True(BlockFiles(fs) <= 6, $"{BlockFiles(fs)} block files for 100 messages of 4 KiB blocks");
    }

    [Fact]
    public async Task An_append_completes_while_the_fsync_of_carried_tombstones_is_stalled_and_no_removal_comes_back()
    {
        // One message per subject (a KV bucket): every append removes its subject's previous message with a tombstone,
        // so emptied blocks hold tombstones, and deleting one first makes its tombstones durable elsewhere (an fsync
        // of the blocks written since the last one, which periodic sync otherwise leaves to its timer).
        var fs = FaultFileSystem.WithDirectory(Root);
        var limits = new StreamLimits { MaxMessagesPerSubject = 1 };
        var s = Open(fs, SyncPolicy.Periodic, limits);
        using var entered = new ManualResetEventSlim();
        using var release = new ManualResetEventSlim();
        int stalled = 0;
        fs.BeforeSync = path =>
        {
            // With periodic sync (an hour here) only the deleter fsyncs blocks.
            if (!path.EndsWith(".blk", StringComparison.Ordinal) || Interlocked.Exchange(ref stalled, 1) == 1) return;
            entered.Set();
            release.Wait(TimeSpan.FromSeconds(60));
        };
        // Subjects in a scrambled order: the message a new one supersedes is seldom the stream's first (whose removal
        // is a front removal, covered by a floor, with no tombstone).
        ulong last = await AppendsGoOnWhileStalled(s, q => "k." + ((q * 2654435761UL) >> 7) % 7, entered, release);
        fs.BeforeSync = null;
        Assert.Equal(StoreStatus.Ok, await s.FlushAsync()); // everything durable: the power cut below keeps it all
        var state = s.GetState();
        Assert.Equal(7UL, state.Messages);
        fs.PowerCut(new Random(5));
        s.Dispose();

        var s2 = Open(fs, SyncPolicy.Periodic, limits);
        Assert.Equal(last, s2.GetState().LastSequence);
        var m = new StoredMessage();
        var newest = new StoredMessage();
        int live = 0;
        for (ulong q = 1; q <= last; q++)
        {
            if (s2.Load(q, m) != StoreStatus.Ok) continue;
            live++;
            // Only the newest message of its subject may be live: a removed one that came back would be older.
            Assert.Equal(StoreStatus.Ok, s2.LoadLast(B(S(m.Subject)), newest));
            Assert.Equal(q, newest.Sequence);
        }
        Assert.Equal(7, live);
        Assert.Equal(7UL, s2.GetState().Messages);
        s2.Dispose();
    }
    [Fact]
    public async Task Emptied_blocks_waiting_for_the_deleter_never_make_a_disk_limit_refuse_an_append()
    {
        // The deleter is stalled on its first unlink; the emptied blocks after it still count against
        // disk_limit_bytes until deleted, so the roll that would be refused deletes them itself (under the lock,
        // as before the deleter): appends at a message limit never see a full disk.
        var fs = FaultFileSystem.WithDirectory(Root);
        var cfg = new StreamStoreConfig { StreamName = "X", Sync = SyncPolicy.Periodic, SyncInterval = TimeSpan.FromHours(1), Limits = new StreamLimits { MaxMessages = 30 } };
        var opt = new FileStoreOptions { BlockSize = 4096, CacheBlocks = 1, FileSystem = fs.Session(), ImageIntervalBytes = 1L << 40, DiskLimitBytes = 4 * 4096 };
        var r = FileStore.Open(cfg, Dir, opt);
        Assert.True(r.IsOk, r.Error);
        var s = r.Store!;
        using var entered = new ManualResetEventSlim();
        using var release = new ManualResetEventSlim();
        fs.BeforeDelete = StallFirstBlockUnlink(entered, release);
        ulong last = await AppendsGoOnWhileStalled(s, q => "s." + (q % 3), entered, release);
        fs.BeforeDelete = null;
        var state = s.GetState();
        Assert.Equal(30UL, state.Messages);
        Assert.Equal(last, state.LastSequence);
        Assert.Null(s.Failure);
        s.Dispose();
    }

    /// <summary>A BeforeDelete hook that holds the first unlink of a block file until <paramref name="release"/> is set.</summary>
    private static Action<string> StallFirstBlockUnlink(ManualResetEventSlim entered, ManualResetEventSlim release)
    {
        int stalled = 0;
        return path =>
        {
            if (!path.EndsWith(".blk", StringComparison.Ordinal) || Interlocked.Exchange(ref stalled, 1) == 1) return;
            entered.Set();
            release.Wait(TimeSpan.FromSeconds(60));
        };
    }
}
