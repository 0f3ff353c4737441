using System.Security.Cryptography;
using System.Text;
using Microsoft.Extensions.Primitives;
using NATS.Client.Core;
using Xunit.Abstractions;
using static NatsBroker.Tests.Cluster.ClusterClients;

namespace NatsBroker.Tests.Cluster;

/// <summary>
/// Messaging across the nodes of a mixed cluster (docs/design/routes.md section 7, items 4-6), each scenario over
/// the topologies of <see cref="Topologies.All"/> on one meshed cluster per topology (<see cref="ClusterFixture"/>),
/// clients of NATS.Net on different nodes. Interest is awaited with probes, completeness with fences
/// (<see cref="Recorder"/>): no fixed sleeps. The "Go214,Go214,Go29" cases need no code of ours and prove the harness.
/// </summary>
[Collection("Cluster")]
public sealed class MixedClusterTests(ITestOutputHelper output, ClusterFixture fixture) : IClassFixture<ClusterFixture>
{
    private async Task<TestCluster> ClusterAsync(string topology)
    {
        var kinds = Topologies.Require(topology, output);
        var cluster = await fixture.GetAsync(topology, kinds);
        // Still whole: an earlier test of the class must not have broken it (and the log shows the routes).
        var routez = await cluster.WaitForMeshAsync();
        foreach (var node in cluster.Nodes)
        {
            output.WriteLine($"{node}: {routez[node.Index]?.Summary()}");
        }

        return cluster;
    }

    /// <summary>
    /// <c>foo.*</c> on n1 and <c>foo.&gt;</c> on n2, publishers on n3 and n1: each subscription gets exactly the
    /// subjects its wildcard matches, with the 16 KB payload byte for byte and the headers (HMSG across the route,
    /// routes.md 5.3), and nothing for a subject nobody matches.
    /// </summary>
    [SkippableTheory, MemberData(nameof(Topologies.All), MemberType = typeof(Topologies))]
    public async Task Wildcards_headers_and_16KB_payloads_cross_the_cluster(string topology)
    {
        var cluster = await ClusterAsync(topology);
        var p = Prefix("wild");
        await using var c1 = await ConnectAsync(cluster[0], "sub@n1");
        await using var c2 = await ConnectAsync(cluster[1], "sub@n2");
        await using var c3 = await ConnectAsync(cluster[2], "pub@n3");
        await using var star = await Recorder.SubscribeAsync(c1, p + ".foo.*", "foo.* on n1");
        await using var tail = await Recorder.SubscribeAsync(c2, p + ".foo.>", "foo.> on n2");
        await Interest.WaitAsync(c3, p + ".foo.probe", star, tail);
        await Interest.WaitAsync(c1, p + ".foo.probe", star, tail);

        var big = RandomNumberGenerator.GetBytes(16 * 1024);
        var deep = RandomNumberGenerator.GetBytes(16 * 1024);
        await c3.PublishAsync(p + ".foo.bar", big, headers: new NatsHeaders { ["X-Origin"] = "n3", ["X-Multi"] = new StringValues(["a", "b"]) });
        await c3.PublishAsync(p + ".foo.bar.baz", deep);
        await c3.PublishAsync(p + ".bar", big);
        await c1.PublishAsync(p + ".foo.zap", "from n1"u8.ToArray(), headers: new NatsHeaders { ["X-Origin"] = "n1" });
        var f3 = await Fence.SendAsync(c3, p + ".foo.fence");
        var f1 = await Fence.SendAsync(c1, p + ".foo.fence");

        var gotStar = await star.UntilFencesAsync(f3, f1);
        var gotTail = await tail.UntilFencesAsync(f3, f1);
        Assert.Equal([p + ".foo.bar", p + ".foo.zap"], gotStar.Select(m => m.Subject).Order(StringComparer.Ordinal));
        Assert.Equal([p + ".foo.bar", p + ".foo.bar.baz", p + ".foo.zap"], gotTail.Select(m => m.Subject).Order(StringComparer.Ordinal));
        foreach (var got in new[] { gotStar, gotTail })
        {
            var bar = got.Single(m => m.Subject == p + ".foo.bar");
            Assert.Equal(big, bar.Data);
            Assert.Equal("n3", bar.Headers?["X-Origin"].ToString());
            Assert.Equal("a,b", bar.Headers?["X-Multi"].ToString());
            var zap = got.Single(m => m.Subject == p + ".foo.zap");
            Assert.Equal("from n1", Encoding.UTF8.GetString(zap.Data!));
            Assert.Equal("n1", zap.Headers?["X-Origin"].ToString());
        }

        Assert.Equal(deep, gotTail.Single(m => m.Subject == p + ".foo.bar.baz").Data);
    }

