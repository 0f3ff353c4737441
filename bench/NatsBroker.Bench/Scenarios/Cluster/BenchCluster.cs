using System.Diagnostics;
using System.Globalization;
using System.Net;
using System.Text.Json.Nodes;
using NatsBroker.Bench.Raw;

namespace NatsBroker.Bench.Scenarios.Cluster;

/// <summary>
/// The ports of one 3-node cluster, chosen before node 1 starts (the harness starts node 1 with
/// <see cref="NodeArgs"/>, so every node's route list must be known then).
/// </summary>
internal sealed record ClusterPlan(int[] ClusterPorts, int[] MonitorPorts)
{
    public const int Nodes = 3;

    public static ClusterPlan Allocate()
    {
        var cluster = new int[Nodes];
        var monitor = new int[Nodes];
        for (int i = 0; i < Nodes; i++)
        {
            cluster[i] = Infra.ServerProcess.FreePort();
            monitor[i] = Infra.ServerProcess.FreePort();
        }

        return new ClusterPlan(cluster, monitor);
    }

    /// <summary>
    /// Flags of node <paramref name="node"/> (0-based): a cluster listener, the cluster name and the other two
    /// nodes as explicit routes (a full mesh: every node solicits the others, so no route depends on gossip), and a
    /// monitor port for /routez. The same flags nats-server takes (opts.go:ConfigureOptions, "cluster",
    /// "cluster_name", "routes", "m") and ours parses like it.
    /// </summary>
    public IReadOnlyList<string> NodeArgs(int node)
    {
        string Url(int i) => "nats://127.0.0.1:" + ClusterPorts[i].ToString(CultureInfo.InvariantCulture);
        var routes = Enumerable.Range(0, Nodes).Where(i => i != node).Select(Url);
        return
        [
            "--cluster", Url(node),
            "--cluster_name", "bench",
            "--routes", string.Join(',', routes),
            "-m", MonitorPorts[node].ToString(CultureInfo.InvariantCulture),
        ];
    }
}

/// <summary>Readiness of a cluster row: routes up between every pair of nodes, and a subscriber's interest known where it is published.</summary>
internal static class BenchCluster
{
    private static int s_probeSeq;

    /// <summary>
    /// Waits until the mesh carries messages both ways it is used: for every pair (a, b), a subscriber on b sees a
    /// probe published on a. A route's interest is exchanged when the route comes up (route.go:sendSubsToRoute), so
    /// a probe that arrives proves the route between those two nodes works; routes do not forward to a third node,
    /// so three pairs prove a full mesh.
    /// </summary>
    public static void WaitMesh(ScenarioContext ctx, IReadOnlyList<IPEndPoint> nodes)
    {
        for (int a = 0; a < nodes.Count; a++)
        {
            for (int b = a + 1; b < nodes.Count; b++)
            {
                using var sub = ctx.ConnectTo(nodes[b], "mesh-sub");
                WaitInterest(ctx, sub, nodes[a]);
            }
        }
    }

