using Microsoft.Extensions.Logging.Abstractions;
using NATS.Client.Core;
using NatsBroker.Configuration;
using NatsBroker.Server;
using NatsBroker.Tests.Gateways;
using NatsBroker.Tests.Infrastructure;
using Xunit;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Routing;

/// <summary>
/// <c>cluster { tls {} }</c>: routes over mutual TLS with nats-server 2.14.5 in both directions, and a peer whose
/// certificate is not from the cluster's CA is refused.
/// </summary>
public sealed class RouteTlsTests(ITestOutputHelper output) : IDisposable
{
    private readonly TestPki _pki = new();

    public void Dispose() => _pki.Dispose();

    private string ClusterBlock(string name, int listen, int route, (string Cert, string Key) cert, string ca) => $$"""
        server_name: {{name}}
        cluster {
          name: tlsc
          listen: 127.0.0.1:{{listen}}
          routes: [nats-route://127.0.0.1:{{route}}]
          tls { cert_file: "{{cert.Cert}}", key_file: "{{cert.Key}}", ca_file: "{{ca}}", timeout: 2 }
        }
        """;

    private NatsServer StartOurs(string conf)
    {
        var dir = Path.Combine(_pki.Dir, "ours-" + Guid.NewGuid().ToString("N")[..6] + ".conf");
        File.WriteAllText(dir, conf);
        var options = ConfigLoader.Load(dir);
        options.Host = "127.0.0.1";
        options.Port = -1;
        var server = new NatsServer(options, NullLogger.Instance);
        server.Start();
        return server;
    }

    private (string, string) RouteCert(string name) =>
        _pki.Issue(name, "CN=" + name, server: true, dns: ["localhost"], ip: System.Net.IPAddress.Loopback, serverAndClient: true);

    [Fact]
    public async Task Routes_over_mutual_TLS_carry_messages_between_ours_and_nats_server()
    {
        string binary = Prerequisites.RequireOracle214(output);
        int goRoute = TestPorts.Next(), ourRoute = TestPorts.Next();
        await using var go = await ServerProcess.StartAsync(ServerKind.Go, new ServerStartOptions
        {
            GoBinary = binary,
            Config = ClusterBlock("GO", goRoute, ourRoute, RouteCert("go"), _pki.CaFile),
        }, output);
        await using var ours = StartOurs(ClusterBlock("OURS", ourRoute, goRoute, RouteCert("ours"), _pki.CaFile));

        var deadline = DateTime.UtcNow.AddSeconds(10);
        while (ours.Cluster!.Registered.Count == 0 && DateTime.UtcNow < deadline) await Task.Delay(20);
        Assert.Single(ours.Cluster.Registered);
        Assert.True(ours.Cluster.Registered[0].RemoteInfo!.TlsRequired);

        await using var cg = new NatsConnection(new NatsOpts { Url = go.Url });
        await using var co = new NatsConnection(new NatsOpts { Url = $"nats://127.0.0.1:{ours.ClientPort}" });
        await cg.ConnectAsync();
        await co.ConnectAsync();
        int got = 0;
        var sub = await cg.SubscribeCoreAsync<string>("secure");
        var reader = Task.Run(async () => { await foreach (var _ in sub.Msgs.ReadAllAsync()) Interlocked.Increment(ref got); });
        await cg.PingAsync();
        deadline = DateTime.UtcNow.AddSeconds(10);
        while (Volatile.Read(ref got) == 0 && DateTime.UtcNow < deadline)
        {
            await co.PublishAsync("secure", "x");
            await Task.Delay(20);
        }
        Assert.True(Volatile.Read(ref got) > 0, "no message crossed the TLS route");
        await sub.UnsubscribeAsync();
    }

    [Fact]
    public async Task A_peer_with_a_certificate_from_another_CA_is_refused()
    {
        using var other = new TestPki();
        var stranger = other.Issue("stranger", "CN=stranger", server: true, dns: ["localhost"], ip: System.Net.IPAddress.Loopback, serverAndClient: true);
        int pa = TestPorts.Next(), pb = TestPorts.Next();
        await using var a = StartOurs(ClusterBlock("A", pa, pb, RouteCert("a"), _pki.CaFile));
        await using var b = StartOurs(ClusterBlock("B", pb, pa, stranger, other.CaFile));
        await Task.Delay(2500);
        Assert.Empty(a.Cluster!.Registered);
        Assert.Empty(b.Cluster!.Registered);
    }
}

