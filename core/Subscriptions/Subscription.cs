using NatsBroker.Routing;

namespace NatsBroker.Subscriptions;

/// <summary>
/// One SUB: subject (may hold wildcards), optional queue group, the client's sid, and its owner.
/// Byte arrays are created once at SUB time so the delivery path never allocates.
/// </summary>
public sealed class Subscription(byte[] subject, byte[]? queue, byte[] sid, ISubscriber owner)
{
    public byte[] Subject { get; } = subject;
    public byte[]? Queue { get; } = queue;
    public byte[] Sid { get; } = sid;
    public ISubscriber Owner { get; } = owner;

    /// <summary>Auto-unsubscribe limit from <c>UNSUB sid max</c>; 0 = none. Written and checked under the owner's delivery lock.</summary>
    public long MaxMessages { get; set; }

    /// <summary>Messages delivered so far (for auto-unsubscribe and /connz); written under the owner's delivery lock.</summary>
    public long Delivered;

    /// <summary>
    /// Set by the owner when its subscribe deny list can still deny some subject this subscription matches (a
    /// wildcard or queue SUB colliding with a deny entry, client.go loadMsgDenyFilterIfNeeded): each delivery is
    /// then checked (client.go deliverMsg, checkDenySub). False for every other subscription, which pays nothing.
    /// </summary>
    public volatile bool FilterDeliveries;

    /// <summary>Set once the subscription is removed; deliveries racing the removal check it.</summary>
    public volatile bool Closed;

    /// <summary>Who may learn of this interest (routes.md 4.1): local interest is announced to routes, node-only
    /// interest (service-import subscriptions, nats-server's <c>sub.si</c>) and remote interest are not.</summary>
    public SubscriptionScope Scope { get; init; }

    /// <summary>Interest a route announced (its owner is the route connection): one hop, never sent on to routes.</summary>
    public bool IsRemote => Scope == SubscriptionScope.Remote;

    /// <summary>A remote queue subscription stands for this many members on its node (RS+ weight, sublist.go
    /// addNodeToResults expands it <c>qw</c> times); 1 for every local subscription. A repeated RS+ replaces the
    /// subscription rather than writing this, so a cached match result never changes under a reader.</summary>
    public int QueueWeight { get; init; } = 1;
}

/// <summary>See <see cref="Subscription.Scope"/>.</summary>
public enum SubscriptionScope
{
    /// <summary>A client's or internal subscriber's interest: routes are told of it.</summary>
    Local,
    /// <summary>Served on this node only (service-import subscriptions): not announced to routes.</summary>
    NodeOnly,
    /// <summary>Announced by a route peer; delivered to by sending the message on that route.</summary>
    Remote,
}
