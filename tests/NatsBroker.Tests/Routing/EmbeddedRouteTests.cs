using Microsoft.Extensions.Logging.Abstractions;
using NATS.Client.Core;
using NatsBroker.Configuration;
using NatsBroker.Server;
using NatsBroker.Tests.Infrastructure;
using Xunit;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Routing;

/// <summary>
/// Routes between in-process servers (and a real nats-server 2.14.5 / 2.9.10 peer): interest crosses, messages
/// cross once, queue groups deliver once cluster-wide, the mesh forms from a partial route list, and clients learn
/// the peers' URLs. The process-level mixed clusters are in tests/NatsBroker.Tests/Cluster.
/// </summary>
public sealed class EmbeddedRouteTests(ITestOutputHelper output)
{
    private static NatsServer StartNode(string name, int routePort, params int[] routes)
    {
        var options = new ServerOptions { Host = "127.0.0.1", Port = -1, ServerName = name };
        options.Cluster = new NatsBroker.Configuration.ClusterOptions
        {
            Name = "embedded",
            Host = "127.0.0.1",
            Port = routePort,
            Routes = [.. routes.Select(p => new Uri($"nats-route://127.0.0.1:{p}"))],
        };
        var server = new NatsServer(options, NullLogger.Instance);
        server.Start();
        return server;
    }

    private static async Task WaitForRoutes(TimeSpan timeout, params (NatsServer Server, int Expected)[] nodes)
    {
        var deadline = DateTime.UtcNow + timeout;
        while (DateTime.UtcNow < deadline)
        {
            if (nodes.All(n => n.Server.Cluster!.RemoteCount == n.Expected)) return;
            await Task.Delay(20);
        }
        Assert.Fail("routes did not form: " + string.Join(", ", nodes.Select(n => $"{n.Server.ServerName}={n.Server.Cluster!.RemoteCount}/{n.Expected}")));
    }

    /// <summary>Publishes probes until one arrives: interest has crossed the route.</summary>
    private static async Task WaitForInterest(NatsConnection pub, string subject, Func<bool> received)
    {
        var deadline = DateTime.UtcNow + TimeSpan.FromSeconds(10);
        while (!received())
        {
            Assert.True(DateTime.UtcNow < deadline, $"interest in {subject} never crossed");
            await pub.PublishAsync(subject, "probe");
            await Task.Delay(20);
        }
    }

    [Fact]
    public async Task Messages_and_queue_groups_cross_between_two_of_ours()
    {
        int pa = TestPorts.Next(), pb = TestPorts.Next();
        await using var a = StartNode("A", pa);
        await using var b = StartNode("B", pb, pa);
        await WaitForRoutes(TimeSpan.FromSeconds(10), (a, 1), (b, 1));

        await using var ca = new NatsConnection(new NatsOpts { Url = $"nats://127.0.0.1:{a.ClientPort}" });
        await using var cb = new NatsConnection(new NatsOpts { Url = $"nats://127.0.0.1:{b.ClientPort}" });
        await ca.ConnectAsync();
        await cb.ConnectAsync();

        var got = new List<(string Subject, string Data, string? Header)>();
        var sub = await ca.SubscribeCoreAsync<string>("foo.*");
        var reader = Task.Run(async () =>
        {
            await foreach (var m in sub.Msgs.ReadAllAsync())
            {
                lock (got) got.Add((m.Subject, m.Data ?? "", m.Headers?["h"].ToString()));
            }
        });
        await ca.PingAsync();
        await WaitForInterest(cb, "foo.probe", () => { lock (got) return got.Count > 0; });
        lock (got) got.Clear();
        await cb.PublishAsync("foo.bar", "hello", headers: new NatsHeaders { ["h"] = "v" });
        await cb.PublishAsync("nomatch", "x");
        var deadline = DateTime.UtcNow.AddSeconds(5);
        while (DateTime.UtcNow < deadline) { lock (got) if (got.Count >= 1) break; await Task.Delay(10); }
        await Task.Delay(100);
        lock (got)
        {
            Assert.Single(got);
            Assert.Equal(("foo.bar", "hello", "v"), got[0]);
        }

        // Queue group q: 1 member on A, 1 on B; 400 messages published on B: each exactly once in total.
        int onA = 0, onB = 0;
        var qa = await ca.SubscribeCoreAsync<string>("work", queueGroup: "q");
        var qb = await cb.SubscribeCoreAsync<string>("work", queueGroup: "q");
        var ra = Task.Run(async () => { await foreach (var _ in qa.Msgs.ReadAllAsync()) Interlocked.Increment(ref onA); });
        var rb = Task.Run(async () => { await foreach (var _ in qb.Msgs.ReadAllAsync()) Interlocked.Increment(ref onB); });
        await ca.PingAsync();
        await cb.PingAsync();
        // Until A's member has crossed, B delivers locally only: wait for the weight to show on B.
        deadline = DateTime.UtcNow.AddSeconds(10);
        while (!b.SubList.Snapshot().Any(s => s.IsRemote && s.Queue is not null) && DateTime.UtcNow < deadline) await Task.Delay(10);
        for (int i = 0; i < 400; i++) await cb.PublishAsync("work", i.ToString(System.Globalization.CultureInfo.InvariantCulture));
        await cb.PingAsync();
        deadline = DateTime.UtcNow.AddSeconds(10);
        while (Volatile.Read(ref onA) + Volatile.Read(ref onB) < 400 && DateTime.UtcNow < deadline) await Task.Delay(10);
        await Task.Delay(200);
        output.WriteLine($"queue: A {onA}, B {onB}");
        Assert.Equal(400, onA + onB);
        Assert.InRange(onA, 100, 300);

        await sub.UnsubscribeAsync();
        await qa.UnsubscribeAsync();
        await qb.UnsubscribeAsync();
    }

