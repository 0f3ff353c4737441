using System.Diagnostics;
using System.Globalization;
using System.Text;
using NatsBroker.Contracts;
using NatsBroker.Storage.File;
using NatsBroker.Storage.Memory;

// Storage microbenchmarks. Each figure: ops/s and bytes allocated per op on the measuring thread
// (GC.GetAllocatedBytesForCurrentThread), plus process-wide bytes/op for the file engine's background flush.
bool quick = args.Contains("quick");
int appendN = quick ? 300_000 : 2_000_000;
// The machine is shared: each measurement runs `reps` times and the best run is reported.
int reps = quick ? 1 : 3;
// "open-only": just the open-time rows (256 MB and 1 GB), for measuring index snapshots without the rest.
bool openOnly = args.Contains("open-only");
// "kv-only": just the KV memory rows; "open-large": just the 1/5/10 GB open rows.
bool kvOnly = args.Contains("kv-only");
// "cold-only": just the append-beside-a-cold-reader rows.
bool coldOnly = args.Contains("cold-only");
// "open-crash": just the crash-open rows (a store copied while open, as kill -9 leaves it: no index image).
bool crashOnly = args.Contains("open-crash");
// "append-stall [gb=N]": per-append latency while the store grows, alone and beside a replaying reader (AppendStallBench.cs).
bool stallOnly = args.Contains("append-stall");
// "sparse-only [msgs=N]": index memory after scattered removals (SparseIndexBench.cs).
bool sparseOnly = args.Contains("sparse-only");
// "steady-only" / "last-only": just the steady-state append row / the load-last-by-subject row, file engine only
// (a few seconds each, for A/B runs of one row).
bool steadyOnly = args.Contains("steady-only");
bool lastOnly = args.Contains("last-only");
bool rowOnly = steadyOnly || lastOnly;
// "row=TEXT [engine=NAME]": only the rows of the first section whose name contains TEXT (other rows still run once,
// unmeasured, where a later row needs their data), for A/B runs of one row of either engine.
string? rowFilter = args.FirstOrDefault(a => a.StartsWith("row=", StringComparison.Ordinal))?[4..];
string? engineFilter = args.FirstOrDefault(a => a.StartsWith("engine=", StringComparison.Ordinal))?[7..];
bool Wanted(string name) => rowFilter is null || name.Contains(rowFilter, StringComparison.Ordinal);
// "eo:key=value": a file-engine option for every store opened (e.g. eo:image_interval_bytes=N to move checkpoints).
var fileEngineOptions = NatsBroker.Bench.Storage.BenchArgs.EngineOptions(args);
var results = new List<string>();
var baseDir = Path.Combine(Path.GetTempPath(), "nb-storage-bench-" + Environment.ProcessId);

void Report(string engine, string name, long ops, TimeSpan t, long threadBytes, long totalBytes)
{
    var line = string.Create(CultureInfo.InvariantCulture,
        $"| {engine,-6} | {name,-46} | {ops / t.TotalSeconds,14:N0} | {(double)threadBytes / ops,8:F2} | {(double)totalBytes / ops,8:F2} |");
    Console.WriteLine(line);
    results.Add(line);
}

void Measure(string engine, string name, long ops, Action body)
{
    if (!Wanted(name))
    {
        // Same work as measured (the store then holds what the full run leaves for the next rows).
        for (int r = 0; r < reps; r++) body();
        return;
    }
    TimeSpan best = TimeSpan.MaxValue;
    long bestThr = 0, bestAll = 0;
    for (int r = 0; r < reps; r++)
    {
        var (a0, t0) = Alloc();
        var sw = Stopwatch.StartNew();
        body();
        sw.Stop();
        var (a1, t1) = Alloc();
        if (sw.Elapsed < best) { best = sw.Elapsed; bestThr = a1 - a0; bestAll = t1 - t0; }
    }
    Report(engine, name, ops, best, bestThr, bestAll);
}

(long, long) Alloc() => (GC.GetAllocatedBytesForCurrentThread(), GC.GetTotalAllocatedBytes(false));

