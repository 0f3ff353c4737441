using System.Diagnostics;
using NatsBroker.Contracts;
using NatsBroker.Storage.CrashChild;
using Xunit.Abstractions;

namespace NatsBroker.Storage.Tests;

/// <summary>
/// Real-process crash tests: a child appends as fast as it can and reports each acknowledged sequence; it is
/// killed with SIGKILL at a random moment; the store is then opened and checked.
/// </summary>
public sealed class CrashTests(ITestOutputHelper output)
{
    private static string Dotnet => Environment.GetEnvironmentVariable("DOTNET_HOST_PATH") is { Length: > 0 } p && System.IO.File.Exists(p) ? p : "dotnet";
    private static string ChildDll => Path.Combine(AppContext.BaseDirectory, "NatsBroker.Storage.CrashChild.dll");

    private sealed class ChildRun
    {
        public ulong ReadyLast;
        public readonly List<ulong> Acked = [];
        public readonly List<ulong> Removed = [];
        public ulong CompactedTo;
        public readonly List<ulong> MaybeRemoved = [];
        public ulong MaybeCompactedTo;
        public string? Error;
    }

    private static async Task<ChildRun> RunAndKill(string dir, string mode, int killAfterMs, int minAcks, long maxMsgs, bool ops = false, long imageInterval = 0)
    {
        var psi = new ProcessStartInfo(Dotnet)
        {
            RedirectStandardOutput = true,
            RedirectStandardError = true,
            UseShellExecute = false,
        };
        psi.ArgumentList.Add(ChildDll);
        psi.ArgumentList.Add(dir);
        psi.ArgumentList.Add(mode);
        psi.ArgumentList.Add("65536");
        psi.ArgumentList.Add(maxMsgs.ToString(System.Globalization.CultureInfo.InvariantCulture));
        if (ops) psi.ArgumentList.Add("ops");
        if (imageInterval > 0) psi.ArgumentList.Add("image=" + imageInterval.ToString(System.Globalization.CultureInfo.InvariantCulture));
        var run = new ChildRun();
        using var p = Process.Start(psi)!;
        var readyTcs = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        var reader = Task.Run(async () =>
        {
            string? line;
            while ((line = await p.StandardOutput.ReadLineAsync().ConfigureAwait(false)) is not null)
            {
                if (line.StartsWith("A ", StringComparison.Ordinal))
                {
                    // Only complete reports count; the kill can tear the last line.
                    if (line.EndsWith(" ok", StringComparison.Ordinal)
                        && ulong.TryParse(line.AsSpan(2, line.Length - 5), System.Globalization.CultureInfo.InvariantCulture, out var seq))
                    {
                        lock (run.Acked) run.Acked.Add(seq);
                    }
                }
                else if (line.Length > 2 && line[1] == ' ' && line[0] is 'R' or 'C' or 'r' or 'c'
                    && line.EndsWith(" ok", StringComparison.Ordinal)
                    && ulong.TryParse(line.AsSpan(2, line.Length - 5), System.Globalization.CultureInfo.InvariantCulture, out var opSeq))
                {
                    lock (run.Acked)
                    {
                        switch (line[0])
                        {
                            case 'R': run.Removed.Add(opSeq); break;
                            case 'C': run.CompactedTo = Math.Max(run.CompactedTo, opSeq); break;
                            case 'r': run.MaybeRemoved.Add(opSeq); break;
                            default: run.MaybeCompactedTo = Math.Max(run.MaybeCompactedTo, opSeq); break;
                        }
                    }
                }
                else if (line.StartsWith("READY ", StringComparison.Ordinal))
                {
                    run.ReadyLast = ulong.Parse(line.AsSpan(6), System.Globalization.CultureInfo.InvariantCulture);
                    readyTcs.TrySetResult();
                }
                else if (line.StartsWith("ERROR", StringComparison.Ordinal))
                {
                    run.Error = line;
                    readyTcs.TrySetResult();
                }
            }
            readyTcs.TrySetResult();
        });
        await readyTcs.Task.WaitAsync(TimeSpan.FromSeconds(30));
        if (run.Error is null)
        {
            await Task.Delay(killAfterMs);
            var sw = Stopwatch.StartNew();
            while (sw.ElapsedMilliseconds < 5000)
            {
                lock (run.Acked) if (run.Acked.Count >= minAcks) break;
                await Task.Delay(5);
            }
        }
        try { p.Kill(); } catch (InvalidOperationException) { }
        await p.WaitForExitAsync();
        await reader;
        return run;
    }

