using NatsBroker.Contracts;
using NatsBroker.Storage.File;
using static NatsBroker.Storage.Tests.U;

namespace NatsBroker.Storage.Tests.Faults;

/// <summary>
/// The spare block (storage/filestore/FileStore.SpareBlock.cs, FORMAT.md "Spare block"): the next block's file is
/// prepared in the background once the newest block is half full and renamed into place at the roll. A spare left
/// on disk by a crash, kill or power cut holds nothing: the store reopens with every message and sequence intact,
/// the spare gone, and new appends land after the last sequence.
/// </summary>
public sealed class SpareBlockTests : IDisposable
{
    private const string Root = "/spare";
    private const string Dir = Root + "/x";
    private const int BlockSize = 8192;
    private readonly string _osDir = TempDir("spare");

    public void Dispose()
    {
        foreach (var d in new[] { _osDir, _osDir + "-copy" })
        {
            if (Directory.Exists(d)) Directory.Delete(d, true);
        }
    }

    private static FaultFileSystem NewFileSystem() => FaultFileSystem.WithDirectory(Root);

    private static FileStore Open(IStoreFileSystem fs, string dir, SyncPolicy sync = SyncPolicy.Always)
    {
        var cfg = new StreamStoreConfig { StreamName = "S", Sync = sync, SyncInterval = TimeSpan.FromHours(1) };
        var opt = new FileStoreOptions { BlockSize = BlockSize, CacheBlocks = 1, FileSystem = fs };
        var r = FileStore.Open(cfg, dir, opt);
        Assert.True(r.IsOk, $"{r.Status} {r.Error}");
        return (FileStore)r.Store!;
    }

    private static string Subject(ulong seq) => "s." + (seq % 3);
    private static string Payload(ulong seq) => "p-" + seq + new string((char)('a' + (int)(seq % 26)), 40 + (int)(seq % 50));

    private static void Append(IStreamStore s, ref ulong last)
    {
        ulong q = last + 1;
        Assert.Equal(q, s.Put(Subject(q), Payload(q)));
        last = q;
    }

    /// <summary>Appends until the background preparation has produced a spare; returns the last sequence.</summary>
    private static async Task<ulong> FillUntilSpareReady(FileStore s, ulong last)
    {
        var deadline = DateTime.UtcNow.AddSeconds(20);
        // Half a block of appends queues the preparation; then wait for it without rolling past it.
        while (!s.SpareReadyForTests)
        {
            Assert.True(DateTime.UtcNow < deadline, $"no spare block prepared ({s.SpareError})");
            if (s.GetState().Bytes < BlockSize / 2 || last % 20 != 0) Append(s, ref last);
            else await Task.Delay(5);
        }
        return last;
    }

    private static void AssertAll(IStreamStore s, ulong last, HashSet<ulong>? gone = null)
    {
        var st = s.GetState();
        Assert.Equal(last, st.LastSequence);
        Assert.Equal(last - (ulong)(gone?.Count ?? 0), st.Messages);
        var m = new StoredMessage();
        for (ulong q = 1; q <= last; q++)
        {
            if (gone?.Contains(q) == true)
            {
                Assert.NotEqual(StoreStatus.Ok, s.Load(q, m));
                continue;
            }
            Assert.Equal(StoreStatus.Ok, s.Load(q, m));
            Assert.Equal(Payload(q), S(m.Payload));
            Assert.Equal(Subject(q), S(m.Subject));
        }
    }

    private static bool HasSpare(IStoreFileSystem v) => v.ListFiles(Dir + "/msgs").Contains("spare.tmp");

    [Fact]
    public async Task The_roll_renames_the_prepared_spare_instead_of_creating_the_block()
    {
        var fs = NewFileSystem();
        var ops = new List<(string Op, string Path)>();
        fs.ShouldFail = (op, path) =>
        {
            if (op is "create" or "rename") lock (ops) ops.Add((op, Path.GetFileName(path)));
            return false;
        };
        var s = Open(fs.Session(), Dir);
        ulong last = await FillUntilSpareReady(s, 0);
        var v = fs.Session();
        Assert.True(HasSpare(v));
        var blocksBefore = v.ListFiles(Dir + "/msgs").Where(n => n.EndsWith(".blk", StringComparison.Ordinal)).ToHashSet();
        lock (ops) ops.Clear();
        // Roll into the next block: exactly one new .blk, reached by renaming the spare, not by a create.
        while (v.ListFiles(Dir + "/msgs").Count(n => n.EndsWith(".blk", StringComparison.Ordinal)) == blocksBefore.Count)
            Append(s, ref last);
        var newBlock = v.ListFiles(Dir + "/msgs").Single(n => n.EndsWith(".blk", StringComparison.Ordinal) && !blocksBefore.Contains(n));
        List<(string Op, string Path)> seen;
        lock (ops) seen = [.. ops];
        Assert.Contains(("rename", newBlock), seen);
        Assert.DoesNotContain(("create", newBlock), seen);
        Assert.Null(s.SpareError);
        s.Dispose();
        // A clean close leaves no spare behind.
        Assert.False(HasSpare(fs.Session()));
        var s2 = Open(fs.Session(), Dir);
        Assert.Empty(s2.RecoveryReport);
        AssertAll(s2, last);
        s2.Dispose();
    }

