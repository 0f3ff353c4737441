using System.Text;
using System.Text.Json;
using NATS.Client.Core;
using NatsBroker.Configuration;
using NatsBroker.Routing;
using NatsBroker.Subscriptions;
using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Monitoring;

/// <summary>
/// Route monitoring (docs/design/routes.md section 6): /routez and /varz's cluster block, route counts and
/// connect_urls, between two of ours, and against a real nats-server 2.14.5 in the same cluster (field names and
/// order as the reference writes them).
/// </summary>
public sealed class RoutezTests(ITestOutputHelper output)
{
    /// <summary>monitor.go RouteInfo's fields as 2.14.5 writes them for a stage-1 route (no permissions, not pinned).</summary>
    private static readonly string[] RouteFields =
        ["rid", "remote_id", "remote_name", "did_solicit", "is_configured", "ip", "port", "start", "last_activity", "rtt", "uptime", "idle",
         "pending_size", "in_msgs", "out_msgs", "in_bytes", "out_bytes", "subscriptions", "compression"];

    private static List<string> Keys(JsonElement e) => [.. e.EnumerateObject().Select(p => p.Name)];

    private static Task<MonitoredBroker> StartNode(string name, int routePort, params int[] routes) => MonitoredBroker.StartAsync(o =>
    {
        o.ServerName = name;
        o.Cluster = new ClusterOptions
        {
            Name = "rz",
            Host = "127.0.0.1",
            Port = routePort,
            Routes = [.. routes.Select(p => new Uri($"nats-route://127.0.0.1:{p}"))],
        };
    });

    private static async Task WaitUntil(Func<Task<bool>> condition, string what)
    {
        var deadline = DateTime.UtcNow.AddSeconds(10);
        while (!await condition())
        {
            Assert.True(DateTime.UtcNow < deadline, what);
            await Task.Delay(20);
        }
    }

    /// <summary>The route entry of /routez whose peer is <paramref name="remoteId"/>, once its subscriptions include <paramref name="subject"/>.</summary>
    private static async Task<JsonElement> RouteWithSub(Func<string, Task<JsonElement>> get, string remoteId, string subject)
    {
        JsonElement found = default;
        await WaitUntil(async () =>
        {
            var rz = await get("/routez?subs=1");
            foreach (var r in rz.GetProperty("routes").EnumerateArray())
            {
                if (r.GetProperty("remote_id").GetString() != remoteId || !r.TryGetProperty("subscriptions_list", out var list)) continue;
                if (list.EnumerateArray().Any(s => s.GetString() == subject))
                {
                    found = r;
                    return true;
                }
            }
            return false;
        }, $"no route to {remoteId} with interest in {subject}");
        return found;
    }