    private static StoreOpenResult OpenStore(string dir, SyncPolicy sync, long maxMsgs) => new File.FileStoreFactory().Open(
        new StreamStoreConfig
        {
            StreamName = "crash",
            Sync = sync,
            EngineOptions = new Dictionary<string, string> { ["block_size"] = "65536" },
            Limits = new StreamLimits { MaxMessages = maxMsgs },
        }, dir);

    /// <summary>Checks every present message from <paramref name="from"/>+1 on: intact bytes, right subject, increasing sequences. Returns the count.</summary>
    private static ulong VerifyAllPresent(IStreamStore store, ulong from)
    {
        var m = new StoredMessage();
        var expect = new byte[256];
        var subj = new byte[32];
        ulong seq = from, n = 0, prev = from;
        while (store.LoadNext(default, seq + 1, m) == StoreStatus.Ok)
        {
            seq = m.Sequence;
            Assert.True(seq > prev, $"sequence {seq} after {prev}");
            prev = seq;
            int len = CrashPayload.Fill(seq, expect);
            Assert.True(expect.AsSpan(0, len).SequenceEqual(m.Payload), $"payload of {seq} corrupt");
            int sl = CrashPayload.Subject(seq, subj);
            Assert.True(subj.AsSpan(0, sl).SequenceEqual(m.Subject), $"subject of {seq} corrupt");
            n++;
        }
        var st = store.GetState();
        if (from == 0) Assert.Equal(st.Messages, n);
        Assert.True(st.LastSequence >= prev);
        return n;
    }

    private async Task KillLoop(string mode, SyncPolicy sync, int kills, bool everyAckMustSurvive, long maxMsgs = 0, long imageInterval = 0)
    {
        int fromImage = 0;
        var dir = U.TempDir("crash-" + mode);
        var rnd = new Random(mode.GetHashCode(StringComparison.Ordinal) ^ Environment.TickCount);
        ulong lastSeen = 0, totalAcked = 0, lost = 0;
        try
        {
            for (int i = 0; i < kills; i++)
            {
                var run = await RunAndKill(dir, mode, rnd.Next(20, 250), minAcks: 1, maxMsgs, imageInterval: imageInterval);
                Assert.True(run.Error is null, run.Error);
                Assert.True(run.ReadyLast >= lastSeen, $"kill {i}: child reopened at {run.ReadyLast}, below {lastSeen} seen before");
                var r = OpenStore(dir, sync, maxMsgs);
                Assert.True(r.IsOk, r.Error);
                using var store = r.Store!;
                if (((File.FileStore)store).OpenedFromImage) fromImage++;
                // Recovery checked every record's crc; the bytes of everything appended since the last check are compared here
                // (the first and last rounds check the whole stream).
                ulong present = VerifyAllPresent(store, i == 0 || i == kills - 1 ? 0 : Math.Max(lastSeen, 1000) - 1000);
                var st = store.GetState();
                var m = new StoredMessage();
                ulong missing = 0;
                foreach (var seq in run.Acked)
                {
                    // With a message limit, only acks inside the retained window must be there.
                    if (seq >= st.FirstSequence && store.Load(seq, m) != StoreStatus.Ok) missing++;
                }
                if (everyAckMustSurvive)
                {
                    Assert.True(missing == 0, $"kill {i}: {missing} of {run.Acked.Count} acknowledged appends missing (last acked {run.Acked.LastOrDefault()}, store last {st.LastSequence}); report: {string.Join("; ", store.RecoveryReport)}");
                }
                Assert.True(st.LastSequence >= lastSeen, "sequences went backwards");
                lastSeen = st.LastSequence;
                totalAcked += (ulong)run.Acked.Count;
                lost += missing;
                output.WriteLine($"{mode} kill {i}: acked {run.Acked.Count}, present {present}, last {st.LastSequence}, lost-acked {missing}, report [{string.Join("; ", store.RecoveryReport)}]");
            }
            output.WriteLine($"{mode}: {kills} kills, {totalAcked} acks, {lost} acknowledged appends lost, {fromImage} opens from a checkpoint image");
            if (imageInterval > 0) Assert.True(fromImage > 0, "no open after a kill used a checkpoint image");
        }
        finally
        {
            try { Directory.Delete(dir, true); } catch (IOException) { }
        }
    }

    [Fact]
    public Task Sync_always_keeps_acknowledged_removes_and_compacts_across_20_sigkills() => OpsKillLoop(0);

    /// <summary>
    /// The same with an index image checkpoint every 16 KiB written (a quarter block): kills land before, during and
    /// after checkpoints, and removes and compacts after a checkpoint delete blocks the image lists.
    /// </summary>
    [Fact]
    public Task Sync_always_with_image_checkpoints_keeps_acknowledged_appends_removes_and_compacts_across_20_sigkills() => OpsKillLoop(16 << 10);

