using System.Net.Sockets;
using System.Text;
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
        while ((a.Cluster!.Registered.Count == 0 || b.Cluster!.Registered.Count == 0) && DateTime.UtcNow < deadline) await Task.Delay(10);

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

        const int batch = 1000;
        var sb = new StringBuilder();
        for (int i = 0; i < batch; i++) sb.Append("PUB bench.x 16\r\n0123456789abcdef\r\n");
        var batchBytes = Encoding.ASCII.GetBytes(sb.ToString());
        int perMsg = "MSG bench.x 1 16\r\n0123456789abcdef\r\n".Length;
        var recv = new byte[1 << 20];

        void Run(int batches)
        {
            const int window = 20;
            for (int w = 0; w < batches; w += window)
            {
                long expected = (long)window * batch * perMsg, got = 0;
                var sender = Task.Run(() => { for (int i = 0; i < window; i++) pub.Send(batchBytes); });
                while (got < expected)
                {
                    int n = sub.Receive(recv);
                    Assert.True(n > 0, "subscriber connection closed");
                    got += n;
                }
                sender.Wait();
                Assert.Equal(expected, got);
            }
        }

        Run(200);
        Run(200);
        long before = GC.GetTotalAllocatedBytes(precise: true);
        const int measured = 200;
        Run(measured);
        long allocated = GC.GetTotalAllocatedBytes(precise: true) - before;
        double perMessage = (double)allocated / (measured * batch);
        Assert.True(perMessage < 0.5, $"allocated {allocated} bytes for {measured * batch} messages ({perMessage:F3} B/msg)");
    }
}
