using System.Buffers;
using NatsBroker.Subscriptions;

namespace NatsBroker.Routing;

/// <summary>
/// A server-internal subscription callback (nats-server's msgHandler for internal subscriptions).
/// <paramref name="msg"/> is valid only during the call.
/// </summary>
public delegate void InternalMessageHandler(Subscription sub, in InternalMessage msg);

/// <summary>What an internal subscriber sees of a routed message.</summary>
public readonly ref struct InternalMessage
{
    internal InternalMessage(ref RoutedMessage msg, DeliveryBatch batch)
    {
        Batch = batch;
        Origin = msg.Origin;
        Subject = msg.Subject;
        Reply = msg.Reply;
        HeaderSize = msg.HeaderSize;
        Payload = msg.Payload;
    }

    /// <summary>The publishing client; null when the server published it.</summary>
    public IPublisher? Origin { get; }
    /// <summary>
    /// The publisher's delivery batch (this thread's): a handler that answers on the publisher's thread can publish
    /// into it, so its reply is written with the rest of the publisher's read batch (once per read, as nats-server
    /// flushes its clients) and the publisher's back-pressure applies to it.
    /// </summary>
    public DeliveryBatch Batch { get; }
    public ReadOnlySpan<byte> Subject { get; }
    public ReadOnlySpan<byte> Reply { get; }
    /// <summary>Size of the header block at the start of <see cref="Payload"/>; -1 when there is none.</summary>
    public int HeaderSize { get; }
    /// <summary>Header block (if any) followed by the body.</summary>
    public ReadOnlySequence<byte> Payload { get; }
    public ReadOnlySequence<byte> Headers => HeaderSize > 0 ? Payload.Slice(0, HeaderSize) : ReadOnlySequence<byte>.Empty;
    public ReadOnlySequence<byte> Body => HeaderSize > 0 ? Payload.Slice(HeaderSize) : Payload;
}

/// <summary>
/// The owner of one internal subscription: runs its callback on the publisher's thread. A callback that throws is
/// reported to the router's fault handler (the server logs it), never allowed to break the publisher's loop.
/// </summary>
internal sealed class InternalSubscriber(InternalMessageHandler handler, Action<Exception> onFault) : ISubscriber
{
    public DeliveryOutcome Deliver(Subscription sub, ref RoutedMessage msg, DeliveryBatch batch)
    {
        if (sub.Closed) return DeliveryOutcome.Skipped;
        Interlocked.Increment(ref sub.Delivered);
        try
        {
            handler(sub, new InternalMessage(ref msg, batch));
        }
        catch (Exception ex)
        {
            onFault(ex);
        }
        return DeliveryOutcome.Delivered;
    }
}
