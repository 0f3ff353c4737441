using System.Diagnostics;
using System.Globalization;

namespace NatsBroker.Bench.Micro;

/// <summary>One microbenchmark: an operation run in a loop. Return a value derived from the work so it is not elided.</summary>
internal interface IMicroBenchmark
{
    string Name { get; }

    /// <summary>Null when the code under test exists; otherwise why the row is pending (no number is reported).</summary>
    string? Pending { get; }

    void Setup();

    /// <summary>Runs the operation <paramref name="n"/> times.</summary>
    long Run(int n);
}

internal sealed record MicroResult(string Name, string? Pending, double OpsPerSec, double NsPerOp, double AllocatedBytesPerOp);

/// <summary>
/// Minimal harness (BenchmarkDotNet is heavier than needed for a CI smoke and allocation checks): warm-up, then
/// timed batches until ~target time; reports the median batch and GC.GetAllocatedBytesForCurrentThread per op.
/// </summary>
internal static class MicroHarness
{
    public static MicroResult Measure(IMicroBenchmark b, TimeSpan target)
    {
        if (b.Pending is not null)
        {
            return new MicroResult(b.Name, b.Pending, double.NaN, double.NaN, double.NaN);
        }

        b.Setup();
        long sink = 0;
        int n = 1;
        var sw = Stopwatch.StartNew();
        // warm-up and calibrate: a batch of ~10 ms
        while (true)
        {
            sw.Restart();
            sink += b.Run(n);
            if (sw.Elapsed.TotalMilliseconds >= 10 || n >= 1 << 30)
            {
                break;
            }

            n *= 2;
        }

        var perOp = new List<double>(100_000);
        long alloc = 0;
        long ops = 0;
        var total = Stopwatch.StartNew();
        while (total.Elapsed < target || perOp.Count < 5)
        {
            long a0 = GC.GetAllocatedBytesForCurrentThread();
            sw.Restart();
            sink += b.Run(n);
            double ns = sw.Elapsed.TotalNanoseconds;
            alloc += GC.GetAllocatedBytesForCurrentThread() - a0;
            perOp.Add(ns / n);
            ops += n;
        }

        perOp.Sort();
        double med = perOp[perOp.Count / 2];
        GC.KeepAlive(sink);
        return new MicroResult(b.Name, null, 1e9 / med, med, (double)alloc / ops);
    }

    public static string Format(MicroResult r) =>
        r.Pending is not null
            ? $"| {r.Name} | pending | pending | pending ({r.Pending}) |"
            : string.Create(CultureInfo.InvariantCulture, $"| {r.Name} | {r.OpsPerSec / 1e6:0.00} M | {r.NsPerOp:0.0} | {r.AllocatedBytesPerOp:0.##} |");
}
