using System.Net.Sockets;
using Microsoft.Extensions.Logging.Abstractions;
using NatsBroker.Configuration;
using NatsBroker.Server;
using NatsBroker.Tests.Infrastructure;
using NatsBroker.Tests.Server;
using Xunit;

namespace NatsBroker.Tests.Routing;

/// <summary>
/// Publish on one node → RMSG over the route → delivery on the other node allocates nothing per message in steady
/// state: both servers run in this process, so the process-wide count covers the sending route (RouteFanout,
/// SendRouted) and the receiving one (parser, PublishFromRoute, client delivery).
/// </summary>
[Collection(AllocationCollection.Name)]
public class RouteAllocationTests
{
    private static NatsServer Node(int routePort, int? peer)
    {
        var options = new ServerOptions { Host = "127.0.0.1", Port = -1 };
        options.Cluster = new NatsBroker.Configuration.ClusterOptions
        {
            Name = "alloc",
            Host = "127.0.0.1",
            Port = routePort,
            Routes = peer is int p ? [new Uri($"nats-route://127.0.0.1:{p}")] : [],
        };
        var server = new NatsServer(options, NullLogger.Instance);
        server.Start();
        return server;
    }

    private static Socket Connect(int port)
    {
        var s = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp) { NoDelay = true, ReceiveTimeout = 10000 };
        s.Connect("127.0.0.1", port);
        EmbeddedServer.ReadUntil(s, "\r\n"u8);
        s.Send("CONNECT {\"verbose\":false,\"pedantic\":false,\"headers\":true}\r\n"u8);
        return s;
    }

    [Fact]
    public async Task A_message_crossing_a_route_allocates_nothing_per_message_in_steady_state()
    {
        int pa = TestPorts.Next(), pb = TestPorts.Next();
        await using var a = Node(pa, null);
        await using var b = Node(pb, pa);
        var deadline = DateTime.UtcNow.AddSeconds(10);
        while ((a.Cluster!.RemoteCount == 0 || b.Cluster!.RemoteCount == 0) && DateTime.UtcNow < deadline) await Task.Delay(10);

        using var sub = Connect(b.ClientPort);
        sub.Send("SUB bench.> 1\r\nPING\r\n"u8);
        EmbeddedServer.ReadUntil(sub, "PONG\r\n"u8);
        using var pub = Connect(a.ClientPort);
        // Interest crosses asynchronously: publish probes until one arrives on B.
        var probe = new byte[4096];
        deadline = DateTime.UtcNow.AddSeconds(10);
        sub.ReceiveTimeout = 100;
        while (true)
        {
            pub.Send("PUB bench.probe 1\r\nx\r\nPING\r\n"u8);
            EmbeddedServer.ReadUntil(pub, "PONG\r\n"u8);
            try
            {
                if (sub.Receive(probe) > 0) break;
            }
            catch (SocketException) when (DateTime.UtcNow < deadline)
            {
            }
        }
        // Drain any further probes, then measure.
        await Task.Delay(200);
        try { while (sub.Available > 0) sub.Receive(probe); } catch (SocketException) { }
        sub.ReceiveTimeout = 10000;

        double perMessage = PublishDeliverLoop.AllocatedPerMessage(pub, sub);
        Assert.True(perMessage < 0.5, $"{perMessage:F3} B/msg allocated over 200k messages crossing the route");
    }
}