    [Fact]
    public async Task Routez_lists_the_peer_its_subscriptions_and_traffic()
    {
        int pa = TestPorts.Next(), pb = TestPorts.Next();
        await using var a = await StartNode("A", pa, pb);
        await using var b = await StartNode("B", pb);
        await WaitUntil(() => Task.FromResult(a.Server.Cluster!.Registered.Count == 1 && b.Server.Cluster!.Registered.Count == 1), "routes did not form");

        await using var cb = new NatsConnection(new NatsOpts { Url = $"nats://127.0.0.1:{b.ClientPort}" });
        await using var ca = new NatsConnection(new NatsOpts { Url = $"nats://127.0.0.1:{a.ClientPort}" });
        await cb.ConnectAsync();
        await ca.ConnectAsync();
        int received = 0;
        var plain = await cb.SubscribeCoreAsync<string>("rz.plain");
        var queued = await cb.SubscribeCoreAsync<string>("rz.queued", queueGroup: "workers");
        var reader = Task.Run(async () => { await foreach (var _ in plain.Msgs.ReadAllAsync()) Interlocked.Increment(ref received); });
        await cb.PingAsync();

        var route = await RouteWithSub(a.GetJsonAsync, b.Server.ServerId, "rz.queued");
        await RouteWithSub(a.GetJsonAsync, b.Server.ServerId, "rz.plain");

        // The top level and the route entry: 2.14.5's fields in its order, A's view of its configured route to B.
        var routez = await a.GetJsonAsync("/routez");
        Assert.Equal(["server_id", "server_name", "now", "num_routes", "routes"], Keys(routez));
        Assert.Equal(a.Server.ServerId, routez.GetProperty("server_id").GetString());
        Assert.Equal("A", routez.GetProperty("server_name").GetString());
        Assert.Equal(1, routez.GetProperty("num_routes").GetInt32());
        route = routez.GetProperty("routes")[0];
        Assert.Equal(RouteFields, Keys(route));
        var ours = a.Server.Cluster!.Registered[0];
        Assert.Equal(ours.Id, route.GetProperty("rid").GetUInt64());
        Assert.Equal(b.Server.ServerId, route.GetProperty("remote_id").GetString());
        Assert.Equal("B", route.GetProperty("remote_name").GetString());
        Assert.Equal("127.0.0.1", route.GetProperty("ip").GetString());
        Assert.Equal(ours.RemotePort, route.GetProperty("port").GetInt32());
        Assert.Equal("not supported", route.GetProperty("compression").GetString());
        int subs = route.GetProperty("subscriptions").GetInt32();
        Assert.Equal(ours.RemoteSubscriptionCount, subs);
        Assert.True(subs >= 2, $"subscriptions {subs}");

        // A dialled its configured route; B (no routes configured) accepted it.
        Assert.True(route.GetProperty("did_solicit").GetBoolean());
        Assert.True(route.GetProperty("is_configured").GetBoolean());
        var routeOnB = (await b.GetJsonAsync("/routez")).GetProperty("routes")[0];
        Assert.Equal(a.Server.ServerId, routeOnB.GetProperty("remote_id").GetString());
        Assert.Equal("A", routeOnB.GetProperty("remote_name").GetString());
        Assert.False(routeOnB.GetProperty("did_solicit").GetBoolean());
        Assert.False(routeOnB.GetProperty("is_configured").GetBoolean());

        // ?subs=1: subjects only; ?subs=detail: nats-server's SubDetail under a connection (no account), the sid
        // being the remote subscription's key (account subject [queue]) and cid the route's id.
        var list = (await a.GetJsonAsync("/routez?subs=1")).GetProperty("routes")[0];
        Assert.False(list.TryGetProperty("subscriptions_list_detail", out _));
        var subjects = list.GetProperty("subscriptions_list").EnumerateArray().Select(s => s.GetString()).ToList();
        Assert.Contains("rz.plain", subjects);
        Assert.Contains("rz.queued", subjects);
        Assert.Equal(list.GetProperty("subscriptions").GetInt32(), subjects.Count);

        var detailed = (await a.GetJsonAsync("/routez?subs=detail")).GetProperty("routes")[0];
        Assert.False(detailed.TryGetProperty("subscriptions_list", out _));
        var details = detailed.GetProperty("subscriptions_list_detail").EnumerateArray().ToList();
        var q = details.Single(d => d.GetProperty("subject").GetString() == "rz.queued");
        Assert.Equal(["subject", "qgroup", "sid", "msgs", "cid"], Keys(q));
        Assert.Equal("workers", q.GetProperty("qgroup").GetString());
        Assert.Equal("$G rz.queued workers", q.GetProperty("sid").GetString());
        Assert.Equal(ours.Id, q.GetProperty("cid").GetUInt64());
        var p = details.Single(d => d.GetProperty("subject").GetString() == "rz.plain");
        Assert.Equal(["subject", "sid", "msgs", "cid"], Keys(p));
        Assert.Equal("$G rz.plain", p.GetProperty("sid").GetString());

        // Traffic: a message published on A to B's subscriber goes out on A's route and in on B's.
        long outBefore = route.GetProperty("out_msgs").GetInt64(), inBefore = routeOnB.GetProperty("in_msgs").GetInt64();
        await ca.PublishAsync("rz.plain", "hello");
        await ca.PingAsync();
        await WaitUntil(() => Task.FromResult(Volatile.Read(ref received) >= 1), "the message did not cross");
        var after = (await a.GetJsonAsync("/routez")).GetProperty("routes")[0];
        var afterOnB = (await b.GetJsonAsync("/routez")).GetProperty("routes")[0];
        Assert.True(after.GetProperty("out_msgs").GetInt64() > outBefore, "A's route out_msgs did not grow");
        Assert.True(after.GetProperty("out_bytes").GetInt64() > 0);
        Assert.True(afterOnB.GetProperty("in_msgs").GetInt64() > inBefore, "B's route in_msgs did not grow");

        // An unsubscribe leaves the route's list.
        await queued.UnsubscribeAsync();
        await cb.PingAsync();
        await WaitUntil(async () => (await a.GetJsonAsync("/routez?subs=1")).GetProperty("routes")[0].GetProperty("subscriptions_list")
            .EnumerateArray().All(s => s.GetString() != "rz.queued"), "rz.queued stayed on the route");

        var bad = await a.GetAsync("/routez?subs=maybe");
        Assert.Equal(400, bad.Status);
        await plain.UnsubscribeAsync();
    }