IStreamStore Open(string engine, string tag, StreamLimits? limits = null, SyncPolicy sync = SyncPolicy.Periodic)
{
    var cfg = new StreamStoreConfig { StreamName = tag, Limits = limits ?? StreamLimits.None, Sync = sync, EngineOptions = engine == "file" ? fileEngineOptions : new Dictionary<string, string>() };
    IStreamStoreFactory f = engine == "memory" ? new MemoryStoreFactory() : new FileStoreFactory();
    var dir = Path.Combine(baseDir, engine + "-" + tag);
    var r = f.Open(cfg, f.IsPersistent ? dir : null);
    if (!r.IsOk) throw new InvalidOperationException(r.Error);
    return r.Store!;
}

byte[][] Subjects(string prefix, int n) => [.. Enumerable.Range(0, n).Select(i => Encoding.ASCII.GetBytes(prefix + "." + i))];

Console.WriteLine($"storage bench: {Environment.ProcessorCount} cores, .NET {Environment.Version}, {(quick ? "quick" : "full")} run");
Console.WriteLine("| engine | benchmark                                      | ops/s          | B/op thr | B/op all |");
Console.WriteLine("|--------|------------------------------------------------|----------------|----------|----------|");

foreach (var engine in openOnly || kvOnly || coldOnly || crashOnly || stallOnly || sparseOnly || args.Contains("open-large") || args.Contains("open-10g") ? []
    : rowOnly ? ["file"] : engineFilter is not null ? [engineFilter] : new[] { "memory", "file" })
{
    var payload = new byte[128];
    Random.Shared.NextBytes(payload);

    // ---- append 128 B (16 subjects), unlimited stream ----
    if (!rowOnly && (Wanted("append 128 B (stream grows)") || Wanted("load by sequence, hot (last 10k)") || Wanted("load by sequence, cold") || Wanted("load next, sequential scan from first")))
    {
        using var s = Open(engine, "append");
        var subj = Subjects("bench", 16);
        for (int i = 0; i < 200_000; i++) s.Append(subj[i & 15], default, payload);
        GC.Collect();
        Measure(engine, "append 128 B (stream grows)", appendN, () =>
        {
            for (int i = 0; i < appendN; i++) s.Append(subj[i & 15], default, payload);
        });

        // ---- load by sequence: hot (last 10k) and cold (uniform over the whole stream) ----
        var st = s.GetState();
        var m = new StoredMessage(512);
        var rnd = new Random(7);
        int loads = quick ? 200_000 : 1_000_000;
        var seqs = new ulong[loads];
        for (int i = 0; i < loads; i++) seqs[i] = st.LastSequence - (ulong)rnd.Next(10_000);
        Measure(engine, "load by sequence, hot (last 10k)", loads, () =>
        {
            foreach (var q in seqs) s.Load(q, m);
        });
        var cold = new ulong[loads];
        for (int i = 0; i < loads; i++) cold[i] = st.FirstSequence + (ulong)(rnd.NextInt64((long)(st.LastSequence - st.FirstSequence)));
        Measure(engine, $"load by sequence, cold (uniform over {st.Messages / 1000}k)", loads, () =>
        {
            foreach (var q in cold) s.Load(q, m);
        });
        Measure(engine, "load next, sequential scan from first", loads, () =>
        {
            ulong q = st.FirstSequence;
            for (int i = 0; i < loads; i++)
            {
                s.LoadNext(default, q, m);
                q = m.Sequence + 1;
            }
        });
        s.Delete();
    }

    // ---- append 128 B in steady state with a max_msgs limit (every append also discards the oldest) ----
    if (!lastOnly && Wanted("append 128 B, steady state (max_msgs 500k)"))
    {
        using var s = Open(engine, "limited", new StreamLimits { MaxMessages = 500_000 });
        var subj = Subjects("lim", 16);
        for (int i = 0; i < 600_000; i++) s.Append(subj[i & 15], default, payload);
        GC.Collect();
        Measure(engine, "append 128 B, steady state (max_msgs 500k)", appendN, () =>
        {
            for (int i = 0; i < appendN; i++) s.Append(subj[i & 15], default, payload);
        });
        s.Delete();
    }

    // ---- durability modes (file only): sync always = write + fsync per append; async persist ----
    if (engine == "file" && !rowOnly && (Wanted("append 128 B, sync Always, 8 writers") || Wanted("append 128 B, sync AsyncPersist")))
    {
        foreach (var (mode, n) in new[] { (SyncPolicy.Always, quick ? 500 : 3000), (SyncPolicy.AsyncPersist, appendN) })
        {
            using var s = Open(engine, "sync" + mode, null, mode);
            var subj = Subjects("dur", 16);
            for (int i = 0; i < Math.Min(n, 1000); i++) s.Append(subj[i & 15], default, payload);
            Measure(engine, $"append 128 B, sync {mode}", n, () =>
            {
                for (int i = 0; i < n; i++) s.Append(subj[i & 15], default, payload);
            });
            s.Delete();
        }
        {
            // Sync always with 8 concurrent writers: appends waiting at the same time share one fsync.
            using var s = Open(engine, "syncgroup", null, SyncPolicy.Always);
            var subj = Subjects("grp", 8);
            int per = quick ? 200 : 1500;
            Measure(engine, "append 128 B, sync Always, 8 writers", per * 8, () =>
            {
                var threads = Enumerable.Range(0, 8).Select(t => new Thread(() =>
                {
                    for (int i = 0; i < per; i++) s.Append(subj[t], default, payload);
                })).ToList();
                threads.ForEach(t => t.Start());
                threads.ForEach(t => t.Join());
            });
            s.Delete();
        }
    }

    // ---- load last by subject: 10k subjects ----
    if (!steadyOnly && Wanted("load last by subject (10k subjects)"))
    {
        using var s = Open(engine, "last");
        var subj = Subjects("kv", 10_000);
        for (int i = 0; i < 500_000; i++) s.Append(subj[i % subj.Length], default, payload);
        var m = new StoredMessage(512);
        int n = quick ? 200_000 : 1_000_000;
        var rnd = new Random(3);
        var picks = new int[n];
        for (int i = 0; i < n; i++) picks[i] = rnd.Next(subj.Length);
        Measure(engine, "load last by subject (10k subjects)", n, () =>
        {
            foreach (var p in picks) s.LoadLast(subj[p], m);
        });
        s.Delete();
    }

    // ---- purge by subject with keep: the same work on streams of different total size ----
    foreach (int total in rowOnly || !Wanted("purge subject") ? [] : new[] { 100_000, 1_000_000 })
    {
        using var s = Open(engine, "purge" + total);
        var other = Subjects("bulk", 64);
        for (int i = 0; i < total; i++) s.Append(other[i & 63], default, payload);
        var target = "purge.me"u8.ToArray();
        int rounds = quick ? 500 : 2000;
        long ticks = long.MaxValue, thr = 0, all = 0;
        for (int rep = 0; rep < reps; rep++)
        {
        long repTicks = 0, repThr = 0, repAll = 0;
        for (int r = 0; r < rounds; r++)
        {
            for (int i = 0; i < 20; i++) s.Append(target, default, payload);
            for (int i = 0; i < 20; i++) s.Append(other[i & 63], default, payload);
            var (a0, t0) = Alloc();
            long st = Stopwatch.GetTimestamp();
            var pr = s.Purge(target, keep: 5);
            repTicks += Stopwatch.GetTimestamp() - st;
            var (a1, t1) = Alloc();
            repThr += a1 - a0;
            repAll += t1 - t0;
            if (pr.Purged != 20 && (r > 0 || rep > 0)) throw new InvalidOperationException($"purged {pr.Purged}");
        }
        if (repTicks < ticks) (ticks, thr, all) = (repTicks, repThr, repAll);
        }
        Report(engine, $"purge subject, keep 5 (20 removed), {total / 1000}k msgs", rounds, TimeSpan.FromTicks(ticks * TimeSpan.TicksPerSecond / Stopwatch.Frequency), thr, all);
        s.Delete();
    }
}