    [Fact]
    public async Task A_spare_left_by_a_power_cut_is_removed_and_nothing_is_lost()
    {
        int withSpare = 0;
        for (int round = 0; round < 12; round++)
        {
            var rng = new Random(100 + round);
            var fs = NewFileSystem();
            var s = Open(fs.Session(), Dir);
            ulong last = await FillUntilSpareReady(s, 0);
            var gone = new HashSet<ulong>();
            for (ulong q = 2; q <= last; q += 7)
            {
                Assert.Equal(StoreStatus.Ok, s.Remove(q));
                gone.Add(q);
            }
            // Sync always: every Ok above is durable, whatever the cut keeps of the rest (the spare's create
            // included: it is never fsynced, so a random prefix of the directory's changes decides).
            fs.PowerCut(rng);
            s.Dispose();
            var v = fs.Session();
            if (HasSpare(v)) withSpare++;

            var s2 = Open(fs.Session(), Dir);
            Assert.False(HasSpare(fs.Session()), "the spare is deleted at open");
            Assert.DoesNotContain(s2.RecoveryReport, l => l.Contains("spare", StringComparison.Ordinal));
            AssertAll(s2, last, gone);
            // New appends land after the last sequence and survive a reopen, across a few more rolls.
            for (int i = 0; i < 300; i++) Append(s2, ref last);
            s2.Dispose();
            var s3 = Open(fs.Session(), Dir);
            AssertAll(s3, last, gone);
            s3.Dispose();
        }
        // The cuts must have left the spare on disk in some rounds, or this test checked nothing about it.
        Assert.True(withSpare > 0, "no power cut kept the spare file");
    }

    [Fact]
    public async Task A_spare_in_a_copy_taken_while_the_store_runs_is_ignored_on_the_real_file_system()
    {
        // Kill-style: the directory as a killed process leaves it (everything handed to the OS), taken while the
        // store is open with a spare prepared.
        var s = Open(OsFileSystem.Instance, _osDir);
        ulong last = await FillUntilSpareReady(s, 0);
        Assert.True(System.IO.File.Exists(Path.Combine(_osDir, "msgs", "spare.tmp")));
        var copy = _osDir + "-copy";
        CopyDir(_osDir, copy);
        s.Dispose();
        Assert.False(System.IO.File.Exists(Path.Combine(_osDir, "msgs", "spare.tmp")), "a clean close deletes the spare");

        Assert.True(System.IO.File.Exists(Path.Combine(copy, "msgs", "spare.tmp")));
        var s2 = Open(OsFileSystem.Instance, copy);
        Assert.False(System.IO.File.Exists(Path.Combine(copy, "msgs", "spare.tmp")));
        Assert.DoesNotContain(s2.RecoveryReport, l => l.Contains("spare", StringComparison.Ordinal));
        AssertAll(s2, last);
        for (int i = 0; i < 500; i++) Append(s2, ref last);
        AssertAll(s2, last);
        s2.Dispose();
        var s3 = Open(OsFileSystem.Instance, copy);
        AssertAll(s3, last);
        s3.Dispose();
    }

    [Fact]
    public async Task A_spare_that_cannot_be_prepared_leaves_the_roll_inline()
    {
        var fs = NewFileSystem();
        fs.ShouldFail = (op, path) => op == "create" && path.EndsWith("spare.tmp", StringComparison.Ordinal);
        var s = Open(fs.Session(), Dir);
        ulong last = 0;
        var deadline = DateTime.UtcNow.AddSeconds(20);
        while (s.SpareError is null)
        {
            Assert.True(DateTime.UtcNow < deadline, "the spare's creation was never attempted");
            if (s.GetState().Bytes < BlockSize || last % 20 != 0) Append(s, ref last);
            else await Task.Delay(5);
        }
        // Several rolls: every block is created inline, the store never fails.
        for (int i = 0; i < 600; i++) Append(s, ref last);
        Assert.Null(s.Failure);
        s.Dispose();
        fs.ShouldFail = null;
        var s2 = Open(fs.Session(), Dir);
        AssertAll(s2, last);
        s2.Dispose();
    }

    private static void CopyDir(string from, string to)
    {
        Directory.CreateDirectory(to);
        foreach (var f in Directory.GetFiles(from)) System.IO.File.Copy(f, Path.Combine(to, Path.GetFileName(f)));
        foreach (var d in Directory.GetDirectories(from)) CopyDir(d, Path.Combine(to, Path.GetFileName(d)));
    }
}