    [Fact]
    public async Task Varz_has_the_cluster_block_route_counts_and_connect_urls()
    {
        int pa = TestPorts.Next(), pb = TestPorts.Next();
        await using var a = await StartNode("A", pa, pb);
        await using var b = await StartNode("B", pb);
        await WaitUntil(() => Task.FromResult(a.Server.Cluster!.Registered.Count == 1 && b.Server.Cluster!.Registered.Count == 1), "routes did not form");
        await WaitUntil(async () => (await a.GetJsonAsync("/varz")).TryGetProperty("connect_urls", out var u) && u.GetArrayLength() == 2, "A never listed B's client URL");

        var varz = await a.GetJsonAsync("/varz");
        var cluster = varz.GetProperty("cluster");
        Assert.Equal(["name", "addr", "cluster_port", "auth_timeout", "urls", "tls_timeout", "pool_size"], Keys(cluster));
        Assert.Equal("rz", cluster.GetProperty("name").GetString());
        Assert.Equal("127.0.0.1", cluster.GetProperty("addr").GetString());
        Assert.Equal(pa, cluster.GetProperty("cluster_port").GetInt32());
        Assert.Equal(2, cluster.GetProperty("auth_timeout").GetDouble());
        Assert.Equal([$"127.0.0.1:{pb}"], cluster.GetProperty("urls").EnumerateArray().Select(u => u.GetString()));
        Assert.Equal(2, cluster.GetProperty("tls_timeout").GetDouble());
        Assert.Equal(-1, cluster.GetProperty("pool_size").GetInt32());
        Assert.Equal(1, varz.GetProperty("routes").GetInt32());
        Assert.Equal(1, varz.GetProperty("remotes").GetInt32());
        // Ours first, then the peer's, as our clients' INFO has them; right after auth_required/port in 2.14.5's order.
        Assert.Equal([$"127.0.0.1:{a.ClientPort}", $"127.0.0.1:{b.ClientPort}"], varz.GetProperty("connect_urls").EnumerateArray().Select(u => u.GetString()));
        var keys = Keys(varz);
        Assert.Equal(keys.IndexOf("port") + 1, keys.IndexOf("connect_urls"));

        // B has no routes configured: no urls. Its port was given, so it is the one shown.
        var clusterB = (await b.GetJsonAsync("/varz")).GetProperty("cluster");
        Assert.False(clusterB.TryGetProperty("urls", out _));
        Assert.Equal(pb, clusterB.GetProperty("cluster_port").GetInt32());

        // When B goes, A counts no route and lists only its own client URL.
        await b.DisposeAsync();
        await WaitUntil(async () => (await a.GetJsonAsync("/varz")).GetProperty("routes").GetInt32() == 0, "A still counts the route to B");
        varz = await a.GetJsonAsync("/varz");
        Assert.Equal(0, varz.GetProperty("remotes").GetInt32());
        Assert.Equal([$"127.0.0.1:{a.ClientPort}"], varz.GetProperty("connect_urls").EnumerateArray().Select(u => u.GetString()));
        var routez = await a.GetJsonAsync("/routez");
        Assert.Equal(0, routez.GetProperty("num_routes").GetInt32());
        Assert.Equal(0, routez.GetProperty("routes").GetArrayLength());
    }

    [Fact]
    public async Task Outside_a_cluster_the_block_is_empty_and_there_are_no_connect_urls()
    {
        await using var solo = await MonitoredBroker.StartAsync();
        var varz = await solo.GetJsonAsync("/varz");
        Assert.Equal(JsonValueKind.Object, varz.GetProperty("cluster").ValueKind);
        Assert.Empty(Keys(varz.GetProperty("cluster")));
        Assert.False(varz.TryGetProperty("connect_urls", out _));
        Assert.Equal(0, varz.GetProperty("routes").GetInt32());
        var routez = await solo.GetJsonAsync("/routez?subs=detail");
        Assert.Equal(0, routez.GetProperty("num_routes").GetInt32());
        Assert.Equal(0, routez.GetProperty("routes").GetArrayLength());
    }