    /// <summary>
    /// Subscriptions that exist before any route does reach the other nodes in the initial interest exchange
    /// (route.go:sendSubsToRoute, routes.md 4.1), not only as updates: n1 subscribes alone, then n2 and n3 start.
    /// </summary>
    [SkippableTheory, MemberData(nameof(Topologies.All), MemberType = typeof(Topologies))]
    public async Task Subscriptions_made_before_the_mesh_forms_reach_nodes_that_join_later(string topology)
    {
        var kinds = Topologies.Require(topology, output);
        await using var cluster = TestCluster.Create(kinds, RouteLayout.Full, output);
        await cluster[0].StartAsync();
        var p = Prefix("early");
        await using var c1 = await ConnectAsync(cluster[0], "sub@n1");
        await using var star = await Recorder.SubscribeAsync(c1, p + ".foo.*", "foo.* on n1");
        await using var tail = await Recorder.SubscribeAsync(c1, p + ".foo.>", "foo.> on n1");
        await c1.PingAsync();

        await cluster.StartAsync();
        await cluster.WaitForMeshAsync();
        await using var c2 = await ConnectAsync(cluster[1], "pub@n2");
        await using var c3 = await ConnectAsync(cluster[2], "pub@n3");
        await Interest.WaitAsync(c2, p + ".foo.probe", star, tail);
        await Interest.WaitAsync(c3, p + ".foo.probe", star, tail);

        var payload = RandomNumberGenerator.GetBytes(16 * 1024);
        await c2.PublishAsync(p + ".foo.a", payload, headers: new NatsHeaders { ["X-Origin"] = "n2" });
        await c3.PublishAsync(p + ".foo.b.c", payload);
        var f2 = await Fence.SendAsync(c2, p + ".foo.fence");
        var f3 = await Fence.SendAsync(c3, p + ".foo.fence");

        var gotStar = await star.UntilFencesAsync(f2, f3);
        var gotTail = await tail.UntilFencesAsync(f2, f3);
        Assert.Equal([p + ".foo.a"], gotStar.Select(m => m.Subject));
        Assert.Equal([p + ".foo.a", p + ".foo.b.c"], gotTail.Select(m => m.Subject).Order(StringComparer.Ordinal));
        Assert.All(gotTail, m => Assert.Equal(payload, m.Data));
        Assert.Equal("n2", gotStar[0].Headers?["X-Origin"].ToString());
    }

