namespace NatsBroker.Routing;

/// <summary>
/// A route connection as the router sees it: the owner of remote subscriptions, to which a message goes as one
/// RMSG/HMSG per publish however many of its subscriptions matched, carrying the queue groups picked on its side
/// (client.go processMsgResults, addSubToRouteTargets).
/// </summary>
public interface IRouteTarget
{
    /// <summary>
    /// Appends the message to this route's outbound buffer (on the publisher's thread, no router lock held).
    /// <paramref name="queues"/>: the queue names picked for this route, blank-separated, empty for none.
    /// Returns true when the route must be flushed at the end of the publisher's batch.
    /// </summary>
    bool SendRouted(ref RoutedMessage msg, ReadOnlySpan<byte> account, ReadOnlySpan<byte> queues, DeliveryBatch batch);
}
