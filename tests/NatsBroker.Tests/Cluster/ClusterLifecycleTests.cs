using System.Globalization;
using System.Text;
using NATS.Client.Core;
using Xunit.Abstractions;
using static NatsBroker.Tests.Cluster.ClusterClients;

namespace NatsBroker.Tests.Cluster;

/// <summary>
/// How a mixed cluster forms and heals (docs/design/routes.md section 7, items 3 and 8): a full mesh from a partial
/// route list (gossip), a node killed under traffic and restarted, a client following INFO <c>connect_urls</c> when
/// its node stops. Each test has a cluster of its own (it changes the route list or stops nodes).
/// </summary>
[Collection("Cluster")]
public sealed class ClusterLifecycleTests(ITestOutputHelper output)
{
    /// <summary>
    /// n3 lists only n2, n2 only n1: n1 and n3 learn of each other from n2's forwarded INFO and one of them dials the
    /// other as an implicit route (route.go:forwardNewRouteInfoToKnownServers, processImplicitRoute; routes.md 2.6).
    /// Each node's /routez then shows the configured routes as solicited and configured on the configuring side and
    /// not configured on the other, and the n1-n3 routes as not configured on either side and solicited by at least
    /// one (both, when both dialled and the duplicate was dropped: route.go:handleDuplicateRoute then marks the kept
    /// connection solicited, observed on 2.14.5). A message from n3 reaches n1 directly (one hop: nothing relays
    /// through n2, routes.md 5.1).
    /// </summary>
    [SkippableTheory, MemberData(nameof(Topologies.All), MemberType = typeof(Topologies))]
    public async Task A_partial_route_list_forms_a_full_mesh_by_gossip(string topology)
    {
        var kinds = Topologies.Require(topology, output);
        await using var cluster = await TestCluster.StartMeshedAsync(kinds, RouteLayout.Chain, output);
        var routez = await cluster.WaitForMeshAsync();
        var byId = cluster.Nodes.ToDictionary(n => n.ServerId!, n => n);
        var problems = new List<string>();
        foreach (var node in cluster.Nodes)
        {
            foreach (var route in routez[node.Index]!.Routes)
            {
                var peer = byId[route.RemoteId];
                // Solicited by the side that lists it; either on the other (a duplicate dropped may have marked it).
                var (solicit, configured) = peer.Index == node.Index - 1 ? (true, true) : ((bool?)null, false);
                if (route.IsConfigured != configured || (solicit is { } s && route.DidSolicit != s))
                {
                    problems.Add($"{node.Name} -> {peer.Name}: did_solicit {route.DidSolicit} is_configured {route.IsConfigured}, "
                        + $"expected did_solicit {(solicit?.ToString() ?? "either")} is_configured {configured}");
                }
            }
        }

        var (first, last) = (cluster[0], cluster[cluster.Count - 1]);
        var firstSolicits = routez[first.Index]!.Routes.Where(r => r.RemoteId == last.ServerId).Select(r => r.DidSolicit).Distinct().ToList();
        var lastSolicits = routez[last.Index]!.Routes.Where(r => r.RemoteId == first.ServerId).Select(r => r.DidSolicit).Distinct().ToList();
        if (!firstSolicits.Contains(true) && !lastSolicits.Contains(true))
        {
            problems.Add($"implicit {first.Name}-{last.Name}: did_solicit false on both sides: nobody dialled it");
        }

        Assert.True(problems.Count == 0, await cluster.DescribeAsync("gossip mesh with unexpected route flags:\n  " + string.Join("\n  ", problems)));

        var p = Prefix("gossip");
        await using var sub = await ConnectAsync(first, "sub@" + first.Name);
        await using var pub = await ConnectAsync(last, "pub@" + last.Name);
        await using var rec = await Recorder.SubscribeAsync(sub, p + ".x", "sub on " + first.Name);
        await Interest.WaitAsync(pub, p + ".x", rec);
        await pub.PublishAsync(p + ".x", "over the implicit route");
        var f = await Fence.SendAsync(pub, p + ".x");
        Assert.Equal(["over the implicit route"], (await rec.UntilFencesAsync(f)).Select(m => Encoding.UTF8.GetString(m.Data!)));
    }