    /// <summary>
    /// Queue group <c>workers</c> with members 2/1/1 on n1/n2/n3 and 1000 messages from a publisher on each node:
    /// every message reaches exactly one member, and the choice is weighted random cluster-wide (a remote queue
    /// subscription counts its weight, sublist.go:addNodeToResults; no local preference for a client publisher,
    /// observed, routes.md 5.2), so every member gets well over 5%. Each member's connection also subscribes a probe
    /// subject after its queue subscription: the probe's interest vouches for the queue interest, its fence for the
    /// member's share.
    /// </summary>
    [SkippableTheory, MemberData(nameof(Topologies.All), MemberType = typeof(Topologies))]
    public async Task Queue_members_2_1_1_get_each_message_exactly_once(string topology)
    {
        const int PerPublisher = 1000;
        var cluster = await ClusterAsync(topology);
        var p = Prefix("queue");
        var members = new List<(string Name, NatsConnection Connection, Recorder Queue, Recorder Probe)>();
        var publishers = new List<NatsConnection>();
        try
        {
            foreach (var (node, name) in new[] { (0, "m1a"), (0, "m1b"), (1, "m2"), (2, "m3") })
            {
                var c = await ConnectAsync(cluster[node], name + "@" + cluster[node].Name);
                var q = await Recorder.SubscribeAsync(c, p + ".work", name, queueGroup: "workers");
                var probe = await Recorder.SubscribeAsync(c, p + ".probe." + name, name + " probe");
                members.Add((name, c, q, probe));
            }

            for (var i = 0; i < cluster.Count; i++)
            {
                publishers.Add(await ConnectAsync(cluster[i], "pub@" + cluster[i].Name));
            }

            foreach (var pub in publishers)
            {
                foreach (var m in members)
                {
                    await Interest.WaitAsync(pub, p + ".probe." + m.Name, m.Probe);
                }
            }

            await Task.WhenAll(publishers.Select((pub, i) => Task.Run(async () =>
            {
                for (var n = 0; n < PerPublisher; n++)
                {
                    await pub.PublishAsync(p + ".work", Encoding.ASCII.GetBytes($"{i}:{n}"));
                }
            })));

            var got = new Dictionary<string, List<string>>();
            foreach (var m in members)
            {
                var fences = new List<string>();
                foreach (var pub in publishers)
                {
                    fences.Add(await Fence.SendAsync(pub, p + ".probe." + m.Name));
                }

                await m.Probe.UntilFencesAsync([.. fences]);
                // The fences came after every queue message sent to this member's node, on the same connection.
                got[m.Name] = m.Queue.Drain().Select(x => Encoding.ASCII.GetString(x.Data!)).ToList();
            }

            var all = got.Values.SelectMany(v => v).ToList();
            var shares = string.Join(", ", got.Select(g => $"{g.Key} {g.Value.Count}"));
            output.WriteLine($"shares: {shares}");
            Assert.True(all.Count == cluster.Count * PerPublisher && all.Distinct().Count() == all.Count,
                $"expected {cluster.Count * PerPublisher} distinct deliveries, got {all.Count} ({all.Distinct().Count()} distinct): {shares}");
            Assert.All(got, g => Assert.True(g.Value.Count > all.Count / 20, $"{g.Key} got {g.Value.Count} of {all.Count} (<= 5%): {shares}"));
        }
        finally
        {
            foreach (var m in members)
            {
                await m.Queue.DisposeAsync();
                await m.Probe.DisposeAsync();
                await m.Connection.DisposeAsync();
            }

            foreach (var pub in publishers)
            {
                await pub.DisposeAsync();
            }
        }
    }

