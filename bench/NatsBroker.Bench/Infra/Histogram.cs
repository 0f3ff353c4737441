using System.Diagnostics;
using System.Numerics;

namespace NatsBroker.Bench.Infra;

/// <summary>
/// Log-linear latency histogram in nanoseconds: 64 linear sub-buckets per power of two (about 1.6% relative
/// precision). Recording is allocation-free; one instance per thread, merged at the end.
/// </summary>
internal sealed class Histogram
{
    private const int SubBits = 6;
    private const int Sub = 1 << SubBits; // 64
    private readonly long[] _counts = new long[(64 - SubBits) * Sub + 2 * Sub];

    public long Count { get; private set; }

    public long MaxNs { get; private set; }

    public void RecordTicks(long stopwatchTicks) => Record(stopwatchTicks * 1_000_000_000L / Stopwatch.Frequency);

    public void Record(long ns)
    {
        if (ns < 0)
        {
            ns = 0;
        }

        _counts[Index(ns)]++;
        Count++;
        if (ns > MaxNs)
        {
            MaxNs = ns;
        }
    }

    public void Add(Histogram other)
    {
        for (int i = 0; i < _counts.Length; i++)
        {
            _counts[i] += other._counts[i];
        }

        Count += other.Count;
        MaxNs = Math.Max(MaxNs, other.MaxNs);
    }

    private static int Index(long v)
    {
        if (v < 2 * Sub)
        {
            return (int)v;
        }

        int msb = 63 - BitOperations.LeadingZeroCount((ulong)v);
        int shift = msb - SubBits;
        return (shift * Sub) + (int)(v >> shift);
    }

    private static double MidValue(int idx)
    {
        if (idx < 2 * Sub)
        {
            return idx;
        }

        int shift = (idx - Sub) / Sub;
        long m = idx - (shift * Sub);
        long lo = m << shift;
        long width = 1L << shift;
        return lo + (width / 2.0);
    }

    /// <summary>Value in microseconds at percentile p (0..100).</summary>
    public double PercentileMicros(double p)
    {
        if (Count == 0)
        {
            return double.NaN;
        }

        long rank = Math.Max(1, (long)Math.Ceiling(p / 100.0 * Count));
        long seen = 0;
        for (int i = 0; i < _counts.Length; i++)
        {
            seen += _counts[i];
            if (seen >= rank)
            {
                return Math.Min(MidValue(i), MaxNs) / 1000.0;
            }
        }

        return MaxNs / 1000.0;
    }
}