    [Fact]
    public async Task Sys_ping_routez_is_answered_by_every_node_of_the_cluster()
    {
        int pa = TestPorts.Next(), pb = TestPorts.Next();
        await using var a = await StartNode("A", pa, pb);
        await using var b = await StartNode("B", pb);
        await WaitUntil(() => Task.FromResult(a.Server.Cluster!.Registered.Count == 1 && b.Server.Cluster!.Registered.Count == 1), "routes did not form");

        var sys = a.Server.Accounts.System!.Router;
        var answers = new List<JsonElement>();
        sys.SubscribeInternal("_INBOX.rz", null, (Subscription _, in InternalMessage m) =>
        {
            using var doc = JsonDocument.Parse(System.Buffers.BuffersExtensions.ToArray(m.Body));
            lock (answers) answers.Add(doc.RootElement.Clone());
        });
        // B's system services must have reached A's SubList before the PING can cross.
        await WaitUntil(() => Task.FromResult(a.Server.Accounts.System!.Router.SubList.Snapshot()
            .Any(s => s.IsRemote && Encoding.UTF8.GetString(s.Subject) == "$SYS.REQ.SERVER.PING.*")), "B's $SYS.REQ.SERVER.PING.* interest never reached A");

        sys.PublishInternal("$SYS.REQ.SERVER.PING.ROUTEZ"u8, "_INBOX.rz"u8, default, """{"subscriptions":true}"""u8);
        await WaitUntil(() => { lock (answers) return Task.FromResult(answers.Count >= 2); }, "fewer than two ROUTEZ answers");

        List<JsonElement> data;
        lock (answers) data = [.. answers.Select(x => x.GetProperty("data"))];
        output.WriteLine(string.Join("\n", data));
        var fromA = data.Single(d => d.GetProperty("server_id").GetString() == a.Server.ServerId);
        var fromB = data.Single(d => d.GetProperty("server_id").GetString() == b.Server.ServerId);
        Assert.Equal(b.Server.ServerId, fromA.GetProperty("routes")[0].GetProperty("remote_id").GetString());
        Assert.Equal(a.Server.ServerId, fromB.GetProperty("routes")[0].GetProperty("remote_id").GetString());
        // The request's "subscriptions": true is ?subs=1: A's services are on B's route to A.
        Assert.Contains(fromB.GetProperty("routes")[0].GetProperty("subscriptions_list").EnumerateArray(),
            s => s.GetString() == "$SYS.REQ.SERVER.PING.*");

        // And addressed to one server: only that one answers.
        lock (answers) answers.Clear();
        sys.PublishInternal(Encoding.ASCII.GetBytes($"$SYS.REQ.SERVER.{b.Server.ServerId}.ROUTEZ"), "_INBOX.rz"u8, default, default);
        await WaitUntil(() => { lock (answers) return Task.FromResult(answers.Count >= 1); }, "no answer from B");
        await Task.Delay(200);
        lock (answers) Assert.Equal([b.Server.ServerId], answers.Select(x => x.GetProperty("data").GetProperty("server_id").GetString()));
    }