    /// <summary>
    /// A node is killed with SIGKILL while a numbered stream flows between the other two and to it, then restarted
    /// on the same ports (a new server_id); first n1 (ours in the mixed topologies), then n3 (a Go node there).
    /// </summary>
    [SkippableTheory, MemberData(nameof(Topologies.All), MemberType = typeof(Topologies))]
    public async Task A_node_killed_under_traffic_restarts_and_the_mesh_heals(string topology)
    {
        var kinds = Topologies.Require(topology, output);
        await using var cluster = await TestCluster.StartMeshedAsync(kinds, RouteLayout.Full, output);
        await KillUnderTrafficAndRestartAsync(cluster, victim: 0);
        await KillUnderTrafficAndRestartAsync(cluster, victim: cluster.Count - 1);
    }

    /// <summary>
    /// The publisher and a subscriber are on the two other nodes, a second subscriber on the victim. After the kill
    /// the survivors drop the victim's routes (their mesh without it is whole) and the stream goes on; after the
    /// restart the full mesh is back. The survivor's subscriber got every number exactly once and in order (its
    /// route to the publisher's node never broke), and fresh subscriptions on the restarted node and a survivor get
    /// exactly the 200 messages published from both (no duplicate route left delivering twice,
    /// route.go:handleDuplicateRoute; no interest lost in the re-exchange, route.go:sendSubsToRoute).
    /// </summary>
    private async Task KillUnderTrafficAndRestartAsync(TestCluster cluster, int victim)
    {
        var (dead, subNode, pubNode) = (cluster[victim], cluster[(victim + 1) % cluster.Count], cluster[(victim + 2) % cluster.Count]);
        var p = Prefix("kill" + dead.Name);
        await using var survivor = await ConnectAsync(subNode, "sub@" + subNode.Name);
        await using var pub = await ConnectAsync(pubNode, "pub@" + pubNode.Name);
        await using var stream = await Recorder.SubscribeAsync(survivor, p + ".t", "stream on " + subNode.Name);
        await using (var doomed = await ConnectAsync(dead, "sub@" + dead.Name))
        await using (var doomedRec = await Recorder.SubscribeAsync(doomed, p + ".t", "stream on " + dead.Name))
        {
            await Interest.WaitAsync(pub, p + ".t", stream, doomedRec);
            using var stop = new CancellationTokenSource();
            var traffic = Task.Run(async () =>
            {
                long seq = 0;
                while (!stop.IsCancellationRequested)
                {
                    await pub.PublishAsync(p + ".t", seq.ToString(CultureInfo.InvariantCulture));
                    if (++seq % 5 == 0)
                    {
                        await Task.Delay(1);
                    }
                }

                return seq;
            });

            var seen = new List<NatsMsg<byte[]>>();
            seen.AddRange(await stream.UntilCountAsync(100));
            await doomedRec.UntilCountAsync(100);
            var killedPid = dead.Pid;
            dead.Kill();
            output.WriteLine($"killed {dead.Name} (pid {killedPid}) after {stream.OrdinaryCount} messages at {subNode.Name}");
            await cluster.WaitForMeshAsync(allRunning: false);
            seen.AddRange(await stream.UntilCountAsync(stream.OrdinaryCount + 100));

            await dead.StartAsync();
            await cluster.WaitForMeshAsync();
            output.WriteLine($"{dead.Name} restarted as {dead.ServerId}; mesh healed");
            seen.AddRange(await stream.UntilCountAsync(stream.OrdinaryCount + 100));
            await stop.CancelAsync();
            var published = await traffic.WaitAsync(Wait);
            var f = await Fence.SendAsync(pub, p + ".t");
            seen.AddRange(await stream.UntilFencesAsync(f));

            var numbers = seen.Select(m => long.Parse(Encoding.ASCII.GetString(m.Data!), CultureInfo.InvariantCulture)).ToList();
            var firstWrong = numbers.Select((n, i) => (n, i)).FirstOrDefault(x => x.n != x.i, (-1, -1));
            Assert.True(numbers.Count == published && firstWrong.i < 0,
                $"{subNode.Name} got {numbers.Count} of {published} messages from {pubNode.Name}; first out of sequence at index {firstWrong.i} (value {firstWrong.n})");
        }

        // After the heal: both directions through the restarted node, each message exactly once.
        await using var again = await ConnectAsync(dead, "again@" + dead.Name);
        await using var onDead = await Recorder.SubscribeAsync(again, p + ".h", "after heal on " + dead.Name);
        await using var onSurvivor = await Recorder.SubscribeAsync(survivor, p + ".h", "after heal on " + subNode.Name);
        await Interest.WaitAsync(pub, p + ".h", onDead, onSurvivor);
        await Interest.WaitAsync(again, p + ".h", onDead, onSurvivor);
        for (var i = 0; i < 100; i++)
        {
            await pub.PublishAsync(p + ".h", pubNode.Name + "-" + i);
            await again.PublishAsync(p + ".h", dead.Name + "-" + i);
        }

        var fromPub = await Fence.SendAsync(pub, p + ".h");
        var fromDead = await Fence.SendAsync(again, p + ".h");
        foreach (var r in new[] { onDead, onSurvivor })
        {
            var got = (await r.UntilFencesAsync(fromPub, fromDead)).Select(m => Encoding.UTF8.GetString(m.Data!)).ToList();
            Assert.True(got.Count == 200 && got.Distinct().Count() == 200,
                $"{r.Name}: {got.Count} messages, {got.Distinct().Count()} distinct (expected 200 once each)");
        }
    }