    /// <summary>Periodic sync, a message limit (blocks deleted from the front all the time) and frequent image checkpoints.</summary>
    [Fact]
    public Task Periodic_sync_with_limits_and_image_checkpoints_recovers_across_12_sigkills()
        => KillLoop("periodic", SyncPolicy.Periodic, 12, everyAckMustSurvive: true, maxMsgs: 40_000, imageInterval: 256 << 10);

    private async Task OpsKillLoop(long imageInterval)
    {
        int fromImage = 0;
        var dir = U.TempDir("crash-ops");
        var rnd = new Random(Environment.TickCount);
        var removed = new HashSet<ulong>();
        var acked = new HashSet<ulong>();
        var maybeRemoved = new HashSet<ulong>();
        ulong compactedTo = 0, maybeCompactedTo = 0, lastSeen = 0;
        int kills = 20, removesChecked = 0;
        try
        {
            for (int i = 0; i < kills; i++)
            {
                var run = await RunAndKill(dir, "always", rnd.Next(50, 300), minAcks: 1, maxMsgs: 0, ops: true, imageInterval: imageInterval);
                Assert.True(run.Error is null, run.Error);
                acked.UnionWith(run.Acked);
                removed.UnionWith(run.Removed);
                compactedTo = Math.Max(compactedTo, run.CompactedTo);
                // An operation announced but not confirmed before the kill may or may not have happened.
                maybeRemoved.UnionWith(run.MaybeRemoved);
                maybeCompactedTo = Math.Max(maybeCompactedTo, run.MaybeCompactedTo);
                var r = OpenStore(dir, SyncPolicy.Always, 0);
                Assert.True(r.IsOk, r.Error);
                using var store = r.Store!;
                if (((File.FileStore)store).OpenedFromImage) fromImage++;
                VerifyAllPresent(store, 0);
                var st = store.GetState();
                Assert.True(st.LastSequence >= lastSeen);
                lastSeen = st.LastSequence;
                Assert.True(st.FirstSequence >= compactedTo || st.Messages == 0, $"compact to {compactedTo} undone: first {st.FirstSequence}");
                var m = new StoredMessage();
                foreach (var q in removed)
                {
                    Assert.True(store.Load(q, m) != StoreStatus.Ok, $"kill {i}: removed sequence {q} came back");
                }
                foreach (var q in acked)
                {
                    if (q >= maybeCompactedTo && !removed.Contains(q) && !maybeRemoved.Contains(q)) Assert.True(store.Load(q, m) == StoreStatus.Ok, $"kill {i}: acknowledged {q} missing");
                }
                removesChecked = removed.Count;
                output.WriteLine($"ops kill {i}: acked {run.Acked.Count}, removed {run.Removed.Count}, compacted to {compactedTo}, present {st.Messages}, blocks {Directory.GetFiles(Path.Combine(dir, "msgs")).Length}");
            }
            output.WriteLine($"always+ops (image every {imageInterval} B): {kills} kills, {acked.Count} acks, {removesChecked} removes, all kept, {fromImage} opens from a checkpoint image");
            if (imageInterval > 0) Assert.True(fromImage > 0, "no open after a kill used a checkpoint image");
        }
        finally
        {
            try { Directory.Delete(dir, true); } catch (IOException) { }
        }
    }

    [Fact]
    public Task Sync_always_keeps_every_acknowledged_append_across_20_sigkills() => KillLoop("always", SyncPolicy.Always, 20, everyAckMustSurvive: true);

    [Fact]
    public Task Periodic_sync_with_limits_keeps_committed_appends_uncorrupted_and_monotonic_across_20_sigkills() => KillLoop("periodic", SyncPolicy.Periodic, 20, everyAckMustSurvive: true, maxMsgs: 40_000);

    /// <summary>
    /// The default mode as JetStream uses it: every append committed (handed to the OS) before it is reported is
    /// there after a kill -9, and no reported sequence is handed out again (issue 38: acked messages lost and their
    /// sequences reused after kill -9 with default settings).
    /// </summary>
    [Fact]
    public Task Periodic_sync_keeps_every_committed_append_across_20_sigkills() => KillLoop("periodic", SyncPolicy.Periodic, 20, everyAckMustSurvive: true);

    [Fact]
    public Task Async_persist_recovers_uncorrupted_and_monotonic_across_8_sigkills() => KillLoop("async", SyncPolicy.AsyncPersist, 8, everyAckMustSurvive: false, maxMsgs: 40_000);
}
