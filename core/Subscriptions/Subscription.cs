namespace NatsBroker.Subscriptions;

/// <summary>Whatever owns subscriptions and receives messages (a client connection, an internal service).</summary>
public interface ISubscriber;

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

    /// <summary>Auto-unsubscribe limit from <c>UNSUB sid max</c>; 0 = none. Only the owner's read loop writes it.</summary>
    public long MaxMessages { get; set; }

    /// <summary>Messages delivered so far (for auto-unsubscribe and /connz).</summary>
    public long Delivered;

    /// <summary>Set once the subscription is removed; deliveries racing the removal check it.</summary>
    public volatile bool Closed;
}
