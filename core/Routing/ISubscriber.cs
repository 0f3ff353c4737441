using NatsBroker.Subscriptions;

namespace NatsBroker.Routing;

/// <summary>What a delivery attempt did, as the router needs to know it.</summary>
public enum DeliveryOutcome
{
    /// <summary>Not delivered (closed, echo off, denied, auto-unsubscribe limit reached); a queue group tries another member.</summary>
    Skipped,
    /// <summary>Delivered; nothing left to do.</summary>
    Delivered,
    /// <summary>Delivered into an outbound buffer that must be flushed at the end of the publisher's batch.</summary>
    DeliveredNeedsFlush,
}

/// <summary>
/// Whatever owns subscriptions and receives messages: a client connection (bytes into its outbound buffer), or an
/// internal subscriber (a callback: JetStream's API, stream ingest, system services), as nats-server's
/// subscriptions carry either a client or an internal <c>icb</c> callback.
/// </summary>
/// <remarks>
/// <see cref="Deliver"/> runs on the publisher's thread, with no router lock held. The subscriber does all of its
/// accounting (auto-unsubscribe max, pending bytes, slow consumer, statistics) under its own lock; the router
/// never touches a subscriber's state.
/// </remarks>
public interface ISubscriber
{
    /// <param name="sub">One of this subscriber's subscriptions that matched.</param>
    /// <param name="msg">The message being routed (valid only during the call: copy what you keep).</param>
    /// <param name="batch">The publisher's batch: back-pressure hints go here.</param>
    DeliveryOutcome Deliver(Subscription sub, ref RoutedMessage msg, DeliveryBatch batch);
}

/// <summary>A subscriber whose delivered bytes are written out once per publisher batch.</summary>
public interface IFlushTarget
{
    /// <summary>
    /// Write what is queued. <paramref name="inline"/>: on the caller's thread now (nats-server's flushClients
    /// within its budget); otherwise hand the write to the target's own writer on the thread pool.
    /// </summary>
    void Flush(bool inline);
}

/// <summary>Who published a message: a client connection, or null for the server itself.</summary>
public interface IPublisher
{
    /// <summary>The client id (cid) as /connz shows it.</summary>
    ulong Id { get; }
}
