using System.Diagnostics;

namespace NatsBroker.Transport.Runtime;

/// <summary>
/// One trim: the heap the GC had committed as of the collection before it (growth since then is not counted) and right
/// after it, and how long the collection paused the process.
/// </summary>
public readonly record struct HeapTrim(long CommittedBefore, long CommittedAfter, TimeSpan Pause)
{
    /// <summary>What a log line says about it: "80.1 -> 52.3 MB committed, 41.0 ms pause".</summary>
    public override string ToString() => string.Create(System.Globalization.CultureInfo.InvariantCulture,
        $"{CommittedBefore / 1048576.0:0.0} -> {CommittedAfter / 1048576.0:0.0} MB committed, {Pause.TotalMilliseconds:0.0} ms pause");
}

/// <summary>
/// Gives the managed heap's free memory back to the operating system once a burst of growth is over (a connect
/// storm, a burst of requests): one full, compacting collection that also decommits the memory it frees
/// (<see cref="GCCollectionMode.Aggressive"/>). The core and every gateway process run one (core/Program.cs,
/// gateways/link/GatewayProgram.cs).
/// </summary>
/// <remarks>
/// <para>
/// Why: a burst leaves the heap much larger than what stays live, and the GC keeps that memory committed for reuse:
/// it is resident, in RSS, until the process ends. Go's runtime returns such memory in the background (its
/// scavenger), which is what nats-server's RSS shows. Measured with 10,000 idle MQTT sessions (bench row
/// <c>mqtt-sessions10k</c>, RSS of core plus gateway 1 s after the last CONNACK): 23.7 KB per session without a
/// trim, 17.4 KB with the gateway trimming, 14.7 KB with both; a compacting collection that keeps the memory
/// committed gave less, and the runtime's own knobs (gen0 budget, <c>GCConserveMemory</c>) changed nothing. 2,000
/// idle TCP clients of the core: 9.9 KB per connection against 14.0.
/// </para>
/// <para>
/// Where not: a compacting collection copies every live object it moves, and a copy touches every page of it. A
/// process whose idle clients keep a large movable read buffer, of which the kernel has made resident only the pages
/// a read wrote, would grow: before the core's read buffers were pinned (ReadBufferPool), one trim after 2,000 idle
/// TCP connections took it from 43 to 154 MB of RSS. The TLS terminator and the WebSocket gateway did the same until
/// their read buffers were pinned too (gateways/link/PinnedBuffers.cs): 2,000 idle TLS clients 160 MB without a
/// trim and 218 MB after one, 2,000 idle WebSocket clients 225 MB and 291 MB. With pinned buffers: 105 MB and 59 MB
/// after a trim (124 MB and 116 MB without one).
/// </para>
/// <para>
/// When: every <see cref="Period"/> it reads how much the process allocated since the previous check. When that is
/// under <see cref="QuietBytes"/> (the burst is over) and the heap the GC last reported as committed grew by at least
/// <see cref="MinGrowthBytes"/> and by a quarter since the last trim, it collects. (Whether a collection ran in the
/// period is no such signal: with a gen0 budget of tens of MB, a connect storm went 250 ms without one and was
/// trimmed three times while it lasted.) Growth by a quarter between trims keeps the number of trims logarithmic in
/// the heap's size while it grows, and a heap that stops growing is not trimmed again: steady state pays two counter
/// reads per period. Heaps over <see cref="MaxHeapBytes"/> are left alone (a full compacting pause grows with the
/// live heap).
/// </para>
/// <para>
/// The pause: one blocking collection per trim; the callback receives its length (logged at debug level). Measured
/// after 9,500 MQTT sessions connected: 140 ms in the gateway (132 -> 87 MB committed) and 53 ms in the core, once;
/// after 2,000 TCP connections 12 ms in the core.
/// <c>NATSBROKER_HEAP_TRIM=off</c> switches trimming off.
/// </para>
/// </remarks>
public sealed class HeapTrimmer : IDisposable
{
    /// <summary>How often the trimmer looks at the GC's counters.</summary>
    public static readonly TimeSpan Period = TimeSpan.FromMilliseconds(250);

    /// <summary>The smallest growth since the last trim worth a collection.</summary>
    public const long MinGrowthBytes = 16L << 20;

    /// <summary>Allocation within one period under which the process counts as quiet (4 MB/s).</summary>
    public const long QuietBytes = 1L << 20;

    /// <summary>Committed heaps larger than this are never trimmed (the pause would be long).</summary>
    public const long MaxHeapBytes = 1L << 30;

    /// <summary>Set to <c>off</c>, <c>0</c> or <c>false</c> to switch trimming off.</summary>
    public const string SwitchVariable = "NATSBROKER_HEAP_TRIM";

    private readonly Action<HeapTrim>? _onTrim;
    private readonly Timer _timer;
    private readonly Lock _tickLock = new();
    private long _baseline;
    private long _lastAllocated;

    private HeapTrimmer(Action<HeapTrim>? onTrim)
    {
        _onTrim = onTrim;
        _baseline = GC.GetGCMemoryInfo().TotalCommittedBytes;
        _lastAllocated = GC.GetTotalAllocatedBytes();
        _timer = new Timer(static s => ((HeapTrimmer)s!).Tick(), this, Period, Period);
    }

    /// <summary>Starts trimming, unless <see cref="SwitchVariable"/> switches it off (then null).</summary>
    /// <param name="onTrim">Called after each trim, on the trimmer's timer thread.</param>
    public static HeapTrimmer? Start(Action<HeapTrim>? onTrim = null) =>
        Environment.GetEnvironmentVariable(SwitchVariable)?.Trim().ToLowerInvariant() is "off" or "0" or "false"
            ? null
            : new HeapTrimmer(onTrim);

    /// <summary>Whether a heap at <paramref name="committed"/> bytes, <paramref name="baseline"/> after the last trim, is worth trimming now.</summary>
    /// <param name="allocatedInPeriod">Bytes the process allocated during the last period.</param>
    public static bool ShouldTrim(long allocatedInPeriod, long committed, long baseline)
    {
        if (allocatedInPeriod >= QuietBytes || committed > MaxHeapBytes) return false;
        long growth = committed - baseline;
        return growth >= MinGrowthBytes && growth >= baseline / 4;
    }

    private void Tick()
    {
        // Timer callbacks can overlap if a trim outlasts the period: one at a time, later ones skip.
        if (!_tickLock.TryEnter()) return;
        try
        {
            long allocated = GC.GetTotalAllocatedBytes();
            long inPeriod = allocated - _lastAllocated;
            _lastAllocated = allocated;
            long committed = GC.GetGCMemoryInfo().TotalCommittedBytes;
            if (!ShouldTrim(inPeriod, committed, _baseline)) return;
            _onTrim?.Invoke(TrimLocked());
        }
        finally
        {
            _tickLock.Exit();
        }
    }

    /// <summary>Collects now and makes the result the new baseline.</summary>
    public HeapTrim TrimNow()
    {
        lock (_tickLock) return TrimLocked();
    }

    private HeapTrim TrimLocked()
    {
        long before = GC.GetGCMemoryInfo().TotalCommittedBytes;
        long start = Stopwatch.GetTimestamp();
        GC.Collect(2, GCCollectionMode.Aggressive, blocking: true, compacting: true);
        var pause = Stopwatch.GetElapsedTime(start);
        _baseline = GC.GetGCMemoryInfo().TotalCommittedBytes;
        _lastAllocated = GC.GetTotalAllocatedBytes();
        return new HeapTrim(before, _baseline, pause);
    }

    public void Dispose() => _timer.Dispose();
}
