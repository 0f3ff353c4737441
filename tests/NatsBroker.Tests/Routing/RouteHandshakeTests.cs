using System.Net.Sockets;
using System.Text;
using System.Text.Json;
using NatsBroker.Server;
using NatsBroker.Tests.Infrastructure;
using Xunit;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Routing;

/// <summary>
/// The route port's handshake as a raw peer sees it, ours beside nats-server 2.14.5 (differential): the INFO it
/// sends first, and what it answers to a client on the wrong port, an op before CONNECT, a wrong cluster name and
/// wrong route credentials (route.go processRouteConnect, parser.go expectConnect).
/// </summary>
public sealed class RouteHandshakeTests(ITestOutputHelper output)
{
    private const string Auth = "authorization { user: ruser, password: rpass }";

    private sealed class Node(int routePort, IAsyncDisposable server) : IAsyncDisposable
    {
        public int RoutePort { get; } = routePort;
        public ValueTask DisposeAsync() => server.DisposeAsync();
    }

    private async Task<Node> Start(bool go, string extra = "")
    {
        int port = TestPorts.Next();
        string conf = $"server_name: {(go ? "GO" : "OURS")}\ncluster {{\n  name: hs\n  listen: 127.0.0.1:{port}\n  {extra}\n}}\n";
        if (go)
        {
            string binary = Prerequisites.RequireOracle214(output);
            return new Node(port, await ServerProcess.StartAsync(ServerKind.Go, new ServerStartOptions { GoBinary = binary, Config = conf }, output));
        }
        NatsServer ours = RouteTestNodes.StartOurs(conf);
        return new Node(port, ours);
    }

    /// <summary>Connects to the route port, reads its INFO, sends <paramref name="send"/>, returns the INFO and
    /// every line received until the peer closes (or 3 s pass).</summary>
    private static async Task<(JsonElement Info, List<string> Lines, bool Closed)> Exchange(int port, string send)
    {
        using var s = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
        await s.ConnectAsync("127.0.0.1", port);
        string infoLine = await SocketLines.ReadLineAsync(s);
        Assert.StartsWith("INFO ", infoLine, StringComparison.Ordinal);
        var info = JsonDocument.Parse(infoLine[5..]).RootElement.Clone();
        await s.SendAsync(Encoding.ASCII.GetBytes(send));
        var lines = new List<string>();
        var buf = new byte[4096];
        var text = new StringBuilder();
        bool closed = false;
        using var cts = new CancellationTokenSource(TimeSpan.FromSeconds(3));
        try
        {
            while (true)
            {
                int n = await s.ReceiveAsync(buf, SocketFlags.None, cts.Token);
                if (n == 0)
                {
                    closed = true;
                    break;
                }
                text.Append(Encoding.ASCII.GetString(buf, 0, n));
            }
        }
        catch (OperationCanceledException)
        {
        }
        catch (SocketException)
        {
            closed = true;
        }
        lines.AddRange(text.ToString().Split("\r\n", StringSplitOptions.RemoveEmptyEntries));
        return (info, lines, closed);
    }

    private static string Errors(List<string> lines) => string.Join(" | ", lines.Where(l => l.StartsWith("-ERR", StringComparison.Ordinal)));

    public static TheoryData<string, string, string> Refusals => new()
    {
        { "client CONNECT on the route port", "", "CONNECT {\"verbose\":false,\"lang\":\"go\",\"version\":\"1.0\"}\r\nPING\r\n" },
        { "an op before CONNECT", "", "PING\r\n" },
        { "a wrong cluster name", "", "CONNECT {\"name\":\"NPEER\",\"cluster\":\"other\",\"headers\":true}\r\nPING\r\n" },
        { "wrong route credentials", Auth, "CONNECT {\"name\":\"NPEER\",\"cluster\":\"hs\",\"user\":\"ruser\",\"pass\":\"nope\"}\r\nPING\r\n" },
        { "no route credentials where some are required", Auth, "CONNECT {\"name\":\"NPEER\",\"cluster\":\"hs\"}\r\nPING\r\n" },
    };

    [Theory]
    [MemberData(nameof(Refusals))]
    public async Task Refusals_read_as_nats_servers(string what, string extra, string send)
    {
        await using var go = await Start(go: true, extra);
        await using var ours = await Start(go: false, extra);
        var (_, goLines, goClosed) = await Exchange(go.RoutePort, send);
        var (_, ourLines, ourClosed) = await Exchange(ours.RoutePort, send);
        output.WriteLine($"{what}: go [{Errors(goLines)}] ours [{Errors(ourLines)}]");
        Assert.NotEmpty(Errors(goLines));
        Assert.Equal(Errors(goLines), Errors(ourLines));
        Assert.True(goClosed);
        Assert.True(ourClosed, "ours kept the connection open");
    }

    [Fact]
    public async Task A_correct_peer_is_accepted_and_answered()
    {
        await using var go = await Start(go: true, Auth);
        await using var ours = await Start(go: false, Auth);
        const string send = "CONNECT {\"echo\":true,\"verbose\":false,\"pedantic\":false,\"user\":\"ruser\",\"pass\":\"rpass\",\"headers\":true,\"name\":\"NPEERPEERPEER\",\"cluster\":\"hs\",\"lnoc\":true}\r\nPING\r\n";
        var (goInfo, goLines, _) = await Exchange(go.RoutePort, send);
        var (ourInfo, ourLines, ourClosed) = await Exchange(ours.RoutePort, send);
        output.WriteLine("ours: " + string.Join(" | ", ourLines));
        Assert.Contains("PONG", goLines);
        Assert.Contains("PONG", ourLines);
        Assert.Empty(Errors(ourLines));
        Assert.False(ourClosed);
        // The INFO fields a peer reads (processRouteInfo), with nats-server's values for what both configure.
        foreach (var field in new[] { "server_id", "server_name", "version", "host", "port", "headers", "max_payload", "cluster", "lnoc" })
        {
            Assert.True(ourInfo.TryGetProperty(field, out _), $"our route INFO has no {field}");
        }
        Assert.Equal(goInfo.GetProperty("cluster").GetString(), ourInfo.GetProperty("cluster").GetString());
        Assert.True(ourInfo.GetProperty("auth_required").GetBoolean());
        Assert.Equal(goInfo.GetProperty("auth_required").GetBoolean(), ourInfo.GetProperty("auth_required").GetBoolean());
        // No S2: saying nothing keeps every peer plain (routes.md 2.3). Pooling as 2.14.5 by default.
        Assert.False(ourInfo.TryGetProperty("compression", out _));
        Assert.Equal(goInfo.GetProperty("route_pool_size").GetInt32(), ourInfo.GetProperty("route_pool_size").GetInt32());
    }
}
