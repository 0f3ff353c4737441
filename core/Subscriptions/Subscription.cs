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
}
