using System.Buffers;
using System.Text;
using NatsBroker.Routing;
using NatsBroker.Subscriptions;
using Xunit;

namespace NatsBroker.Tests.Routing;

/// <summary>The router's route rules (routes.md 5.1, 5.2) without sockets: one RMSG per route, queue names, local
/// preference for a routed queue message and its fairness among local members.</summary>
public sealed class RouterRoutesTests
{
    private sealed class FakeRoute : ISubscriber, IRouteTarget, IFlushTarget
    {
        public readonly List<string> Sent = [];
        public DeliveryOutcome Deliver(Subscription sub, ref RoutedMessage msg, DeliveryBatch batch) => DeliveryOutcome.Skipped;
        public bool SendRouted(ref RoutedMessage msg, ReadOnlySpan<byte> account, ReadOnlySpan<byte> queues, DeliveryBatch batch)
        {
            Sent.Add(Encoding.ASCII.GetString(msg.Subject) + "|" + Encoding.ASCII.GetString(queues));
            return false;
        }
        public void Flush(bool inline) { }
    }

    private static Subscription Remote(FakeRoute owner, string subject, string? queue = null, int weight = 1) =>
        new(Encoding.ASCII.GetBytes(subject), queue is null ? null : Encoding.ASCII.GetBytes(queue), "r1"u8.ToArray(), owner)
        {
            Scope = SubscriptionScope.Remote,
            QueueWeight = weight,
        };

    private static readonly ReadOnlySequence<byte> Payload = new("x"u8.ToArray());

    [Fact]
    public void A_local_publish_goes_once_to_a_route_with_the_queue_groups_picked_there()
    {
        var router = new Router(new SubList(), _ => { });
        var route = new FakeRoute();
        router.SubList.Insert(Remote(route, "foo.*"));
        router.SubList.Insert(Remote(route, "foo.>"));
        router.SubList.Insert(Remote(route, "foo.bar", "q", weight: 2));
        var batch = new DeliveryBatch();
        Assert.True(router.Publish(null, "foo.bar"u8, default, -1, Payload, null, batch));
        Assert.Equal(["foo.bar|q"], route.Sent);
    }

    [Fact]
    public void A_routed_queue_message_prefers_local_members_and_spreads_evenly_among_them()
    {
        var router = new Router(new SubList(), _ => { });
        var from = new FakeRoute();
        var other = new FakeRoute();
        // Remote members first in the group, as the SubList may order them: the pick must not favour the local
        // member that follows them (the 1:3 split the cluster bench found).
        router.SubList.Insert(Remote(other, "work", "q", weight: 3));
        int a = 0, b = 0;
        router.SubscribeInternal("work", "q", (Subscription _, in InternalMessage _) => a++);
        router.SubscribeInternal("work", "q", (Subscription _, in InternalMessage _) => b++);
        var batch = new DeliveryBatch();
        for (int i = 0; i < 4000; i++) router.PublishFromRoute(from, "work"u8, default, -1, Payload, "q"u8, new SubjectResultCache(), batch);
        Assert.Empty(other.Sent);
        Assert.Equal(4000, a + b);
        Assert.InRange(a, 1600, 2400);
    }

    [Fact]
    public void Without_a_local_member_a_routed_queue_message_takes_a_second_hop_but_never_back()
    {
        var router = new Router(new SubList(), _ => { });
        var from = new FakeRoute();
        var other = new FakeRoute();
        router.SubList.Insert(Remote(from, "work", "q"));
        router.SubList.Insert(Remote(other, "work", "q"));
        var batch = new DeliveryBatch();
        router.PublishFromRoute(from, "work"u8, default, -1, Payload, "q"u8, new SubjectResultCache(), batch);
        Assert.Empty(from.Sent);
        Assert.Equal(["work|q"], other.Sent);
        // No queue names in the line: no queue member at all, and plain remote interest is never served from a route.
        router.SubList.Insert(Remote(other, "plain"));
        router.PublishFromRoute(from, "plain"u8, default, -1, Payload, default, new SubjectResultCache(), batch);
        Assert.Single(other.Sent);
    }
}