    [Fact]
    public async Task Three_nodes_form_a_full_mesh_from_a_chain_and_clients_learn_the_peers()
    {
        int pa = TestPorts.Next(), pb = TestPorts.Next(), pc = TestPorts.Next();
        await using var a = StartNode("A", pa);
        await using var b = StartNode("B", pb, pa);
        await using var c = StartNode("C", pc, pb);
        await WaitForRoutes(TimeSpan.FromSeconds(10), (a, 2), (b, 2), (c, 2));

        await using var ca = new NatsConnection(new NatsOpts { Url = $"nats://127.0.0.1:{a.ClientPort}" });
        await ca.ConnectAsync();
        var deadline = DateTime.UtcNow.AddSeconds(5);
        while ((ca.ServerInfo?.ClientConnectUrls?.Length ?? 0) < 3 && DateTime.UtcNow < deadline) await Task.Delay(20);
        var urls = ca.ServerInfo!.ClientConnectUrls!;
        output.WriteLine(string.Join(", ", urls));
        Assert.Equal($"127.0.0.1:{a.ClientPort}", urls[0]);
        Assert.Contains($"127.0.0.1:{b.ClientPort}", urls);
        Assert.Contains($"127.0.0.1:{c.ClientPort}", urls);

        // A message published on C reaches a subscriber on A directly (C has its own route to A).
        await using var cc = new NatsConnection(new NatsOpts { Url = $"nats://127.0.0.1:{c.ClientPort}" });
        await cc.ConnectAsync();
        int count = 0;
        var sub = await ca.SubscribeCoreAsync<string>("mesh");
        var reader = Task.Run(async () => { await foreach (var _ in sub.Msgs.ReadAllAsync()) Interlocked.Increment(ref count); });
        await ca.PingAsync();
        await WaitForInterest(cc, "mesh", () => Volatile.Read(ref count) > 0);
        int before = Volatile.Read(ref count);
        await cc.PublishAsync("mesh", "one");
        await cc.PingAsync();
        await Task.Delay(300);
        Assert.Equal(before + 1, Volatile.Read(ref count));
    }

