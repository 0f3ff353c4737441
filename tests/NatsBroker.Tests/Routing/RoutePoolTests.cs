using System.Text.Json;
using NATS.Client.Core;
using NatsBroker.Server;
using NatsBroker.Tests.Infrastructure;
using Xunit;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Routing;

/// <summary>
/// Route pooling (2.10+, routes.md section 3): pool_size connections per peer, accounts on the slot nats-server
/// computes, the system account pinned by default, mixed pool sizes, and one connection towards a 2.9 peer.
/// </summary>
public sealed class RoutePoolTests(ITestOutputHelper output)
{
    [Theory]
    // Values nats-server computes (route.go computeRoutePoolIdx), routes.md section 3.
    [InlineData(3, "$G", 2)]
    [InlineData(5, "$G", 3)]
    [InlineData(3, "APP", 1)]
    [InlineData(5, "APP", 4)]
    [InlineData(3, "$SYS", 0)]
    [InlineData(1, "APP", 0)]
    public async Task Accounts_take_the_pool_slot_nats_server_computes(int poolSize, string account, int expected)
    {
        await using var node = RouteTestNodes.StartOurs($"cluster {{ name: p, listen: 127.0.0.1:{TestPorts.Next()}, pool_size: {poolSize} }}\n");
        Assert.Equal(expected, node.Cluster!.PoolIndexOf(account));
    }

    private static async Task<List<JsonElement>> Routes(HttpClient http, int port)
    {
        using var doc = JsonDocument.Parse(await http.GetStringAsync($"http://127.0.0.1:{port}/routez"));
        return [.. doc.RootElement.GetProperty("routes").EnumerateArray().Select(e => e.Clone())];
    }

    [Fact]
    public async Task With_nats_server_2_14_the_pool_has_three_connections_and_the_pinned_system_account()
    {
        string binary = Prerequisites.RequireOracle214(output);
        int goRoute = TestPorts.Next(), ourRoute = TestPorts.Next(), goHttp = TestPorts.Next();
        await using var go = await ServerProcess.StartAsync(ServerKind.Go, new ServerStartOptions
        {
            GoBinary = binary,
            Config = $"server_name: GO\nhttp: 127.0.0.1:{goHttp}\n" + RouteTestNodes.ClusterBlock("pool", goRoute, ourRoute),
        }, output);
        await using var ours = RouteTestNodes.StartOurs("server_name: OURS\n" + RouteTestNodes.ClusterBlock("pool", ourRoute, goRoute));
        using var http = new HttpClient();
        List<JsonElement> goRoutes = [];
        var deadline = DateTime.UtcNow.AddSeconds(15);
        while (DateTime.UtcNow < deadline)
        {
            goRoutes = await Routes(http, goHttp);
            if (goRoutes.Count == 4 && ours.Cluster!.Registered.Count == 4) break;
            await Task.Delay(50);
        }
        output.WriteLine(string.Join(", ", goRoutes.Select(r => r.TryGetProperty("account", out var a) ? a.GetString() : "pool")));
        Assert.Equal(4, goRoutes.Count);
        Assert.Single(goRoutes, r => r.TryGetProperty("account", out var a) && a.GetString() == "$SYS");
        Assert.Equal(4, ours.Cluster!.Registered.Count);
        Assert.Equal(["$SYS"], ours.Cluster.Registered.Select(r => r.PinnedAccountName).OfType<string>().ToArray());
        Assert.Equal([0, 1, 2], ours.Cluster.Registered.Where(r => r.PinnedAccountName is null).Select(r => r.PoolIndex).Order().ToArray());

        // $G traffic on its slot both ways.
        await using var cg = new NatsConnection(new NatsOpts { Url = go.Url });
        await using var co = new NatsConnection(new NatsOpts { Url = $"nats://127.0.0.1:{ours.ClientPort}" });
        int got = 0;
        var sub = await cg.SubscribeCoreAsync<string>("pooled");
        var reader = Task.Run(async () => { await foreach (var _ in sub.Msgs.ReadAllAsync()) Interlocked.Increment(ref got); });
        await cg.PingAsync();
        deadline = DateTime.UtcNow.AddSeconds(10);
        while (Volatile.Read(ref got) == 0 && DateTime.UtcNow < deadline)
        {
            await co.PublishAsync("pooled", "x");
            await Task.Delay(20);
        }
        Assert.True(Volatile.Read(ref got) > 0);
        await sub.UnsubscribeAsync();
    }