    /// <summary>
    /// A responder on n2 answers requesters on n1 and n3 (the requests and the replies both cross a route, the
    /// reply through the requester's inbox interest, routes.md 5.3), headers included; a request nobody in the
    /// cluster listens to ends in no responders (503, NatsNoRespondersException) on every node.
    /// </summary>
    [SkippableTheory, MemberData(nameof(Topologies.All), MemberType = typeof(Topologies))]
    public async Task Request_reply_crosses_nodes_and_no_responders_anywhere_is_503(string topology)
    {
        var cluster = await ClusterAsync(topology);
        var p = Prefix("req");
        await using var responder = await ConnectAsync(cluster[1], "responder@n2");
        await using var sub = await responder.SubscribeCoreAsync<byte[]>(p + ".svc");
        var serving = Task.Run(async () =>
        {
            await foreach (var msg in sub.Msgs.ReadAllAsync())
            {
                await msg.ReplyAsync(Encoding.UTF8.GetBytes("re:" + Encoding.UTF8.GetString(msg.Data ?? [])),
                    headers: new NatsHeaders { ["X-Responder"] = "n2", ["X-Echo"] = msg.Headers?["X-Req"] ?? "" });
            }
        });
        await using var r1 = await ConnectAsync(cluster[0], "requester@n1");
        await using var r3 = await ConnectAsync(cluster[2], "requester@n3");
        await using var r2 = await ConnectAsync(cluster[1], "requester@n2");

        foreach (var requester in new[] { r1, r3 })
        {
            await ReachableAsync(requester, p + ".svc");
            for (var i = 0; i < 20; i++)
            {
                var id = $"{requester.Opts.Name}-{i}";
                var reply = await requester.RequestAsync<byte[], byte[]>(p + ".svc", Encoding.UTF8.GetBytes(id), headers: new NatsHeaders { ["X-Req"] = id });
                Assert.Equal("re:" + id, Encoding.UTF8.GetString(reply.Data!));
                Assert.Equal("n2", reply.Headers?["X-Responder"].ToString());
                Assert.Equal(id, reply.Headers?["X-Echo"].ToString());
            }
        }

        foreach (var requester in new[] { r1, r2, r3 })
        {
            await Assert.ThrowsAsync<NatsNoRespondersException>(async () =>
                await requester.RequestAsync<byte[], byte[]>(p + ".nobody", "anyone?"u8.ToArray()));
        }

        await sub.UnsubscribeAsync();
        await serving.WaitAsync(Wait);
    }

    /// <summary>
    /// Retries a request until it is answered: until then the service's interest has not reached the requester's
    /// node (503) or the requester's inbox interest has not reached the service's node (the reply is dropped: timeout).
    /// </summary>
    private static async Task ReachableAsync(NatsConnection requester, string subject)
    {
        var deadline = DateTime.UtcNow + Wait;
        while (true)
        {
            try
            {
                await requester.RequestAsync<byte[], byte[]>(subject, "ping"u8.ToArray(), replyOpts: new NatsSubOpts { Timeout = TimeSpan.FromMilliseconds(500) });
                return;
            }
            catch (NatsException e) when (e is NatsNoRespondersException or NatsNoReplyException && DateTime.UtcNow < deadline)
            {
                await Task.Delay(25);
            }
        }
    }

    /// <summary>
    /// After UNSUB on n1 nothing more reaches that client, while a second subscriber on n2 still gets every message;
    /// once both left, a request from n3 is answered 503 at once: n3 dropped both nodes' interest (RS- crossed the
    /// routes, route.go:updateRouteSubscriptionMap; a stale remote interest would swallow the request instead:
    /// "remote interest counts as delivered", routes.md 5.3). The n1 client is raw: NATS.Net would drop messages
    /// of an unsubscribed sid itself.
    /// </summary>
    [SkippableTheory, MemberData(nameof(Topologies.All), MemberType = typeof(Topologies))]
    public async Task Unsubscribe_stops_traffic_across_nodes(string topology)
    {
        var cluster = await ClusterAsync(topology);
        var p = Prefix("unsub");
        await using var raw = await RawSubscriber.ConnectAsync(cluster[0]);
        await raw.SendAsync($"SUB {p}.u 1", $"SUB {p}.uf 2");
        await using var c2 = await ConnectAsync(cluster[1], "sub@n2");
        await using var pub = await ConnectAsync(cluster[2], "pub@n3");
        var control = await Recorder.SubscribeAsync(c2, p + ".u", "control on n2");
        await raw.WaitForInterestAsync(pub, p + ".uf", "2");
        await Interest.WaitAsync(pub, p + ".u", control);

        await pub.PublishAsync(p + ".u", "before");
        var rawFence = await RawSubscriber.SendFenceAsync(pub, p + ".uf");
        var controlFence = await Fence.SendAsync(pub, p + ".u");
        var before = await raw.UntilMarkersAsync(rawFence);
        Assert.Equal(["1:before"], before.Select(m => m.Sid + ":" + m.PayloadText));
        Assert.Equal(["before"], (await control.UntilFencesAsync(controlFence)).Select(m => Encoding.UTF8.GetString(m.Data!)));

        // A new subscription after the UNSUB: once its interest is at n3, so is the UNSUB's RS-.
        await raw.SendAsync("UNSUB 1", $"SUB {p}.ug 3");
        await raw.WaitForInterestAsync(pub, p + ".ug", "3");
        for (var i = 0; i < 10; i++)
        {
            await pub.PublishAsync(p + ".u", "after-" + i);
        }

        rawFence = await RawSubscriber.SendFenceAsync(pub, p + ".ug");
        controlFence = await Fence.SendAsync(pub, p + ".u");
        var after = await raw.UntilMarkersAsync(rawFence);
        Assert.True(after.Count == 0, "after UNSUB the n1 client still got: " + RawSubscriber.Describe(after));
        Assert.Equal(10, (await control.UntilFencesAsync(controlFence)).Count);

        await control.DisposeAsync();
        await NoRespondersEventuallyAsync(pub, p + ".u");
    }