if (stallOnly) results.AddRange(NatsBroker.Bench.Storage.AppendStallBench.Run(baseDir, args));
if (sparseOnly) results.AddRange(NatsBroker.Bench.Storage.SparseIndexBench.Run(baseDir, args));

// ---- issue 9 rows (file engine): open time vs size, index memory vs KV updates, appends beside a cold reader ----
if (!stallOnly && !sparseOnly && !rowOnly && rowFilter is null)
{
    var payload = new byte[128];
    Random.Shared.NextBytes(payload);
    var subj = Subjects("bench", 16);
    void Line(string text)
    {
        var line = "| file   | " + text;
        Console.WriteLine(line);
        results.Add(line);
    }

    // Open time vs store size, three ways: the index image a clean close writes (open reads its head, the newest
    // block and 40 B per sealed block; the index stays on disk until touched), the per-block snapshots only
    // (idx/index.img deleted: the index is rebuilt entry by entry from the snapshots) and a full scan (idx/
    // deleted). "open-large" measures 1, 5 and 10 GB stores of 1 KiB messages (and deletes them afterwards).
    bool large = args.Contains("open-large") || args.Contains("open-10g");
    var sizes = args.Contains("open-10g") ? new (long Mb, int Payload)[] { (10240, 1024) }
        : large ? new (long Mb, int Payload)[] { (1024, 128), (1024, 1024), (5120, 1024), (10240, 1024) }
        : openOnly ? [(256, 128), (1024, 128)] : quick ? [(64, 128), (256, 128)] : [(256, 128), (1024, 128), (2048, 128)];
    foreach (var (mb, size) in kvOnly || coldOnly || crashOnly ? [] : sizes)
    {
        var dir = Path.Combine(baseDir, "open-" + mb + "-" + size);
        long msgs = mb * 1024 * 1024 / (size + 8 + 40);
        var body = new byte[size];
        Random.Shared.NextBytes(body);
        double closeSecs;
        {
            var r = new FileStoreFactory().Open(new StreamStoreConfig { StreamName = "open" }, dir);
            var s = r.Store!;
            for (long i = 0; i < msgs; i++) s.Append(subj[i & 15], default, body);
            var sw = Stopwatch.StartNew();
            s.Dispose();
            closeSecs = sw.Elapsed.TotalSeconds;
        }
        long imageBytes = new FileInfo(Path.Combine(dir, "idx", "index.img")).Length;
        string label = $"{mb / 1024.0:0.##} GB store ({msgs / 1000}k msgs of {size} B)";
        Line(string.Create(CultureInfo.InvariantCulture, $"close, {label}: flush + snapshots + index image ({imageBytes / (1024 * 1024)} MiB) | {closeSecs:F3} s |"));
        foreach (var mode in args.Contains("open-10g") ? ["index image", "snapshots only"] : new[] { "index image", "snapshots only", "full scan" })
        {
            double best = double.MaxValue, bestClose = 0, firstTouch = 0;
            long workingSet = 0;
            for (int rep = 0; rep < reps; rep++)
            {
                var idx = Path.Combine(dir, "idx");
                if (mode == "full scan" && Directory.Exists(idx)) Directory.Delete(idx, true);
                if (mode == "snapshots only") File.Delete(Path.Combine(idx, "index.img"));
                GC.Collect();
                var sw = Stopwatch.StartNew();
                var r = new FileStoreFactory().Open(new StreamStoreConfig { StreamName = "open" }, dir);
                sw.Stop();
                var s = r.Store!;
                // The first load of the oldest message (pages in one index chunk when opened from the image).
                var m = new StoredMessage(2048);
                var t = Stopwatch.StartNew();
                s.Load(s.GetState().FirstSequence, m);
                double touch = t.Elapsed.TotalSeconds;
                workingSet = Process.GetCurrentProcess().WorkingSet64;
                t.Restart();
                s.Dispose();
                double close = t.Elapsed.TotalSeconds;
                if (sw.Elapsed.TotalSeconds < best) (best, bestClose, firstTouch) = (sw.Elapsed.TotalSeconds, close, touch);
            }
            Line(string.Create(CultureInfo.InvariantCulture, $"open, {label}, {mode} | {best:F3} s (page cache warm); first load {firstTouch * 1000:F1} ms; RSS after {workingSet / (1024 * 1024)} MiB; close {bestClose:F2} s |"));
        }
        Directory.Delete(dir, true);
    }

    // Memory vs updates on a fixed key set (KV: max msgs per subject 1, random updates over 10,000 keys plus one
    // key never updated after the start, so the first sequence stays behind): RSS, managed heap, index chunks in
    // memory and store bytes on disk, every 1M updates ("kv-only" runs just this; quick: 1M updates).
    if (!openOnly && !large && !coldOnly && !crashOnly)
    {
        var cfg = new StreamStoreConfig { StreamName = "kv", Limits = new StreamLimits { MaxMessagesPerSubject = 1 } };
        var kvDir = Path.Combine(baseDir, "kv");
        var r = new FileStoreFactory().Open(cfg, kvDir);
        using var s = r.Store!;
        var keys = Subjects("kv", 10_000);
        s.Append("kv.stuck"u8, default, payload);
        var rnd = new Random(5);
        long total = quick ? 1_000_000 : 10_000_000, step = quick ? 250_000 : 1_000_000;
        var sw = Stopwatch.StartNew();
        for (long done = 0; done < total;)
        {
            for (long end = done + step; done < end; done++) s.Append(keys[rnd.Next(keys.Length)], default, payload);
            // The index's own byte count where the engine reports it (sparse index), else dense chunks x 48 KiB.
            var (chunks, reported) = NatsBroker.Bench.Storage.StoreCounters.Index(s);
            long indexKiB = (reported ?? chunks * 48L * 1024) / 1024;
            long heap = GC.GetTotalMemory(true);
            long rss = Process.GetCurrentProcess().WorkingSet64;
            long disk = Directory.EnumerateFiles(kvDir, "*", SearchOption.AllDirectories).Sum(f => new FileInfo(f).Length);
            var st = s.GetState();
            Line(string.Create(CultureInfo.InvariantCulture, $"KV {done / 1000}k random updates over 10k keys | {st.Messages} msgs, seq span {st.LastSequence - st.FirstSequence + 1}; index {chunks} dense chunks, {indexKiB} KiB, managed heap {heap / (1024 * 1024)} MiB, RSS {rss / (1024 * 1024)} MiB, disk {disk / (1024 * 1024)} MiB; {done / sw.Elapsed.TotalSeconds:N0} updates/s |"));
        }
        s.Delete();
    }

    // Append throughput alone and with a concurrent reader doing cold random loads.
    if (!openOnly && !large && !kvOnly && !crashOnly)
    {
        var r = new FileStoreFactory().Open(new StreamStoreConfig { StreamName = "cold" }, Path.Combine(baseDir, "cold"));
        using var s = r.Store!;
        long pre = quick ? 500_000 : 2_000_000;
        for (long i = 0; i < pre; i++) s.Append(subj[i & 15], default, payload);
        int n = quick ? 300_000 : 1_000_000;
        foreach (bool withReader in new[] { false, true })
        {
            double best = 0;
            long readsDone = 0;
            for (int rep = 0; rep < reps; rep++)
            {
                using var stop = new CancellationTokenSource();
                long reads = 0;
                var reader = withReader ? new Thread(() =>
                {
                    var m = new StoredMessage(512);
                    var rnd = new Random(3);
                    while (!stop.IsCancellationRequested)
                    {
                        s.Load((ulong)rnd.NextInt64(1, pre), m);
                        reads++;
                    }
                }) : null;
                reader?.Start();
                var sw = Stopwatch.StartNew();
                for (int i = 0; i < n; i++) s.Append(subj[i & 15], default, payload);
                sw.Stop();
                stop.Cancel();
                reader?.Join();
                double rate = n / sw.Elapsed.TotalSeconds;
                if (rate > best) { best = rate; readsDone = (long)(reads / sw.Elapsed.TotalSeconds); }
            }
            Line(withReader
                ? string.Create(CultureInfo.InvariantCulture, $"append 128 B with a concurrent cold random reader | {best:N0} appends/s, reader {readsDone:N0} loads/s |")
                : string.Create(CultureInfo.InvariantCulture, $"append 128 B, no reader (same store) | {best:N0} appends/s |"));
        }
        s.Delete();
    }
}

