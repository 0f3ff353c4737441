using System.Net;
using System.Net.Sockets;
using System.Text;
using System.Text.Json;
using NATS.NKeys;
using NatsBroker.Gateways.Link;
using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Gateways;

/// <summary>
/// ADR-55 beyond the signature itself: <c>proxy_required</c> per user, a trusted key removed on reload, and /varz
/// listing the trusted keys (nats-server 2.12 <c>proxies</c>) and the connected gateways (ours).
/// </summary>
[Collection("Gateways")]
public sealed class ProxyRequirementTests(ITestOutputHelper output)
{
    private static async Task<Socket> Open(EndPoint endPoint)
    {
        var socket = endPoint is UnixDomainSocketEndPoint
            ? new Socket(AddressFamily.Unix, SocketType.Stream, ProtocolType.Unspecified)
            : new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
        await socket.ConnectAsync(endPoint);
        return socket;
    }

    private static Task<string> ReadLine(Socket socket) => SocketLines.ReadLineAsync(socket);

    /// <summary>True when the peer closes (read returns 0) within 10 s.</summary>
    private static async Task<bool> ClosedByPeer(Socket socket)
    {
        var buffer = new byte[256];
        using var cts = new CancellationTokenSource(TimeSpan.FromSeconds(10));
        try
        {
            while (await socket.ReceiveAsync(buffer, SocketFlags.None, cts.Token) > 0) { }
            return true;
        }
        catch (SocketException)
        {
            return true;
        }
        catch (OperationCanceledException)
        {
            return false;
        }
    }

    /// <summary>Connects over the core's Unix socket as a gateway signing with <paramref name="proxy"/>; returns after PONG.</summary>
    private static async Task<Socket> ConnectThroughProxy(ServerProcess server, KeyPair proxy, string connectJson)
    {
        var socket = await Open(new UnixDomainSocketEndPoint(server.UnixSocketPath!));
        var info = await ReadLine(socket);
        var nonce = JsonDocument.Parse(info[5..]).RootElement.GetProperty("nonce").GetString();
        using var signer = new ProxySigner(proxy.GetSeed());
        var client = new Contracts.Gateways.ProxiedClient { Gateway = "test-gateway", Ip = "203.0.113.5", Port = 5000 };
        await socket.SendAsync(CoreLink.RewriteConnect(Encoding.UTF8.GetBytes($"CONNECT {connectJson}"), signer, nonce, client)!);
        await socket.SendAsync("PING\r\n"u8.ToArray());
        Assert.Equal("PONG", await ReadLine(socket));
        return socket;
    }

    /// <summary>Sends CONNECT + PING directly over TCP and returns the first line after INFO.</summary>
    private static async Task<string> ConnectDirect(ServerProcess server, string connectJson)
    {
        using var socket = await Open(new IPEndPoint(IPAddress.Loopback, server.Port));
        Assert.StartsWith("INFO ", await ReadLine(socket));
        await socket.SendAsync(Encoding.UTF8.GetBytes($"CONNECT {connectJson}\r\nPING\r\n"));
        return await ReadLine(socket);
    }

    private static async Task<JsonElement> Get(ServerProcess server, string pathAndQuery)
    {
        var connz = await GatewayTestHelpers.ConnzUri(server);
        using var http = new HttpClient();
        return JsonDocument.Parse(await http.GetStringAsync(new Uri(connz, pathAndQuery))).RootElement;
    }

    private static async Task<string?> ClosedReason(ServerProcess server, string name)
    {
        for (int i = 0; i < 100; i++)
        {
            var closed = await Get(server, "/connz?state=closed");
            foreach (var c in closed.GetProperty("connections").EnumerateArray())
            {
                if (c.TryGetProperty("name", out var n) && n.GetString() == name) return c.GetProperty("reason").GetString();
            }
            await Task.Delay(50);
        }
        return null;
    }

    [Fact]
    public async Task Proxy_required_user_is_refused_directly_and_accepted_through_a_trusted_proxy()
    {
        using var proxy = KeyPair.CreatePair(PrefixByte.User);
        var config = $$"""
            proxies { trusted = [ { key: "{{proxy.GetPublicKey()}}" } ] }
            authorization {
              users = [
                { user: plain, password: p1 }
                { user: guarded, password: p2, proxy_required: true }
                { user: explicit, password: p3, proxy_required: false }
              ]
            }
            """;
        await using var server = await ServerProcess.StartAsync(ServerKind.Ours,
            new ServerStartOptions { Config = config, UnixSocket = true, Monitoring = true }, output);

        Assert.Equal("PONG", await ConnectDirect(server, """{"verbose":false,"user":"plain","pass":"p1"}"""));
        Assert.Equal("PONG", await ConnectDirect(server, """{"verbose":false,"user":"explicit","pass":"p3"}"""));
        // nats-server 2.12: the same nondescript error; the closed connection's reason says why.
        Assert.Equal("-ERR 'Authorization Violation'", await ConnectDirect(server, """{"verbose":false,"name":"direct-guarded","user":"guarded","pass":"p2"}"""));
        Assert.Equal("Proxy Required", await ClosedReason(server, "direct-guarded"));

        using var viaProxy = await ConnectThroughProxy(server, proxy, """{"verbose":false,"name":"proxied-guarded","user":"guarded","pass":"p2"}""");
        var connz = await Get(server, "/connz?auth=1");
        var conn = Assert.Single(connz.GetProperty("connections").EnumerateArray(), c => c.GetProperty("name").GetString() == "proxied-guarded");
        Assert.Equal("guarded", conn.GetProperty("authorized_user").GetString());
    }

