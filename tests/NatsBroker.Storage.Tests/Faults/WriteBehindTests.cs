using System.Text;
using NatsBroker.Contracts;
using NatsBroker.Storage.File;
using static NatsBroker.Storage.Tests.U;

namespace NatsBroker.Storage.Tests.Faults;

/// <summary>
/// The file engine's write-behind (FileStore.WriteBehind.cs): async-persist appends handed to a pool thread every
/// CoalesceBytes. A write is stalled in the fault file system (<see cref="FaultFileSystem.BeforeWrite"/>) to check
/// what may and may not go on while it is in flight; the random power-cut workloads with it on are in
/// <see cref="PowerCutTests"/>.
/// </summary>
public sealed class WriteBehindTests
{
    private const string Root = "/wb";
    private static readonly TimeSpan Bound = TimeSpan.FromSeconds(10);

    private static IStreamStore Open(FaultFileSystem fs, string dir)
    {
        // No flush or sync tick: every write to a block is the write-behind's (or the explicit flush's).
        var cfg = new StreamStoreConfig { StreamName = "W", Sync = SyncPolicy.AsyncPersist, SyncInterval = TimeSpan.FromHours(1), FlushInterval = TimeSpan.FromHours(1) };
        var opt = new FileStoreOptions { BlockSize = 1 << 16, CacheBlocks = 1, CoalesceBytes = 1024, FileSystem = fs.Session(), ConsumerWriteInterval = TimeSpan.Zero };
        var r = FileStore.Open(cfg, dir, opt);
        Assert.True(r.IsOk, $"open of {dir}: {r.Status} {r.Error}");
        return r.Store!;
    }

    /// <summary>~100 bytes, unique per sequence (so the bytes of one message can be looked for in a file).</summary>
    private static string Payload(ulong seq) => $"<payload {seq:D6}>" + new string((char)('a' + (int)(seq % 26)), 80);

    private static byte[] DurableBlocks(FaultFileSystem fs, string dir)
    {
        var blockDir = dir + "/" + Format.BlockDir;
        var all = new List<byte>();
        foreach (var name in fs.Session().ListFiles(blockDir))
            if (name.EndsWith(".blk", StringComparison.Ordinal)) all.AddRange(fs.DurableContent(blockDir + "/" + name) ?? []);
        return [.. all];
    }