    [Theory]
    [InlineData("2.14.5")]
    [InlineData("2.9.10")]
    public async Task Ours_and_nats_server_exchange_interest_and_messages(string version)
    {
        string binary = version == "2.14.5" ? Prerequisites.RequireOracle214(output) : Prerequisites.RequireGoServer(output);
        int goRoute = TestPorts.Next(), ourRoute = TestPorts.Next();
        await using var go = await ServerProcess.StartAsync(ServerKind.Go, new ServerStartOptions
        {
            GoBinary = binary,
            ExtraArgs = ["--cluster", $"nats://127.0.0.1:{goRoute}", "--cluster_name", "embedded", "--routes", $"nats://127.0.0.1:{ourRoute}", "-n", "GO"],
        }, output);
        await using var ours = StartNode("OURS", ourRoute, goRoute);
        await WaitForRoutes(TimeSpan.FromSeconds(10), (ours, 1));

        await using var cg = new NatsConnection(new NatsOpts { Url = go.Url });
        await using var co = new NatsConnection(new NatsOpts { Url = $"nats://127.0.0.1:{ours.ClientPort}" });
        await cg.ConnectAsync();
        await co.ConnectAsync();

        // Both directions, with headers; then request/reply across.
        foreach (var (subConn, pubConn, subject) in new[] { (cg, co, "to.go"), (co, cg, "to.ours") })
        {
            var got = new List<string>();
            var sub = await subConn.SubscribeCoreAsync<string>(subject + ".>");
            var reader = Task.Run(async () => { await foreach (var m in sub.Msgs.ReadAllAsync()) lock (got) got.Add(m.Subject + "=" + m.Data + "|" + m.Headers?["h"]); });
            await subConn.PingAsync();
            await WaitForInterest(pubConn, subject + ".probe", () => { lock (got) return got.Count > 0; });
            lock (got) got.Clear();
            await pubConn.PublishAsync(subject + ".x", "v", headers: new NatsHeaders { ["h"] = "1" });
            await pubConn.PingAsync();
            var deadline = DateTime.UtcNow.AddSeconds(5);
            while (DateTime.UtcNow < deadline) { lock (got) if (got.Count > 0) break; await Task.Delay(10); }
            await Task.Delay(100);
            lock (got) Assert.Equal([$"{subject}.x=v|1"], got);
            await sub.UnsubscribeAsync();
        }

        var responder = await cg.SubscribeCoreAsync<string>("svc");
        var serve = Task.Run(async () => { await foreach (var m in responder.Msgs.ReadAllAsync()) await m.ReplyAsync("pong:" + m.Data); });
        await cg.PingAsync();
        NatsMsg<string> reply = default;
        var until = DateTime.UtcNow.AddSeconds(10);
        while (true)
        {
            try
            {
                reply = await co.RequestAsync<string, string>("svc", "ping", replyOpts: new NatsSubOpts { Timeout = TimeSpan.FromMilliseconds(500) });
                break;
            }
            catch (Exception) when (DateTime.UtcNow < until)
            {
                await Task.Delay(50);
            }
        }
        Assert.Equal("pong:ping", reply.Data);

        Assert.Contains("Route connection created", go.Output, StringComparison.Ordinal);
        await responder.UnsubscribeAsync();
    }
}

/// <summary>The system account across a mixed cluster: a server ping is answered by every node.</summary>
public sealed class ClusterSystemAccountTests(ITestOutputHelper output)
{
    private const string Accounts = """
        accounts {
          SYS { users [ { user: sys, password: sys } ] }
          APP { users [ { user: app, password: app } ] }
        }
        system_account: SYS
        """;

    [Fact]
    public async Task Server_ping_is_answered_by_ours_and_by_nats_server()
    {
        string binary = Prerequisites.RequireOracle214(output);
        int goRoute = TestPorts.Next(), ourRoute = TestPorts.Next();
        string goConf = Accounts + "\nserver_name: GO\n" + RouteTestNodes.ClusterBlock("sysc", goRoute, ourRoute);
        await using var go = await ServerProcess.StartAsync(ServerKind.Go, new ServerStartOptions { GoBinary = binary, Config = goConf }, output);
        await using var ours = RouteTestNodes.StartOurs(Accounts + "\nserver_name: OURS\n" + RouteTestNodes.ClusterBlock("sysc", ourRoute, goRoute));

        await using var nc = new NatsConnection(new NatsOpts { Url = go.Url, AuthOpts = new NatsAuthOpts { Username = "sys", Password = "sys" } });
        await nc.ConnectAsync();
        var names = new HashSet<string>();
        var deadline = DateTime.UtcNow.AddSeconds(15);
        while (names.Count < 2 && DateTime.UtcNow < deadline)
        {
            names.Clear();
            var inbox = nc.NewInbox();
            var sub = await nc.SubscribeCoreAsync<string>(inbox);
            await nc.PublishAsync("$SYS.REQ.SERVER.PING", "", replyTo: inbox);
            using var cts = new CancellationTokenSource(TimeSpan.FromMilliseconds(700));
            try
            {
                await foreach (var m in sub.Msgs.ReadAllAsync(cts.Token))
                {
                    using var doc = System.Text.Json.JsonDocument.Parse(m.Data ?? "{}");
                    names.Add(doc.RootElement.GetProperty("server").GetProperty("name").GetString() ?? "");
                }
            }
            catch (OperationCanceledException)
            {
            }
            await sub.UnsubscribeAsync();
        }
        output.WriteLine(string.Join(", ", names));
        Assert.Equal(["GO", "OURS"], names.Order().ToArray());
    }
}

