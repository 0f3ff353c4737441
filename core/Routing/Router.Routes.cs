using System.Buffers;
using System.Runtime.CompilerServices;
using NatsBroker.Protocol;
using NatsBroker.Subscriptions;

namespace NatsBroker.Routing;

public sealed partial class Router
{
    /// <summary>
    /// Routes a message that arrived from a route (RMSG/HMSG), with the one-hop rule of route.go
    /// processInboundRoutedMsg and client.go processMsgResults: plain subscriptions owned by routes are skipped, so it
    /// reaches only this node's subscribers; queue groups are served only when the line names them
    /// (<paramref name="queues"/>), a local member preferred, and only when none can take it is it sent on to a
    /// member on another route (the second hop nats-server also makes, routes.md 5.2).
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    public void PublishFromRoute(IRouteTarget from, ReadOnlySpan<byte> subject, ReadOnlySpan<byte> reply, int headerSize,
        in ReadOnlySequence<byte> payload, ReadOnlySpan<byte> queues, SubjectResultCache l1, DeliveryBatch batch)
    {
        var result = SubList.Match(subject, l1);
        if (result.IsEmpty || !TryEnterNested()) return;
        try
        {
            var msg = new RoutedMessage(null, subject, subject, reply, headerSize, payload);
            DeliverToLocalPlain(result.Plain, ref msg, batch);
            if (queues.IsEmpty || result.Queues.Length == 0) return;
            RouteFanout? routes = null;
            foreach (var name in new QueueNameEnumerator(queues))
            {
                var members = FindGroup(result.Queues, name);
                if (members is not null) DeliverToQueueLocally(members, from, ref msg, batch, ref routes);
            }
            if (routes is { Count: > 0 }) routes.Send(ref msg, AccountName, batch);
        }
        finally
        {
            t_depth--;
        }
    }

    /// <summary>Every plain subscriber on this node; remote interest is skipped (one hop).</summary>
    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    private static void DeliverToLocalPlain(Subscription[] plain, ref RoutedMessage msg, DeliveryBatch batch)
    {
        for (int i = 0; i < plain.Length; i++)
        {
            var sub = plain[i];
            if (sub.Closed || sub.IsRemote) continue;
            Hand(sub, ref msg, batch);
        }
    }

    private static Subscription[]? FindGroup(Subscription[][] groups, ReadOnlySpan<byte> name)
    {
        for (int i = 0; i < groups.Length; i++)
        {
            if (groups[i][0].Queue.AsSpan().SequenceEqual(name)) return groups[i];
        }
        return null;
    }

    /// <summary>
    /// One local member, picked at random among the local members only (client.go processMsgResults sets route
    /// and leaf members aside first), then the next local ones if it takes nothing; a member on another route (not
    /// the one the message came from) only as the fallback.
    /// </summary>
    private void DeliverToQueueLocally(Subscription[] members, IRouteTarget? from, ref RoutedMessage msg, DeliveryBatch batch, ref RouteFanout? routes, bool allowFallback = true)
    {
        int locals = 0;
        Subscription? fallback = null;
        for (int i = 0; i < members.Length; i++)
        {
            var sub = members[i];
            if (!sub.IsRemote) locals++;
            else if (fallback is null && !sub.Closed && !ReferenceEquals(sub.Owner, from)) fallback = sub;
        }
        if (locals > 0)
        {
            // The k-th local member, k random; then the following local members in order.
            int k = (int)(NextRandom() % (uint)locals);
            int start = 0;
            for (int i = 0, seen = 0; i < members.Length; i++)
            {
                if (members[i].IsRemote) continue;
                if (seen++ == k)
                {
                    start = i;
                    break;
                }
            }
            for (int n = 0; n < members.Length; n++)
            {
                var sub = members[(start + n) % members.Length];
                if (sub.IsRemote || sub.Closed) continue;
                if (Hand(sub, ref msg, batch) != DeliveryOutcome.Skipped) return;
            }
        }
        if (fallback is not null && allowFallback) (routes ??= RouteFanout.For(t_depth)).AddQueue((IRouteTarget)fallback.Owner, fallback.Queue);
    }

    /// <summary>
    /// A publish that stays on this node: a stream import's mapped message (core/Accounts/StreamImportForwarder.cs).
    /// Every node maps an import for its own subscribers from the exporter's interest, which crosses routes
    /// (nats-server shadows each client subscription, client.go addShadowSubscriptions), so sending the mapped copy
    /// on to routes as well would deliver it twice. Plain local subscribers get it, and one local member of each
    /// queue group. Returns false when nothing matched.
    /// </summary>
    public bool PublishLocal(IPublisher? origin, ReadOnlySpan<byte> routeSubject, ReadOnlySpan<byte> subject, ReadOnlySpan<byte> reply, int headerSize,
        in ReadOnlySequence<byte> payload, DeliveryBatch batch)
    {
        var result = SubList.Match(routeSubject);
        if (result.IsEmpty) return false;
        if (!TryEnterNested()) return true;
        try
        {
            var msg = new RoutedMessage(origin, routeSubject, subject, reply, headerSize, payload);
            DeliverToLocalPlain(result.Plain, ref msg, batch);
            RouteFanout? none = null;
            var queues = result.Queues;
            for (int q = 0; q < queues.Length; q++) DeliverToQueueLocally(queues[q], null, ref msg, batch, ref none, allowFallback: false);
        }
        finally
        {
            t_depth--;
        }
        return true;
    }
}
