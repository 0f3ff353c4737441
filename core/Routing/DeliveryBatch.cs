using System.Diagnostics;

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

    /// <summary>A destination over its fast-producer threshold (client.go stalledWait): the publisher should wait for it.</summary>
    public IStallTarget? StallOn { get; private set; }

    /// <summary>The publisher is itself a destination that is over its pending limit: it should stop reading until it drains.</summary>
    public bool PublisherBackedUp { get; private set; }

    public int Count => _targets.Count;

    public void Add(IFlushTarget target)
    {
        var list = _targets;
        if (list.Count > 0 && ReferenceEquals(list[^1], target)) return;
        if (_seen.Add(target)) list.Add(target);
    }

    /// <summary>A destination asks its publisher to slow down (first one wins for this batch).</summary>
    public void RequestStall(IStallTarget target) => StallOn ??= target;

    /// <summary>The publisher's own outbound is over the limit (it is its own slow destination).</summary>
    public void MarkPublisherBackedUp() => PublisherBackedUp = true;

    /// <summary>Writes every remembered destination once (inline within the budget), then forgets them.</summary>
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

    /// <summary>Takes the back-pressure hints for the caller to act on, and clears them.</summary>
    public (IStallTarget? StallOn, bool PublisherBackedUp) TakeBackPressure()
    {
        var result = (StallOn, PublisherBackedUp);
        StallOn = null;
        PublisherBackedUp = false;
        return result;
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