/// <summary>`nats server ping` (the standard CLI) on a three-node mixed cluster: every node answers.</summary>
public sealed class ClusterServerPingTests(ITestOutputHelper output)
{
    private const string Accounts = """
        accounts { SYS { users [ { user: sys, password: sys } ] } }
        system_account: SYS
        """;

    [Fact]
    public async Task Nats_server_ping_lists_ours_nats_server_2_14_and_2_9()
    {
        string cli = Prerequisites.RequireNatsCli(output);
        string go214 = Prerequisites.RequireOracle214(output), go29 = Prerequisites.RequireGoServer(output);
        int r214 = TestPorts.Next(), r29 = TestPorts.Next(), rOurs = TestPorts.Next();
        await using var a = await ServerProcess.StartAsync(ServerKind.Go, new ServerStartOptions
        {
            GoBinary = go214,
            Config = Accounts + "\nserver_name: N214\n" + RouteTestNodes.ClusterBlock("ping", r214, r29, rOurs),
        }, output);
        await using var b = await ServerProcess.StartAsync(ServerKind.Go, new ServerStartOptions
        {
            GoBinary = go29,
            Config = Accounts + "\nserver_name: N29\n" + RouteTestNodes.ClusterBlock("ping", r29, r214, rOurs),
        }, output);
        await using var ours = RouteTestNodes.StartOurs(Accounts + "\nserver_name: OURS\n" + RouteTestNodes.ClusterBlock("ping", rOurs, r214, r29));
        var deadline = DateTime.UtcNow.AddSeconds(15);
        while (ours.Cluster!.RemoteCount < 2 && DateTime.UtcNow < deadline) await Task.Delay(50);
        Assert.Equal(2, ours.Cluster.RemoteCount);

        using var dir = new NatsBroker.Tests.Configuration.TempDir();
        var nats = new NatsBroker.Tests.Clients.NatsCli.NatsCli(cli, a.Url, "sys", "sys", dir.Path);
        string text = "";
        deadline = DateTime.UtcNow.AddSeconds(20);
        while (DateTime.UtcNow < deadline)
        {
            (_, text) = await nats.RunAsync("server", "ping", "3");
            if (new[] { "N214", "N29", "OURS" }.All(n => text.Contains(n, StringComparison.Ordinal))) break;
            await Task.Delay(200);
        }
        output.WriteLine(text);
        Assert.Contains("N214", text, StringComparison.Ordinal);
        Assert.Contains("N29", text, StringComparison.Ordinal);
        Assert.Contains("OURS", text, StringComparison.Ordinal);
    }
}

/// <summary>Service imports whose exporter's responder is on the other node (routes.md 5.4).</summary>
public sealed class ClusterImportTests(ITestOutputHelper output)
{
    private const string Accounts = """
        accounts {
          E { users [ { user: e, password: e } ], exports [ { service: svc } ] }
          I { users [ { user: i, password: i } ], imports [ { service: { account: E, subject: svc } } ] }
        }
        """;