    [Fact]
    public async Task Single_user_proxy_required_applies_to_that_user()
    {
        using var proxy = KeyPair.CreatePair(PrefixByte.User);
        var config = $$"""
            proxies { trusted = [ { key: "{{proxy.GetPublicKey()}}" } ] }
            authorization { user: solo, password: pw, proxy_required: true }
            """;
        await using var server = await ServerProcess.StartAsync(ServerKind.Ours,
            new ServerStartOptions { Config = config, UnixSocket = true, Monitoring = true }, output);
        Assert.Equal("-ERR 'Authorization Violation'", await ConnectDirect(server, """{"verbose":false,"user":"solo","pass":"pw"}"""));
        using var ok = await ConnectThroughProxy(server, proxy, """{"verbose":false,"user":"solo","pass":"pw"}""");
    }

    [Fact]
    public async Task Marking_a_user_proxy_required_on_reload_closes_its_direct_connections()
    {
        const string before = "authorization { users = [ { user: u, password: p } ] }";
        const string after = "authorization { users = [ { user: u, password: p, proxy_required: true } ] }";
        await using var server = await ServerProcess.StartAsync(ServerKind.Ours,
            new ServerStartOptions { Config = before, Monitoring = true }, output);
        using var socket = await Open(new IPEndPoint(IPAddress.Loopback, server.Port));
        await ReadLine(socket);
        await socket.SendAsync("CONNECT {\"verbose\":false,\"name\":\"was-fine\",\"user\":\"u\",\"pass\":\"p\"}\r\nPING\r\n"u8.ToArray());
        Assert.Equal("PONG", await ReadLine(socket));

        server.WriteConfig(after);
        server.Reload();
        Assert.Equal("-ERR 'Authorization Violation'", await ReadLine(socket));
        Assert.True(await ClosedByPeer(socket));
        Assert.Equal("Proxy Required", await ClosedReason(server, "was-fine"));
    }

    [Fact]
    public async Task Removing_a_trusted_key_on_reload_closes_that_proxys_connections_only()
    {
        using var kept = KeyPair.CreatePair(PrefixByte.User);
        using var removed = KeyPair.CreatePair(PrefixByte.User);
        string Config(params KeyPair[] keys) =>
            $"proxies {{ trusted = [ {string.Join(", ", keys.Select(k => $"{{ key: \"{k.GetPublicKey()}\" }}"))} ] }}";
        await using var server = await ServerProcess.StartAsync(ServerKind.Ours,
            new ServerStartOptions { Config = Config(kept, removed), UnixSocket = true, Monitoring = true }, output);

        using var viaKept = await ConnectThroughProxy(server, kept, """{"verbose":false,"name":"via-kept"}""");
        using var viaRemoved = await ConnectThroughProxy(server, removed, """{"verbose":false,"name":"via-removed"}""");

        // /varz: nats-server 2.12's trusted list, and ours: which gateways have users connected now.
        var varz = await Get(server, "/varz");
        var trusted = varz.GetProperty("proxies").GetProperty("trusted").EnumerateArray().Select(t => t.GetProperty("key").GetString()).ToList();
        Assert.Equal([kept.GetPublicKey(), removed.GetPublicKey()], trusted);
        var gateways = varz.GetProperty("connected_gateways").EnumerateArray().ToList();
        Assert.Equal(2, gateways.Count);
        Assert.All(gateways, g =>
        {
            Assert.Equal("test-gateway", g.GetProperty("gateway").GetString());
            Assert.Equal(1, g.GetProperty("connections").GetInt32());
        });

        server.WriteConfig(Config(kept));
        server.Reload();
        Assert.Equal("-ERR 'Authorization Violation'", await ReadLine(viaRemoved));
        Assert.True(await ClosedByPeer(viaRemoved));
        Assert.Equal("Proxy Not Trusted", await ClosedReason(server, "via-removed"));

        // The other proxy's user is untouched.
        await viaKept.SendAsync("PING\r\n"u8.ToArray());
        Assert.Equal("PONG", await ReadLine(viaKept));
        varz = await Get(server, "/varz");
        var remaining = Assert.Single(varz.GetProperty("connected_gateways").EnumerateArray());
        Assert.Equal(kept.GetPublicKey(), remaining.GetProperty("key").GetString());
    }

    [Fact]
    public async Task Varz_has_no_proxy_fields_without_proxies()
    {
        await using var server = await ServerProcess.StartAsync(ServerKind.Ours, new ServerStartOptions { Monitoring = true }, output);
        var varz = await Get(server, "/varz");
        Assert.False(varz.TryGetProperty("proxies", out _));
        Assert.False(varz.TryGetProperty("connected_gateways", out _));
    }
}