    [Fact]
    public async Task Appends_go_on_while_a_write_is_in_flight_and_an_erase_of_a_record_in_it_waits_for_it()
    {
        var fs = FaultFileSystem.WithDirectory(Root);
        var dir = Root + "/e";
        using var release = new ManualResetEventSlim(false);
        using var stalled = new ManualResetEventSlim(false);
        int armed = 0;
        int appender = Environment.CurrentManagedThreadId;
        fs.BeforeWrite = (path, length) =>
        {
            // Only a pool thread's write of one hand-off's worth is stalled. When no pool thread picked a write up
            // before 4 x CoalesceBytes were pending, the appender does it itself (by design): that one must not stall
            // the test, and a bigger one would leave too little room for the appends below.
            if (!path.EndsWith(".blk", StringComparison.Ordinal) || Environment.CurrentManagedThreadId == appender || length > 1400) return;
            if (Interlocked.Exchange(ref armed, 0) != 1) return;
            stalled.Set();
            release.Wait();
        };
        var s = Open(fs, dir);
        Volatile.Write(ref armed, 1);
        ulong last = 0;
        // ~8 appends pass CoalesceBytes: that append hands the bytes to a pool thread, which stalls in its write.
        // Slowly, so that little more is pending when it stalls than what it writes.
        while (!stalled.IsSet && last < 200)
        {
            Assert.True(s.Append(B("w.a"), default, B(Payload(++last))).IsOk);
            stalled.Wait(TimeSpan.FromMilliseconds(100));
        }
        Assert.True(stalled.Wait(Bound), "no write-behind started");
        ulong inFlight = last;

        // The appender does not wait for the write: a few more appends (under 4 x CoalesceBytes) and reads of the
        // bytes in flight complete while it is stalled.
        var more = Task.Run(() =>
        {
            for (int i = 0; i < 10; i++) Assert.True(s.Append(B("w.a"), default, B(Payload(inFlight + 1 + (ulong)i))).IsOk);
            var m = new StoredMessage();
            Assert.Equal(StoreStatus.Ok, s.Load(2, m));
            Assert.Equal(Payload(2), S(m.Payload));
        });
        await more.WaitAsync(Bound); // a TimeoutException here: an append waited for the write in flight
        last = inFlight + 10;

        // An erase of a record in flight must not let the stalled write put its old bytes back afterwards: it waits
        // (still running after 300 ms; a wrong implementation completes at once).
        var erase = Task.Run(() => s.Erase(3));
        Assert.NotSame(erase, await Task.WhenAny(erase, Task.Delay(300)));
        release.Set();
        Assert.Equal(StoreStatus.Ok, await erase.WaitAsync(Bound));

        Assert.Equal(StoreStatus.Ok, await s.FlushAsync());
        Assert.Null(s.Failure);
        fs.PowerCut(new Random(3));
        s.Dispose();

        var durable = DurableBlocks(fs, dir);
        Assert.True(durable.AsSpan().IndexOf(Encoding.UTF8.GetBytes(Payload(4))) >= 0, "the blocks' durable bytes do not hold the messages");
        Assert.True(durable.AsSpan().IndexOf(Encoding.UTF8.GetBytes(Payload(3))) < 0, "the erased message's bytes are on disk");
        var s2 = Open(fs, dir);
        var msg = new StoredMessage();
        Assert.Equal(last, s2.GetState().LastSequence);
        for (ulong q = 1; q <= last; q++)
        {
            var st = s2.Load(q, msg);
            if (q == 3)
            {
                Assert.True(st is StoreStatus.Deleted or StoreStatus.NotFound, $"erased sequence 3: {st}");
                continue;
            }
            Assert.Equal(StoreStatus.Ok, st);
            Assert.Equal(Payload(q), S(msg.Payload));
        }
        s2.Dispose();
    }

    [Fact]
    public async Task A_failed_write_behind_stops_the_store_and_a_reopen_keeps_what_was_synced_before()
    {
        var fs = FaultFileSystem.WithDirectory(Root);
        var dir = Root + "/f";
        var s = Open(fs, dir);
        for (ulong q = 1; q <= 30; q++) Assert.True(s.Append(B("w.a"), default, B(Payload(q))).IsOk);
        Assert.Equal(StoreStatus.Ok, await s.FlushAsync());

        fs.ShouldFail = (op, path) => op == "write" && path.EndsWith(".blk", StringComparison.Ordinal);
        ulong next = 31;
        StoreStatus refused = StoreStatus.Ok;
        // The write fails on a pool thread; the next hand-off (or flush) folds that in and stops the store.
        for (; next <= 300 && refused == StoreStatus.Ok; next++) refused = s.Append(B("w.a"), default, B(Payload(next))).Status;
        if (refused == StoreStatus.Ok) refused = await s.FlushAsync();
        Assert.Equal(StoreStatus.IoError, refused);
        Assert.NotNull(s.Failure);
        Assert.Contains("write of", s.Failure);
        Assert.Contains("read-only", s.Failure);
        fs.ShouldFail = null;
        Assert.Equal(StoreStatus.IoError, s.Append(B("w.a"), default, B("after")).Status);
        fs.PowerCut(new Random(4));
        s.Dispose();

        var s2 = Open(fs, dir);
        Assert.Null(s2.Failure);
        var st = s2.GetState();
        Assert.True(st.LastSequence >= 30, $"last {st.LastSequence}");
        var m = new StoredMessage();
        for (ulong q = 1; q <= st.LastSequence; q++)
        {
            Assert.Equal(StoreStatus.Ok, s2.Load(q, m));
            Assert.Equal(Payload(q), S(m.Payload));
        }
        s2.Dispose();
    }
}
