using System.Diagnostics;
using System.Globalization;
using System.Text;
using NatsBroker.Contracts;
using NatsBroker.Storage.File;

namespace NatsBroker.Bench.Storage;

/// <summary>
/// "append-stall [gb=N] [payload=B]": appends of B-byte messages (default 1 KiB; 16 subjects) into a growing file
/// store, N GB (default 2) per
/// run, measuring every single append: throughput, the longest append, the 99.9th and 99.99th percentiles, how many
/// appends took over 10 ms and the GC collections and pause time during the run. The store's own timers run beside it (flush, periodic sync, per-block index snapshots
/// and index image checkpoints every 128 MiB), which is where stalls come from. Two runs: the writer alone, and
/// the writer with a concurrent reader replaying the stream from its first message (LoadNext, sequential: the
/// reader loads each sealed block whole, a 4 MiB read per block).
/// </summary>
internal static class AppendStallBench
{
    public static List<string> Run(string baseDir, string[] args)
    {
        double gb = BenchArgs.Number(args, "gb", 2);
        int payload = (int)BenchArgs.Number(args, "payload", 1024);
        var lines = new List<string>();
        foreach (bool withReader in new[] { false, true })
        {
            var dir = Path.Combine(baseDir, "stall-" + (withReader ? "reader" : "alone"));
            var line = RunOnce(dir, gb, payload, withReader);
            Console.WriteLine(line);
            lines.Add(line);
            Directory.Delete(dir, true);
        }
        return lines;
    }

    private static string RunOnce(string dir, double gb, int payloadSize, bool withReader)
    {
        var r = new FileStoreFactory().Open(new StreamStoreConfig { StreamName = "stall" }, dir);
        if (!r.IsOk) throw new InvalidOperationException(r.Error);
        using var s = r.Store!;
        var subj = Enumerable.Range(0, 16).Select(i => Encoding.ASCII.GetBytes("bench." + i)).ToArray();
        var body = new byte[payloadSize];
        Random.Shared.NextBytes(body);
        long msgs = (long)(gb * 1024 * 1024 * 1024 / (payloadSize + 8 + 40));
        // The reader starts once a quarter is written, so it replays data written long before (sealed blocks).
        long readerStart = withReader ? msgs / 4 : long.MaxValue;
        using var stop = new CancellationTokenSource();
        long reads = 0;
        Thread? reader = null;
        // Latency histogram in 10 us buckets up to 1 s (no per-append allocation).
        var hist = new long[100_001];
        long max = 0, over10 = 0;
        double tick = 1000.0 / Stopwatch.Frequency;
        int gc0 = GC.CollectionCount(0), gc1 = GC.CollectionCount(1), gc2 = GC.CollectionCount(2);
        var gcPause = GC.GetTotalPauseDuration();
        long allocWriter = GC.GetAllocatedBytesForCurrentThread(), allocAll = GC.GetTotalAllocatedBytes(precise: true);
        var sw = Stopwatch.StartNew();
        long prev = Stopwatch.GetTimestamp();
        for (long i = 0; i < msgs; i++)
        {
            if (i == readerStart)
            {
                reader = new Thread(() =>
                {
                    var m = new StoredMessage(2048);
                    ulong q = 1;
                    while (!stop.IsCancellationRequested)
                    {
                        if (s.LoadNext(default, q, m) != StoreStatus.Ok) q = 1; // caught up: replay again from the start
                        else q = m.Sequence + 1;
                        reads++;
                    }
                });
                reader.Start();
                prev = Stopwatch.GetTimestamp();
            }
            s.Append(subj[i & 15], default, body);
            long now = Stopwatch.GetTimestamp();
            long d = now - prev;
            prev = now;
            if (d > max) max = d;
            double ms = d * tick;
            if (ms > 10) over10++;
            hist[Math.Min(hist.Length - 1, (int)(ms * 100))]++;
        }
        sw.Stop();
        gcPause = GC.GetTotalPauseDuration() - gcPause;
        allocWriter = GC.GetAllocatedBytesForCurrentThread() - allocWriter;
        allocAll = GC.GetTotalAllocatedBytes(precise: true) - allocAll;
        gc0 = GC.CollectionCount(0) - gc0;
        gc1 = GC.CollectionCount(1) - gc1;
        gc2 = GC.CollectionCount(2) - gc2;
        stop.Cancel();
        reader?.Join();
        double p999 = Percentile(hist, msgs, msgs / 1_000), p9999 = Percentile(hist, msgs, msgs / 10_000);
        return string.Create(CultureInfo.InvariantCulture,
            $"| file   | append-stall {gb:0.##} GB ({msgs / 1000}k msgs of {payloadSize} B){(withReader ? " + sequential reader from the first message" : ", writer alone")} | {msgs / sw.Elapsed.TotalSeconds:N0} appends/s | longest append {max * tick:F1} ms; p99.9 {p999:F2} ms; p99.99 {p9999:F2} ms; appends over 10 ms: {over10}; GC {gc0}/{gc1}/{gc2} (gen0/1/2 counts, all threads), pauses {gcPause.TotalMilliseconds:F0} ms; allocated per append {(double)allocWriter / msgs:F1} B (writer thread), {(double)allocAll / msgs:F1} B (all threads){(withReader ? string.Create(CultureInfo.InvariantCulture, $"; reader {reads / 1000}k loads") : "")} |");
    }

    /// <summary>Upper edge (ms) of the 10 us bucket below which all but <paramref name="tail"/> of <paramref name="n"/> appends fall.</summary>
    private static double Percentile(long[] hist, long n, long tail)
    {
        long target = n - tail, seen = 0;
        int b = 0;
        for (; b < hist.Length - 1; b++)
        {
            seen += hist[b];
            if (seen >= target) break;
        }
        return (b + 1) / 100.0;
    }
}
