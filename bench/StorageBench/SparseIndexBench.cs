using System.Diagnostics;
using System.Globalization;
using System.Text;
using NatsBroker.Contracts;
using NatsBroker.Storage.File;

namespace NatsBroker.Bench.Storage;

/// <summary>
/// "sparse-only [msgs=N]": index memory after scattered removals. N messages (default 1M, 128 B, 16 subjects) are
/// appended, then every message but each 1000th is removed, in ascending order except that sequence 1 stays (so
/// the first sequence, and with it the span, does not move). Reports the index's own byte count (IndexBytes where
/// the engine has it, else allocated chunks x 48 KiB), the managed heap, the removal rate and the load rate of
/// the survivors, then the same after a clean reopen (index image: pages come back as they are touched).
/// </summary>
internal static class SparseIndexBench
{
    public static List<string> Run(string baseDir, string[] args)
    {
        long n = (long)BenchArgs.Number(args, "msgs", 1_000_000);
        var lines = new List<string>();
        var dir = Path.Combine(baseDir, "sparse");
        var cfg = new StreamStoreConfig { StreamName = "sparse" };
        var subj = Enumerable.Range(0, 16).Select(i => Encoding.ASCII.GetBytes("bench." + i)).ToArray();
        var payload = new byte[128];
        Random.Shared.NextBytes(payload);
        long removed = 0, survivors = 0;
        double removeRate, loadRate;
        {
            using var s = Open(cfg, dir);
            for (long i = 0; i < n; i++) s.Append(subj[i & 15], default, payload);
            lines.Add(Line($"{n / 1000}k msgs appended, all live", s, 0, 0));
            var sw = Stopwatch.StartNew();
            for (ulong q = 2; q <= (ulong)n; q++)
            {
                if (q % 1000 == 0) continue;
                if (s.Remove(q) != StoreStatus.Ok) throw new InvalidOperationException($"remove {q}");
                removed++;
            }
            removeRate = removed / sw.Elapsed.TotalSeconds;
            (survivors, loadRate) = LoadSurvivors(s, n);
            lines.Add(Line($"every 1000th kept ({survivors} live), span {n / 1000}k", s, removeRate, loadRate));
        }
        // The index image the clean close wrote: its size, and what an open from it costs (the open, then the first
        // load of every survivor, which reads the survivors' pages).
        long imageBytes = new FileInfo(Path.Combine(dir, "idx", "index.img")).Length;
        {
            var sw = Stopwatch.StartNew();
            using var s = Open(cfg, dir);
            double openSecs = sw.Elapsed.TotalSeconds;
            (_, double before) = LoadSurvivors(s, n);
            double firstLoadSecs = sw.Elapsed.TotalSeconds - openSecs;
            lines.Add(Line("after a clean reopen, survivors loaded once", s, 0, before));
            lines.Add(string.Create(CultureInfo.InvariantCulture,
                $"| file   | sparse index: index image after the clean close | {imageBytes / 1024.0:N0} KiB; open {openSecs * 1000:F1} ms; first load of the {survivors} survivors {firstLoadSecs * 1000:F1} ms |"));
            s.Delete();
        }
        foreach (var l in lines) Console.WriteLine(l);
        return lines;
    }

    private static IStreamStore Open(StreamStoreConfig cfg, string dir)
    {
        var r = new FileStoreFactory().Open(cfg, dir);
        if (!r.IsOk) throw new InvalidOperationException(r.Error);
        return r.Store!;
    }

    private static (long Count, double Rate) LoadSurvivors(IStreamStore s, long n)
    {
        var msg = new StoredMessage(512);
        long count = 0;
        var sw = Stopwatch.StartNew();
        if (s.Load(1, msg) == StoreStatus.Ok) count++;
        for (ulong q = 1000; q <= (ulong)n; q += 1000)
        {
            if (s.Load(q, msg) != StoreStatus.Ok) throw new InvalidOperationException($"load {q}");
            count++;
        }
        return (count, count / sw.Elapsed.TotalSeconds);
    }

    private static string Line(string what, IStreamStore s, double removeRate, double loadRate)
    {
        var (chunks, reported) = StoreCounters.Index(s);
        long bytes = reported ?? chunks * 48 * 1024;
        long heap = GC.GetTotalMemory(true);
        var st = s.GetState();
        string rates = string.Create(CultureInfo.InvariantCulture,
            $"{(removeRate > 0 ? $"; {removeRate:N0} removes/s" : "")}{(loadRate > 0 ? $"; {loadRate:N0} survivor loads/s" : "")}");
        return string.Create(CultureInfo.InvariantCulture,
            $"| file   | sparse index: {what} | {st.Messages} msgs; index {bytes / 1024.0:N0} KiB ({(st.Messages == 0 ? 0 : bytes / (double)st.Messages):N0} B/live msg, {chunks} dense chunks{(reported is null ? ", no IndexBytes: chunks x 48 KiB" : "")}), managed heap {heap / (1024 * 1024)} MiB{rates} |");
    }
}