/// <summary>Cluster permissions: import limits the interest we announce, export the interest we accept (routes.md 4.5).</summary>
public sealed class RoutePermissionTests(ITestOutputHelper output)
{
    [Fact]
    public async Task Import_and_export_filter_interest_exchanged_with_nats_server()
    {
        string binary = Prerequisites.RequireOracle214(output);
        int goRoute = TestPorts.Next(), ourRoute = TestPorts.Next(), goHttp = TestPorts.Next();
        await using var go = await ServerProcess.StartAsync(ServerKind.Go, new ServerStartOptions
        {
            GoBinary = binary,
            Config = $"server_name: GO\nhttp: 127.0.0.1:{goHttp}\ncluster {{ name: perm, listen: 127.0.0.1:{goRoute}, routes: [nats-route://127.0.0.1:{ourRoute}] }}\n",
        }, output);
        using var dir = new NatsBroker.Tests.Configuration.TempDir();
        string conf = Path.Combine(dir.Path, "ours.conf");
        File.WriteAllText(conf, $"server_name: OURS\ncluster {{ name: perm, listen: 127.0.0.1:{ourRoute}, routes: [nats-route://127.0.0.1:{goRoute}], permissions {{ import: [\"in.>\"], export: {{ allow: [\"out.>\"] }} }} }}\n");
        var options = ConfigLoader.Load(conf);
        options.Host = "127.0.0.1";
        options.Port = -1;
        await using var ours = new NatsServer(options, NullLogger.Instance);
        ours.Start();
        var deadline = DateTime.UtcNow.AddSeconds(10);
        while (ours.Cluster!.Registered.Count == 0 && DateTime.UtcNow < deadline) await Task.Delay(20);
        var route = Assert.Single(ours.Cluster.Registered);
        Assert.Equal(["in.>"], route.RemoteInfo is null ? null : ours.Cluster.Options.Permissions!.Publish!.Allow);

        await using var co = new NatsConnection(new NatsOpts { Url = $"nats://127.0.0.1:{ours.ClientPort}" });
        await using var cg = new NatsConnection(new NatsOpts { Url = go.Url });
        await co.ConnectAsync();
        await cg.ConnectAsync();
        await using var s1 = await co.SubscribeCoreAsync<string>("in.x");
        await using var s2 = await co.SubscribeCoreAsync<string>("other.x");
        await using var s3 = await cg.SubscribeCoreAsync<string>("out.y");
        await using var s4 = await cg.SubscribeCoreAsync<string>("elsewhere.y");
        await co.PingAsync();
        await cg.PingAsync();

        using var http = new HttpClient();
        List<string> goSubs = [];
        deadline = DateTime.UtcNow.AddSeconds(10);
        while (DateTime.UtcNow < deadline)
        {
            using var doc = System.Text.Json.JsonDocument.Parse(await http.GetStringAsync($"http://127.0.0.1:{goHttp}/routez?subs=1"));
            goSubs = [.. doc.RootElement.GetProperty("routes").EnumerateArray()
                .SelectMany(r => r.TryGetProperty("subscriptions_list", out var l) ? l.EnumerateArray().Select(x => x.GetString()!) : [])];
            if (goSubs.Contains("in.x") && route.SnapshotRemoteSubscriptions().Any(s => s.Subject == "out.y")) break;
            await Task.Delay(50);
        }
        output.WriteLine("go sees: " + string.Join(", ", goSubs.Where(s => !s.StartsWith("$SYS", StringComparison.Ordinal))));
        Assert.Contains("in.x", goSubs);
        Assert.DoesNotContain("other.x", goSubs);
        // nats-server read our INFO's permissions: its /routez shows them on its route to us.
        using (var doc = System.Text.Json.JsonDocument.Parse(await http.GetStringAsync($"http://127.0.0.1:{goHttp}/routez")))
        {
            var r = doc.RootElement.GetProperty("routes")[0];
            Assert.Equal(["in.>"], r.GetProperty("import").GetProperty("allow").EnumerateArray().Select(x => x.GetString()!).ToArray());
            Assert.Equal(["out.>"], r.GetProperty("export").GetProperty("allow").EnumerateArray().Select(x => x.GetString()!).ToArray());
        }
        var ourRemote = route.SnapshotRemoteSubscriptions().Select(s => s.Subject).ToList();
        Assert.Contains("out.y", ourRemote);
        Assert.DoesNotContain("elsewhere.y", ourRemote);
    }
}
