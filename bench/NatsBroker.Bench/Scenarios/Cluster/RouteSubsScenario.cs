using System.Globalization;
using System.Text;
using NatsBroker.Bench.Raw;

namespace NatsBroker.Bench.Scenarios.Cluster;

/// <summary>
/// Memory of many subscriptions across a cluster (issue 46, optional row): N distinct plain subjects subscribed
/// from 12 connections, 4 per node, so every node holds a third locally and learns the other two thirds over its
/// routes (RS+, route.go:sendRouteSubProtos). The timed part is subscribing until every node knows every
/// subscription: each connection's interest is probed from both other nodes (the hook's name says which node
/// probes, "from0" ... "from2"). The rate column is subscriptions per second; the RSS column is the peak RSS summed
/// over the three nodes, and the note the summed current RSS (VmRSS) once all interest is in place.
/// </summary>
internal sealed class RouteSubsScenario(string name, string title, long defaultCount) : IScenario
{
    private const int ConnsPerNode = 4;

    public string Name => name;

    public string Title => title;

    public string Generator => "raw";

    public int PayloadBytes => 0;

    public bool NeedsJetStream => false;

    public bool ReportsLatency => false;

    public long DefaultCount => defaultCount;

    /// <summary>Connection "subs{node}{k}": on node <c>node</c>.</summary>
    public static int NodeOf(string conn) => conn.StartsWith("subs", StringComparison.Ordinal) ? conn[4] - '0' : 0;

    /// <summary>The hook names "from{node}": probe from that node.</summary>
    public static int ProbeFrom(string hook) => hook.StartsWith("from", StringComparison.Ordinal) ? hook[4] - '0' : 0;

    public ScenarioResult Run(ScenarioContext ctx)
    {
        int conns = ClusterPlan.Nodes * ConnsPerNode;
        long per = Math.Max(1, ctx.Count / conns);
        var list = new List<(RawConnection Conn, int Node)>();
        for (int node = 0; node < ClusterPlan.Nodes; node++)
        {
            for (int k = 0; k < ConnsPerNode; k++)
            {
                list.Add((ctx.Connect($"subs{node}{k}"), node));
            }
        }

        long before = ctx.ServerRssBytes();
        ctx.MarkStart();
        var threads = new Thread[list.Count];
        for (int c = 0; c < list.Count; c++)
        {
            int idx = c;
            var conn = list[c].Conn;
            threads[c] = ctx.StartWorker("subscriber", () => Subscribe(conn, idx, per));
        }

        foreach (var t in threads)
        {
            ctx.Join(t, "subscribers' SUBs sent");
        }

        // Each connection's SUBs, then its probes: the last SUB is known on a node once the probe from it arrives.
        foreach (var (conn, node) in list)
        {
            conn.Flush();
            for (int from = 0; from < ClusterPlan.Nodes; from++)
            {
                if (from != node)
                {
                    ctx.Subscribed("from" + from.ToString(CultureInfo.InvariantCulture), conn);
                }
            }
        }

        ctx.MarkEnd();
        long after = ctx.ServerRssBytes();
        var r = ctx.Result;
        r.Messages = per * conns;
        r.Deliveries = r.Messages;
        r.Note = $"{r.Messages} subs: summed VmRSS {before / 1048576.0:0.0} MB before, {after / 1048576.0:0.0} MB after ({(after - before) * 1.0 / r.Messages:0} B per subscription over 3 nodes)";
        return r;
    }

    private static string Subject(int conn, long i) => $"bench.subs.{conn.ToString("D2", CultureInfo.InvariantCulture)}.{i.ToString("D7", CultureInfo.InvariantCulture)}";

    /// <summary>Sends <paramref name="per"/> SUBs in 256 KB writes (sids 1..per, each a fresh subject).</summary>
    private static void Subscribe(RawConnection conn, int idx, long per)
    {
        var sb = new StringBuilder(300 * 1024);
        for (long i = 0; i < per; i++)
        {
            sb.Append("SUB ").Append(Subject(idx, i)).Append(' ').Append(i + 1).Append("\r\n");
            if (sb.Length > 256 * 1024)
            {
                conn.Send(Encoding.ASCII.GetBytes(sb.ToString()));
                sb.Clear();
            }
        }

        conn.Send(Encoding.ASCII.GetBytes(sb.ToString()));
    }
}
