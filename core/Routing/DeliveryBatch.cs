using System.Diagnostics;
using System.Runtime.CompilerServices;

namespace NatsBroker.Routing;

/// <summary>
/// The destinations one publisher touched since its last flush (one read batch of a client, or one internal
/// publish), each remembered once, plus the back-pressure hints the destinations gave. Owned by one publisher at a
/// time: never shared between threads.
/// </summary>
/// <remarks>
/// At the end of the batch <see cref="Flush"/> writes each destination once. As nats-server's flushClients does,
/// the first destinations are written inline on the publisher's thread (no thread-pool hop: the measured win for
/// fan-out and request/reply) while a time budget lasts; the rest are handed to their own writers, so one
/// publisher's fan-out to many connections, or one slow socket, never holds up this publisher's next read for
/// long.
/// </remarks>
public sealed class DeliveryBatch
{
    /// <summary>Inline flushing stops once this much time went into it in one batch (nats-server: 1 ms budget in its read loop).</summary>
    public static readonly long InlineBudgetTicks = Stopwatch.Frequency / 1000;

    private readonly List<IFlushTarget> _targets = [];
    private readonly HashSet<IFlushTarget> _seen = new(ReferenceEqualityComparer.Instance);

    /// <summary>How many distinct backed-up destinations one batch remembers for the publisher to wait on.</summary>
    public const int MaxStallTargets = 4;

    // Destinations over their fast-producer threshold (client.go stalledWait) during this batch. All of them are
    // waited for (within one budget): remembering only the first let a healthy but busy subscriber be cut off
    // while the publisher waited on one that was being closed anyway.
    private readonly IStallTarget?[] _stallOn = new IStallTarget?[MaxStallTargets];
    private int _stallCount;

    /// <summary>The publisher is itself a destination that is over its pending limit: it should stop reading until it drains.</summary>
    public bool PublisherBackedUp { get; private set; }

    public int Count => _targets.Count;

    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    public void Add(IFlushTarget target)
    {
        var list = _targets;
        if (list.Count > 0 && ReferenceEquals(list[^1], target)) return;
        if (_seen.Add(target)) list.Add(target);
    }

    /// <summary>A destination asks its publisher to slow down (the first <see cref="MaxStallTargets"/> distinct ones are kept).</summary>
    public void RequestStall(IStallTarget target)
    {
        for (int i = 0; i < _stallCount; i++)
        {
            if (ReferenceEquals(_stallOn[i], target)) return;
        }
        if (_stallCount < MaxStallTargets) _stallOn[_stallCount++] = target;
    }

    /// <summary>The publisher's own outbound is over the limit (it is its own slow destination).</summary>
    public void MarkPublisherBackedUp() => PublisherBackedUp = true;

    /// <summary>Writes every remembered destination once (inline within the budget), then forgets them.</summary>
    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    public void Flush()
    {
        var list = _targets;
        if (list.Count == 0) return;
        long start = Stopwatch.GetTimestamp();
        bool inline = true;
        for (int i = 0; i < list.Count; i++)
        {
            if (inline && i > 0 && Stopwatch.GetTimestamp() - start > InlineBudgetTicks) inline = false;
            list[i].Flush(inline);
        }
        list.Clear();
        _seen.Clear();
    }

    /// <summary>Whether any back-pressure hint was given in this batch.</summary>
    public bool HasBackPressure => PublisherBackedUp || _stallCount > 0;

    /// <summary>The i-th destination that asked for a stall (0 &lt;= i &lt; <see cref="StallCount"/>).</summary>
    public IStallTarget StallTarget(int i) => _stallOn[i]!;

    public int StallCount => _stallCount;

    /// <summary>Forgets the back-pressure hints (after the publisher acted on them, or for publishers that cannot wait).</summary>
    public void ClearBackPressure()
    {
        Array.Clear(_stallOn, 0, _stallCount);
        _stallCount = 0;
        PublisherBackedUp = false;
    }
}

/// <summary>A destination a publisher can wait on while it drains (fast-producer stall, self back-pressure).</summary>
public interface IStallTarget
{
    /// <summary>
    /// Completes when the destination's pending bytes fall below its stall threshold or it closes. Event-driven
    /// (completed by the destination's writer), never polled.
    /// </summary>
    Task WhenDrainedAsync();

    /// <summary>Whether the destination is still above its stall threshold.</summary>
    bool IsBackedUp { get; }

    /// <summary>Whether the destination is past its hard limit (max_pending).</summary>
    bool IsOverLimit { get; }
}