// ---- open after a crash: the store is written (1 GB of 1 KiB messages, or "open-crash 10g"), flushed (a
// checkpoint: every sealed block gets its index snapshot and the index image gets a checkpoint), then more messages
// are appended ("tail=N" MiB, default 120: just below the 128 MiB image interval, the most an open after a crash
// replays) and handed to the OS by the flush timer, and the directory is copied while the store is still open,
// which is what kill -9 leaves behind. The copy is then opened: index image of the last checkpoint + replay of
// the tail. "no-image" deletes idx/index.img from the copy first (the open before checkpoint images: rebuild from
// the per-block snapshots).
if (crashOnly)
{
    long mb = args.Contains("10g") ? 10240 : 1024;
    long tailMb = (long)NatsBroker.Bench.Storage.BenchArgs.Number(args, "tail", 120);
    bool noImage = args.Contains("no-image");
    const int size = 1024;
    var subj = Subjects("bench", 16);
    var dir = Path.Combine(baseDir, "crash-src");
    var copy = Path.Combine(baseDir, "crash-copy");
    long msgs = mb * 1024 * 1024 / (size + 8 + 40);
    long tailMsgs = tailMb * 1024 * 1024 / (size + 8 + 40);
    var body = new byte[size];
    Random.Shared.NextBytes(body);
    long maxStall = 0;
    {
        var r = new FileStoreFactory().Open(new StreamStoreConfig { StreamName = "crash" }, dir);
        var s = r.Store!;
        // The longest single append, as a rough view of stalls (checkpoints run beside the appends).
        long prev = Stopwatch.GetTimestamp();
        for (long i = 0; i < msgs; i++)
        {
            s.Append(subj[i & 15], default, body);
            long now = Stopwatch.GetTimestamp();
            if (now - prev > maxStall) maxStall = now - prev;
            prev = now;
        }
        if (s.FlushAsync().AsTask().GetAwaiter().GetResult() != StoreStatus.Ok) throw new InvalidOperationException("flush failed");
        for (long i = 0; i < tailMsgs; i++) s.Append(subj[i & 15], default, body);
        Thread.Sleep(500); // the flush timer writes the buffered tail (10 ms)
        CopyDirectory(dir, copy);
        s.Dispose();
        Directory.Delete(dir, true);
    }
    if (noImage) File.Delete(Path.Combine(copy, "idx", "index.img"));
    string label = $"{mb / 1024.0:0.##} GB store ({msgs / 1000}k msgs of {size} B) + {tailMb} MiB after the last checkpoint";
    bool hadImage = File.Exists(Path.Combine(copy, "idx", "index.img"));
    double best = double.MaxValue;
    for (int rep = 0; rep < reps; rep++)
    {
        // Each open starts from the crashed copy again (an open writes state of its own, e.g. a new tail block).
        var run = Path.Combine(baseDir, "crash-run");
        if (Directory.Exists(run)) Directory.Delete(run, true);
        CopyDirectory(copy, run);
        GC.Collect();
        var sw = Stopwatch.StartNew();
        var r = new FileStoreFactory().Open(new StreamStoreConfig { StreamName = "crash" }, run);
        sw.Stop();
        if (!r.IsOk) throw new InvalidOperationException(r.Error);
        var st = r.Store!.GetState();
        if (st.Messages != (ulong)(msgs + tailMsgs)) throw new InvalidOperationException($"crash open lost messages: {st.Messages} of {msgs + tailMsgs}");
        r.Store.Dispose();
        best = Math.Min(best, sw.Elapsed.TotalSeconds);
    }
    var line = string.Create(CultureInfo.InvariantCulture, $"| file   | open after a crash (copied while open, index image {(hadImage ? "present" : "absent")}), {label} | {best:F3} s (page cache warm) | longest append while writing: {maxStall * 1000.0 / Stopwatch.Frequency:F1} ms |");
    Console.WriteLine(line);
    results.Add(line);
}

static void CopyDirectory(string from, string to)
{
    Directory.CreateDirectory(to);
    foreach (var f in Directory.GetFiles(from)) File.Copy(f, Path.Combine(to, Path.GetFileName(f)));
    foreach (var d in Directory.GetDirectories(from)) CopyDirectory(d, Path.Combine(to, Path.GetFileName(d)));
}

try { Directory.Delete(baseDir, true); } catch (IOException) { }
var outFile = Environment.GetEnvironmentVariable("STORAGE_BENCH_OUT");
if (!string.IsNullOrEmpty(outFile)) File.WriteAllLines(outFile, results);