    /// <summary>
    /// A client given only n1's URL learns the other nodes from INFO <c>connect_urls</c> (a peer's client URLs come
    /// with its route INFO and are pushed to clients, server.go:updateServerINFOAndSendINFOToClients; routes.md 2.7);
    /// when n1 stops, NATS.Net reconnects to one of them, re-subscribes, and messages from the third node reach it.
    /// </summary>
    [SkippableTheory, MemberData(nameof(Topologies.All), MemberType = typeof(Topologies))]
    public async Task A_client_follows_connect_urls_when_its_node_stops(string topology)
    {
        var kinds = Topologies.Require(topology, output);
        await using var cluster = await TestCluster.StartMeshedAsync(kinds, RouteLayout.Full, output);
        await using var client = await ConnectAsync(cluster[0], "follower", o => o with
        {
            MaxReconnectRetry = 200,
            ReconnectWaitMin = TimeSpan.FromMilliseconds(50),
            ReconnectWaitMax = TimeSpan.FromMilliseconds(200),
            ReconnectJitter = TimeSpan.FromMilliseconds(10),
        });
        var peers = cluster.Nodes.Skip(1).Select(n => n.ConnectUrl).ToList();
        await EventuallyAsync(() => client.ServerInfo?.ClientConnectUrls is { } urls && peers.All(urls.Contains),
            $"connect_urls of n1's INFO to include the peers {string.Join(", ", peers)} "
            + $"(now: {string.Join(", ", client.ServerInfo?.ClientConnectUrls ?? [])})");
        output.WriteLine("connect_urls: " + string.Join(", ", client.ServerInfo!.ClientConnectUrls!));

        var p = Prefix("follow");
        await using var rec = await Recorder.SubscribeAsync(client, p + ".r", "follower");
        await cluster[0].StopAsync();
        await EventuallyAsync(() => client.ConnectionState == NatsConnectionState.Open && client.ServerInfo?.Port != cluster[0].ClientPort,
            $"the client to reconnect to another node (state {client.ConnectionState}, server port {client.ServerInfo?.Port})", TimeSpan.FromSeconds(15));
        var now = cluster.Nodes.Single(n => n.ClientPort == client.ServerInfo!.Port);
        var other = cluster.Nodes.Single(n => n.IsRunning && n != now);
        output.WriteLine($"reconnected to {now.Name}; publishing from {other.Name}");

        await using var pub = await ConnectAsync(other, "pub@" + other.Name);
        await Interest.WaitAsync(pub, p + ".r", rec);
        for (var i = 0; i < 10; i++)
        {
            await pub.PublishAsync(p + ".r", "m" + i);
        }

        var f = await Fence.SendAsync(pub, p + ".r");
        Assert.Equal(Enumerable.Range(0, 10).Select(i => "m" + i), (await rec.UntilFencesAsync(f)).Select(m => Encoding.UTF8.GetString(m.Data!)));
    }
}