    [Theory]
    [InlineData(true)]
    [InlineData(false)]
    public async Task A_request_through_a_service_import_is_answered_by_a_responder_on_the_other_node(bool importerOnOurs)
    {
        string binary = Prerequisites.RequireOracle214(output);
        int goRoute = TestPorts.Next(), ourRoute = TestPorts.Next();
        string goConf = Accounts + "\nserver_name: GO\n" + RouteTestNodes.ClusterBlock("imp", goRoute, ourRoute);
        await using var go = await ServerProcess.StartAsync(ServerKind.Go, new ServerStartOptions { GoBinary = binary, Config = goConf }, output);
        await using var ours = RouteTestNodes.StartOurs(Accounts + "\nserver_name: OURS\n" + RouteTestNodes.ClusterBlock("imp", ourRoute, goRoute));

        string ourUrl = $"nats://127.0.0.1:{ours.ClientPort}";
        string importerUrl = importerOnOurs ? ourUrl : go.Url, exporterUrl = importerOnOurs ? go.Url : ourUrl;
        await using var responder = new NatsConnection(new NatsOpts { Url = exporterUrl, AuthOpts = new NatsAuthOpts { Username = "e", Password = "e" } });
        await using var requester = new NatsConnection(new NatsOpts { Url = importerUrl, AuthOpts = new NatsAuthOpts { Username = "i", Password = "i" } });
        await responder.ConnectAsync();
        await requester.ConnectAsync();
        var sub = await responder.SubscribeCoreAsync<string>("svc");
        var serve = Task.Run(async () => { await foreach (var m in sub.Msgs.ReadAllAsync()) await m.ReplyAsync("answer:" + m.Data); });
        await responder.PingAsync();

        string? answer = null;
        var deadline = DateTime.UtcNow.AddSeconds(15);
        while (answer is null)
        {
            try
            {
                var reply = await requester.RequestAsync<string, string>("svc", "q", replyOpts: new NatsSubOpts { Timeout = TimeSpan.FromMilliseconds(500) });
                answer = reply.Data;
            }
            catch (Exception ex) when (DateTime.UtcNow < deadline && ex is NatsNoReplyException or NatsNoRespondersException or TimeoutException or NatsException)
            {
                await Task.Delay(100);
            }
        }
        Assert.Equal("answer:q", answer);
        await sub.UnsubscribeAsync();
    }
}

/// <summary>Stream imports whose publisher is on the other node: the importer's shadow interest in the exporter's
/// account crosses the route, the importer's node maps the subject (routes.md 5.4).</summary>
public sealed class ClusterStreamImportTests(ITestOutputHelper output)
{
    private const string Accounts = """
        accounts {
          E { users [ { user: e, password: e } ], exports [ { stream: "events.>" } ] }
          I { users [ { user: i, password: i } ], imports [ { stream: { account: E, subject: "events.>" } } ] }
        }
        """;

    [Theory]
    [InlineData(true)]
    [InlineData(false)]
    public async Task A_stream_published_on_one_node_reaches_the_importer_on_the_other(bool importerOnOurs)
    {
        string binary = Prerequisites.RequireOracle214(output);
        int goRoute = TestPorts.Next(), ourRoute = TestPorts.Next();
        await using var go = await ServerProcess.StartAsync(ServerKind.Go, new ServerStartOptions
        {
            GoBinary = binary,
            Config = Accounts + "\nserver_name: GO\n" + RouteTestNodes.ClusterBlock("simp", goRoute, ourRoute),
        }, output);
        await using var ours = RouteTestNodes.StartOurs(Accounts + "\nserver_name: OURS\n" + RouteTestNodes.ClusterBlock("simp", ourRoute, goRoute));
        string ourUrl = $"nats://127.0.0.1:{ours.ClientPort}";
        await using var importer = new NatsConnection(new NatsOpts { Url = importerOnOurs ? ourUrl : go.Url, AuthOpts = new NatsAuthOpts { Username = "i", Password = "i" } });
        await using var publisher = new NatsConnection(new NatsOpts { Url = importerOnOurs ? go.Url : ourUrl, AuthOpts = new NatsAuthOpts { Username = "e", Password = "e" } });
        await importer.ConnectAsync();
        await publisher.ConnectAsync();
        var got = new List<string>();
        var sub = await importer.SubscribeCoreAsync<string>("events.>");
        var reader = Task.Run(async () => { await foreach (var m in sub.Msgs.ReadAllAsync()) lock (got) got.Add(m.Subject + "=" + m.Data); });
        await importer.PingAsync();
        var deadline = DateTime.UtcNow.AddSeconds(15);
        while (DateTime.UtcNow < deadline)
        {
            await publisher.PublishAsync("events.probe", "p");
            await Task.Delay(50);
            lock (got) if (got.Count > 0) break;
        }
        lock (got) got.Clear();
        await publisher.PublishAsync("events.order.1", "placed");
        await publisher.PingAsync();
        deadline = DateTime.UtcNow.AddSeconds(5);
        while (DateTime.UtcNow < deadline) { lock (got) if (got.Any(g => g.StartsWith("events.order", StringComparison.Ordinal))) break; await Task.Delay(10); }
        await Task.Delay(100);
        lock (got) Assert.Equal(["events.order.1=placed"], got.Where(g => !g.StartsWith("events.probe", StringComparison.Ordinal)).ToArray());
        await sub.UnsubscribeAsync();
    }
}
