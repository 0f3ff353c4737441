using System.Diagnostics;
using System.Net;
using NatsBroker.Bench.Infra;

namespace NatsBroker.Bench.Scenarios.Cluster;

/// <summary>
/// A workload run across a fresh 3-node full-mesh cluster of one kind (3 x ours or 3 x nats-server, issue 46). The
/// harness starts node 1 with the cluster flags (<see cref="ServerArgsFor"/>); this starts nodes 2 and 3 the same
/// way, waits until every node's /routez shows both peers and the mesh carries messages between every pair, then places the inner workload's connections on
/// nodes by their names (<paramref name="node"/>: connection name → 0-based node) and, before any traffic, waits
/// until each subscriber's interest has reached the node its messages come from (<paramref name="probeFrom"/>).
/// Server CPU and peak RSS are summed over the three nodes.
/// </summary>
internal sealed class ClusterScenario(IScenario inner, string name, string title, Func<string, int> node, Func<string, int> probeFrom) : IScenario
{
    private ClusterPlan? _plan;

    public string Name => name;

    public string Title => title;

    public string Generator => inner.Generator;

    public int PayloadBytes => inner.PayloadBytes;

    public bool NeedsJetStream => false;

    public bool ReportsLatency => inner.ReportsLatency;

    public long DefaultCount => inner.DefaultCount;

    /// <summary>Node 1's flags; a new plan (fresh ports) for every run, since every run is a new cluster.</summary>
    public IReadOnlyList<string> ServerArgsFor(string side)
    {
        _plan = ClusterPlan.Allocate();
        return _plan.NodeArgs(0);
    }

    public ScenarioResult Run(ScenarioContext ctx)
    {
        var plan = _plan ?? throw new InvalidOperationException("cluster plan missing: ServerArgsFor was not called");
        _plan = null;
        var spec = ctx.Spec ?? throw new InvalidOperationException("the harness did not say how to start more nodes");
        string tmp = ctx.TmpRoot ?? BenchTemp.Dir("cluster");
        long t0 = Stopwatch.GetTimestamp();
        var nodes = new List<IPEndPoint> { ctx.Endpoint };
        var others = new List<ServerProcess>();
        for (int i = 1; i < ClusterPlan.Nodes; i++)
        {
            var p = ServerProcess.Start(spec, jetStream: false, tmp, TimeSpan.FromSeconds(20), plan.NodeArgs(i));
            ctx.Track(p);
            ctx.AlsoMeasure(p.Pid);
            others.Add(p);
            nodes.Add(p.Endpoint);
        }

        string routez = BenchCluster.WaitRoutez(ctx, plan);
        BenchCluster.WaitMesh(ctx, nodes);
        long meshMs = BenchCluster.MillisSince(t0);
        ctx.Placement = n => nodes[node(n)];
        ctx.OnSubscribed = (n, c) => BenchCluster.WaitInterest(ctx, c, nodes[probeFrom(n)]);
        var r = inner.Run(ctx);
        for (int i = 0; i < others.Count; i++)
        {
            if (others[i].HasExited)
            {
                throw new InvalidOperationException($"node {i + 2} exited during the run: {others[i].LogTail()}");
            }
        }

        string cluster = $"mesh {meshMs} ms, routez num_routes {routez}";
        r.Note = r.Note is null ? cluster : r.Note + "; " + cluster;
        return r;
    }
}