    [SkippableFact]
    public async Task Fields_and_order_match_nats_server_214_in_a_mixed_cluster()
    {
        string binary = Prerequisites.RequireOracle214(output);
        int goRoute = TestPorts.Next(), ourRoute = TestPorts.Next();
        await using var go = await ServerProcess.StartAsync(ServerKind.Go, new ServerStartOptions
        {
            GoBinary = binary,
            Monitoring = true,
            Config = $$"""
                server_name: GO
                cluster { name: rz, listen: "127.0.0.1:{{goRoute}}", routes: ["nats-route://127.0.0.1:{{ourRoute}}"] }
                """,
        }, output);
        await using var ours = await StartNode("OURS", ourRoute, goRoute);
        using var goHttp = new HttpClient { BaseAddress = new Uri($"http://127.0.0.1:{go.MonitorPort}"), Timeout = TimeSpan.FromSeconds(10) };
        async Task<JsonElement> GoJson(string path)
        {
            using var doc = JsonDocument.Parse(await goHttp.GetStringAsync(path));
            return doc.RootElement.Clone();
        }

        await using var cg = new NatsConnection(new NatsOpts { Url = go.Url });
        await using var co = new NatsConnection(new NatsOpts { Url = $"nats://127.0.0.1:{ours.ClientPort}" });
        await cg.ConnectAsync();
        await co.ConnectAsync();
        var sg = await cg.SubscribeCoreAsync<string>("probe.go");
        var so = await co.SubscribeCoreAsync<string>("probe.ours");
        await cg.PingAsync();
        await co.PingAsync();

        string goId = (await GoJson("/varz")).GetProperty("server_id").GetString()!;
        var ourRouteEntry = await RouteWithSub(ours.GetJsonAsync, goId, "probe.go");
        var goRouteEntry = await RouteWithSub(GoJson, ours.Server.ServerId, "probe.ours");
        output.WriteLine("ours: " + ourRouteEntry);
        output.WriteLine("2.14.5: " + goRouteEntry);

        // /routez: the document and one route, plain, with subjects, and with details.
        var ourRz = await ours.GetJsonAsync("/routez");
        var goRz = await GoJson("/routez");
        Assert.Equal(Keys(goRz), Keys(ourRz));
        Assert.Equal(1, ourRz.GetProperty("num_routes").GetInt32());
        // 2.14.5 does not pool towards a peer without pooling: one connection to us.
        Assert.Equal(1, goRz.GetProperty("num_routes").GetInt32());
        Assert.Equal(Keys(goRz.GetProperty("routes")[0]), Keys(ourRz.GetProperty("routes")[0]));
        Assert.Equal(RouteFields, Keys(ourRz.GetProperty("routes")[0]));
        Assert.Equal("GO", ourRz.GetProperty("routes")[0].GetProperty("remote_name").GetString());
        Assert.Equal("OURS", goRz.GetProperty("routes")[0].GetProperty("remote_name").GetString());
        // Ours and the reference agree on the compression of this route.
        Assert.Equal(goRz.GetProperty("routes")[0].GetProperty("compression").GetString(), ourRz.GetProperty("routes")[0].GetProperty("compression").GetString());
        Assert.Equal(Keys(goRouteEntry), Keys(ourRouteEntry));

        var ourDetail = (await ours.GetJsonAsync("/routez?subs=detail")).GetProperty("routes")[0];
        var goDetail = (await GoJson("/routez?subs=detail")).GetProperty("routes")[0];
        Assert.Equal(Keys(goDetail), Keys(ourDetail));
        var ourSub = ourDetail.GetProperty("subscriptions_list_detail").EnumerateArray().Single(d => d.GetProperty("subject").GetString() == "probe.go");
        var goSub = goDetail.GetProperty("subscriptions_list_detail").EnumerateArray().Single(d => d.GetProperty("subject").GetString() == "probe.ours");
        Assert.Equal(Keys(goSub), Keys(ourSub));
        // The sid is the remote subscription's key on both (2.14.5 uses the old style towards a peer without lnocu).
        Assert.Equal("$G probe.ours", goSub.GetProperty("sid").GetString());
        Assert.Equal("$G probe.go", ourSub.GetProperty("sid").GetString());

        // /varz: the cluster block and the top level in 2.14.5's order (less the fields ours never writes,
        // NatsServerOracleTests.OnlyIn214), with the same route counts.
        var ourVarz = await ours.GetJsonAsync("/varz");
        var goVarz = await GoJson("/varz");
        output.WriteLine("cluster ours: " + ourVarz.GetProperty("cluster"));
        output.WriteLine("cluster 2.14.5: " + goVarz.GetProperty("cluster"));
        Assert.Equal(Keys(goVarz.GetProperty("cluster")), Keys(ourVarz.GetProperty("cluster")));
        Assert.Equal(Keys(goVarz).Except(["git_commit", "feature_flags", "disk_io_wait_stats"]), Keys(ourVarz));
        foreach (var field in new[] { "routes", "remotes" }) Assert.Equal(goVarz.GetProperty(field).GetInt32(), ourVarz.GetProperty(field).GetInt32());
        foreach (var field in new[] { "name", "addr", "auth_timeout", "tls_timeout" })
        {
            Assert.Equal(goVarz.GetProperty("cluster").GetProperty(field).ToString(), ourVarz.GetProperty("cluster").GetProperty(field).ToString());
        }
        Assert.Equal(goRoute, goVarz.GetProperty("cluster").GetProperty("cluster_port").GetInt32());
        Assert.Equal(ourRoute, ourVarz.GetProperty("cluster").GetProperty("cluster_port").GetInt32());
        Assert.Equal([$"127.0.0.1:{ourRoute}"], goVarz.GetProperty("cluster").GetProperty("urls").EnumerateArray().Select(u => u.GetString()));
        Assert.Equal([$"127.0.0.1:{goRoute}"], ourVarz.GetProperty("cluster").GetProperty("urls").EnumerateArray().Select(u => u.GetString()));
        // Both list both client URLs.
        var goUrls = goVarz.GetProperty("connect_urls").EnumerateArray().Select(u => u.GetString()).ToHashSet();
        var ourUrls = ourVarz.GetProperty("connect_urls").EnumerateArray().Select(u => u.GetString()).ToHashSet();
        Assert.Contains($"127.0.0.1:{ours.ClientPort}", goUrls);
        Assert.Contains($"127.0.0.1:{ours.ClientPort}", ourUrls);
        Assert.Contains($"127.0.0.1:{go.Port}", goUrls);
        Assert.Contains($"127.0.0.1:{go.Port}", ourUrls);

        await sg.UnsubscribeAsync();
        await so.UnsubscribeAsync();
    }
}