    /// <summary>
    /// Waits until <paramref name="sub"/>'s subscriptions are known on the node at <paramref name="from"/>. The
    /// connection subscribes a probe subject after its real ones; its server sends the route interest (RS+) in the
    /// order it processed the SUBs on one route connection (one route per peer on a 2.9 node; nats-server 2.14 pins
    /// an account to one pooled route, route.go:computeRoutePoolIdx), so a probe published on <paramref name="from"/>
    /// arriving proves the earlier SUBs are known there too. Then the probe subscription is removed, and everything
    /// up to a PONG is read: probes still in flight are dropped, any other message fails the run (nothing but
    /// probes may be published yet).
    /// </summary>
    public static void WaitInterest(ScenarioContext ctx, RawConnection sub, IPEndPoint from)
    {
        int seq = Interlocked.Increment(ref s_probeSeq);
        string subject = $"bench.probe.{ctx.RunId}.{seq.ToString(CultureInfo.InvariantCulture)}";
        const string Sid = "999999";
        sub.Send($"SUB {subject} {Sid}\r\n");
        sub.Flush();
        var pub = ctx.ConnectTo(from, "probe-pub");
        var stop = new ManualResetEventSlim(false);
        byte[] probe = System.Text.Encoding.ASCII.GetBytes($"PUB {subject} 0\r\n\r\n");
        var publisher = ctx.StartWorker("probe-publisher", () =>
        {
            // Every 10 ms until it arrives: the route may still be connecting, or the interest on its way.
            do
            {
                pub.Send(probe);
            }
            while (!stop.Wait(10));

            pub.Flush();
        });
        var r = sub.Reader;
        while (true)
        {
            var k = r.Next();
            if (k is FrameKind.Msg or FrameKind.HMsg)
            {
                CheckProbe(r, subject);
                break;
            }

            if (k == FrameKind.Err)
            {
                throw new InvalidOperationException("server error while probing routes: " + r.LineText);
            }
        }

        stop.Set();
        ctx.Join(publisher, "probe publisher");
        pub.Dispose();
        sub.Send($"UNSUB {Sid}\r\nPING\r\n");
        while (true)
        {
            var k = r.Next();
            if (k == FrameKind.Pong)
            {
                break;
            }

            if (k is FrameKind.Msg or FrameKind.HMsg)
            {
                CheckProbe(r, subject);
            }
            else if (k == FrameKind.Err)
            {
                throw new InvalidOperationException("server error while probing routes: " + r.LineText);
            }
        }
    }

    private static void CheckProbe(FrameReader r, string subject)
    {
        if (!r.Subject.SequenceEqual(System.Text.Encoding.ASCII.GetBytes(subject)))
        {
            throw new InvalidDataException($"unexpected message on {System.Text.Encoding.ASCII.GetString(r.Subject)} while probing {subject}");
        }
    }

    /// <summary>
    /// Waits (bounded by the run) until every node's /routez shows num_routes of at least 2: both peers connected
    /// (monitor.go:Routez counts each route connection; nats-server 2.14 counts each pooled one, so more). Returns the
    /// counts for the note. The probes of <see cref="WaitMesh"/> then prove the routes carry messages.
    /// </summary>
    public static string WaitRoutez(ScenarioContext ctx, ClusterPlan plan)
    {
        using var http = new HttpClient { Timeout = TimeSpan.FromSeconds(2) };
        while (true)
        {
            var counts = plan.MonitorPorts.Select(p => NumRoutes(http, p)).ToArray();
            if (counts.All(c => c >= ClusterPlan.Nodes - 1))
            {
                return string.Join('/', counts);
            }

            ctx.ThrowIfFailed();
            if (Stopwatch.GetTimestamp() > ctx.Deadline)
            {
                throw new TimeoutException("timed out waiting for /routez num_routes >= 2 on every node: " + string.Join('/', counts.Select(c => c < 0 ? "?" : c.ToString(CultureInfo.InvariantCulture))));
            }

            Thread.Sleep(20);
        }
    }

    /// <summary>num_routes from one node's /routez, or -1 when it does not answer or has no count.</summary>
    private static int NumRoutes(HttpClient http, int port)
    {
        try
        {
            string body = http.GetStringAsync(new Uri($"http://127.0.0.1:{port.ToString(CultureInfo.InvariantCulture)}/routez")).GetAwaiter().GetResult();
            return JsonNode.Parse(body)?["num_routes"]?.GetValue<int>() ?? -1;
        }
        catch (Exception ex) when (ex is HttpRequestException or TaskCanceledException or System.Text.Json.JsonException or InvalidOperationException or FormatException)
        {
            return -1;
        }
    }

    /// <summary>Milliseconds since <paramref name="startTs"/> (a Stopwatch timestamp), for the note.</summary>
    public static long MillisSince(long startTs) => (Stopwatch.GetTimestamp() - startTs) * 1000 / Stopwatch.Frequency;
}