    [Fact]
    public async Task Pool_sizes_3_and_5_meet_at_5_slots_and_every_account_crosses()
    {
        const string accounts = "accounts { APP { users [ { user: app, password: app } ] } }\n";
        int pa = TestPorts.Next(), pb = TestPorts.Next();
        await using var a = RouteTestNodes.StartOurs(accounts + $"server_name: A\ncluster {{ name: p, listen: 127.0.0.1:{pa}, pool_size: 3 }}\n");
        await using var b = RouteTestNodes.StartOurs(accounts + $"server_name: B\ncluster {{ name: p, listen: 127.0.0.1:{pb}, pool_size: 5, routes: [nats-route://127.0.0.1:{pa}] }}\n");
        var deadline = DateTime.UtcNow.AddSeconds(15);
        while ((a.Cluster!.Registered.Count != 6 || b.Cluster!.Registered.Count != 6) && DateTime.UtcNow < deadline) await Task.Delay(50);
        Assert.Equal(6, a.Cluster.Registered.Count);
        Assert.Equal(6, b.Cluster!.Registered.Count);

        // APP is on slot 4 for B (pool 5) and slot 1 for A (pool 3): each side sends on its own.
        foreach (var (subNode, pubNode) in new[] { (a, b), (b, a) })
        {
            await using var s = new NatsConnection(new NatsOpts { Url = $"nats://127.0.0.1:{subNode.ClientPort}", AuthOpts = new NatsAuthOpts { Username = "app", Password = "app" } });
            await using var p = new NatsConnection(new NatsOpts { Url = $"nats://127.0.0.1:{pubNode.ClientPort}", AuthOpts = new NatsAuthOpts { Username = "app", Password = "app" } });
            int got = 0;
            var sub = await s.SubscribeCoreAsync<string>("app.x");
            var reader = Task.Run(async () => { await foreach (var _ in sub.Msgs.ReadAllAsync()) Interlocked.Increment(ref got); });
            await s.PingAsync();
            deadline = DateTime.UtcNow.AddSeconds(10);
            while (Volatile.Read(ref got) == 0 && DateTime.UtcNow < deadline)
            {
                await p.PublishAsync("app.x", "x");
                await Task.Delay(20);
            }
            Assert.True(Volatile.Read(ref got) > 0, $"APP did not cross from {pubNode.ServerName} to {subNode.ServerName}");
            await sub.UnsubscribeAsync();
        }
    }

    [Fact]
    public async Task The_dialling_side_refills_the_pool_after_each_restart_of_a_peer_that_does_not_dial_back()
    {
        int pa = TestPorts.Next(), pb = TestPorts.Next();
        // Only A knows B: after B restarts (a new server ID each time) nothing but A's solicit loops can rebuild the pool.
        await using var a = RouteTestNodes.StartOurs("server_name: A\n" + RouteTestNodes.ClusterBlock("r", pa, pb));
        for (int round = 0; round < 3; round++)
        {
            await using (var b = RouteTestNodes.StartOurs($"server_name: B\ncluster {{ name: r, listen: 127.0.0.1:{pb} }}\n"))
            {
                var deadline = DateTime.UtcNow.AddSeconds(15);
                while ((a.Cluster!.Registered.Count != 4 || a.Cluster.Registered.Any(r => r.RemoteId != b.ServerId)) && DateTime.UtcNow < deadline) await Task.Delay(50);
                output.WriteLine($"round {round}: {a.Cluster.Registered.Count} connections");
                Assert.Equal(4, a.Cluster.Registered.Count);
                Assert.All(a.Cluster.Registered, r => Assert.Equal(b.ServerId, r.RemoteId));
                Assert.Equal(4, b.Cluster!.Registered.Count);
            }
            var gone = DateTime.UtcNow.AddSeconds(10);
            while (a.Cluster!.Registered.Count != 0 && DateTime.UtcNow < gone) await Task.Delay(20);
        }
    }

    [Fact]
    public async Task Towards_nats_server_2_9_one_connection_carries_everything()
    {
        string binary = Prerequisites.RequireGoServer(output);
        int goRoute = TestPorts.Next(), ourRoute = TestPorts.Next();
        await using var go = await ServerProcess.StartAsync(ServerKind.Go, new ServerStartOptions
        {
            GoBinary = binary,
            Config = "server_name: GO29\n" + RouteTestNodes.ClusterBlock("pool", goRoute, ourRoute),
        }, output);
        await using var ours = RouteTestNodes.StartOurs("server_name: OURS\n" + RouteTestNodes.ClusterBlock("pool", ourRoute, goRoute));
        var deadline = DateTime.UtcNow.AddSeconds(10);
        while (ours.Cluster!.RemoteCount == 0 && DateTime.UtcNow < deadline) await Task.Delay(20);
        // Let any pinned or extra attempt play out: it must not stay.
        await Task.Delay(1500);
        var route = Assert.Single(ours.Cluster.Registered);
        Assert.True(route.NoPool);
        Assert.Null(route.PinnedAccountName);
    }
}
