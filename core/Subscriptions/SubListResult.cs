namespace NatsBroker.Subscriptions;

/// <summary>
/// The subscriptions interested in one literal subject: plain subscribers (each gets a copy) and queue groups
/// (one member of each gets a copy). Immutable once published; it is shared by the SubList cache and by every
/// connection's L1 cache, so callers must never write into the arrays. A new instance is allocated only when a
/// match is computed or a cached result is patched by a writer, never per lookup.
/// </summary>
public sealed class SubListResult
{
    /// <summary>The shared no-interest result, cached like any other so publishes to nowhere stay cheap.</summary>
    public static readonly SubListResult Empty = new([], []);

    public SubListResult(Subscription[] plain, Subscription[][] queues)
    {
        Plain = plain;
        Queues = queues;
    }

    /// <summary>Non-queue subscriptions; every one receives the message.</summary>
    public Subscription[] Plain { get; }

    /// <summary>One non-empty array per queue group name holding all matching members of that group.</summary>
    public Subscription[][] Queues { get; }

    public bool IsEmpty => Plain.Length == 0 && Queues.Length == 0;

    /// <summary>
    /// Fan-out as nats-server counts it for /subsz: plain subscribers plus queue groups (a group receives once).
    /// </summary>
    public int Fanout => Plain.Length + Queues.Length;

    /// <summary>Copy-on-write: a new result that also contains <paramref name="sub"/> (used to patch cache entries).</summary>
    internal SubListResult WithAdded(Subscription sub)
    {
        if (sub.Queue is null)
        {
            return new SubListResult([.. Plain, sub], Queues);
        }

        for (int i = 0; i < Queues.Length; i++)
        {
            if (Queues[i][0].Queue.AsSpan().SequenceEqual(sub.Queue))
            {
                var queues = (Subscription[][])Queues.Clone();
                queues[i] = [.. Queues[i], sub];
                return new SubListResult(Plain, queues);
            }
        }

        return new SubListResult(Plain, [.. Queues, [sub]]);
    }
}