    /// <summary>
    /// <c>UNSUB 1 5</c> on n1 and 20 messages from each of n2 and n3 at once: exactly 5 delivered. The max never
    /// crosses a route; n1 counts, drops what was already in flight from the other nodes, and sends the RS- at the
    /// max (routes.md 4.4), after which n2 and n3 answer a request on the subject with 503.
    /// </summary>
    [SkippableTheory, MemberData(nameof(Topologies.All), MemberType = typeof(Topologies))]
    public async Task Auto_unsubscribe_max_5_with_publishers_on_two_nodes_delivers_exactly_5(string topology)
    {
        var cluster = await ClusterAsync(topology);
        var p = Prefix("max");
        await using var raw = await RawSubscriber.ConnectAsync(cluster[0]);
        await raw.SendAsync($"SUB {p}.a 1", "UNSUB 1 5", $"SUB {p}.af 2");
        await using var pub2 = await ConnectAsync(cluster[1], "pub@n2");
        await using var pub3 = await ConnectAsync(cluster[2], "pub@n3");
        await raw.WaitForInterestAsync(pub2, p + ".af", "2");
        await raw.WaitForInterestAsync(pub3, p + ".af", "2");

        await Task.WhenAll(new[] { pub2, pub3 }.Select(pub => Task.Run(async () =>
        {
            for (var i = 0; i < 20; i++)
            {
                await pub.PublishAsync(p + ".a", $"{pub.Opts.Name}-{i}");
            }
        })));
        var f2 = await RawSubscriber.SendFenceAsync(pub2, p + ".af");
        var f3 = await RawSubscriber.SendFenceAsync(pub3, p + ".af");
        var got = await raw.UntilMarkersAsync(f2, f3);
        Assert.True(got.Count == 5 && got.All(m => m.Sid == "1"), "expected exactly 5 on sid 1, got: " + RawSubscriber.Describe(got));

        await NoRespondersEventuallyAsync(pub2, p + ".a");
        await NoRespondersEventuallyAsync(pub3, p + ".a");
    }

    /// <summary>Requests until the answer is 503: the publisher's node knows no interest anywhere (a timeout means it still routes the request somewhere).</summary>
    private static async Task NoRespondersEventuallyAsync(NatsConnection requester, string subject)
    {
        var deadline = DateTime.UtcNow + Wait;
        while (true)
        {
            try
            {
                await requester.RequestAsync<byte[], byte[]>(subject, "anyone?"u8.ToArray(), replyOpts: new NatsSubOpts { Timeout = TimeSpan.FromMilliseconds(300) });
                Assert.Fail($"{subject}: a reply came, though nobody answers");
            }
            catch (NatsNoRespondersException)
            {
                return;
            }
            catch (NatsNoReplyException) when (DateTime.UtcNow < deadline)
            {
                // Interest still believed somewhere (the RS- not processed yet): try again.
            }
            catch (NatsNoReplyException e)
            {
                throw new TimeoutException($"{requester.Opts.Name}: a request on {subject} still went somewhere after {Wait.TotalSeconds:0} s (stale remote interest)", e);
            }
        }
    }
}
