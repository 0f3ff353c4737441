using System.Text;
using NatsBroker.Server;

namespace NatsBroker.Cluster;

public sealed partial class RouteConnection
{
    /// <summary>
    /// The peer's subscriptions as /routez <c>?subs=detail</c> lists them (monitor.go newSubsDetailList →
    /// newClientSubDetail): subject, queue, the sid nats-server gives a remote subscription, messages, and the route's
    /// id as <c>cid</c>. The sid is the subscription's key, <c>account subject [queue]</c> (route.go processRemoteSub:
    /// the old-style key, without the "R " prefix, which 2.10+ adds only towards peers that announce <c>lnocu</c>; a
    /// stage-1 node never does).
    /// </summary>
    public List<SubscriptionSnapshot> SnapshotRemoteSubscriptionDetails()
    {
        lock (_subsLock)
        {
            var list = new List<SubscriptionSnapshot>(_remoteSubs.Count);
            foreach (var (key, (_, sub)) in _remoteSubs)
            {
                list.Add(new SubscriptionSnapshot(
                    Encoding.UTF8.GetString(sub.Subject), sub.Queue is null ? null : Encoding.UTF8.GetString(sub.Queue),
                    key, Volatile.Read(ref sub.Delivered), sub.MaxMessages, Id));
            }
            return list;
        }
    }
}
