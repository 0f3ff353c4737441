using System.Diagnostics;
using System.Net.Http;
using System.Text;
using System.Text.Json;
using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Cluster;

/// <summary>
/// A cluster of real processes on 127.0.0.1, any mix of our core, nats-server 2.9.10 and nats-server 2.14.5: each
/// node has its own config file (<c>server_name</c>, <c>port</c>, <c>http</c>, <c>cluster { name: tc, listen, routes }</c>)
/// with the route list of a <see cref="RouteLayout"/>. <see cref="WaitForMeshAsync"/> polls every node's
/// <c>/routez</c> until the mesh is complete (no fixed sleeps); nodes can be stopped, killed and started again on the
/// same ports. Dispose kills every node.
/// </summary>
public sealed class TestCluster : IAsyncDisposable
{
    /// <summary>The <c>cluster.name</c> of every node (one name: a mismatch is refused, route.go:processRouteInfo).</summary>
    public const string ClusterName = "tc";

    /// <summary>Default bound of <see cref="WaitForMeshAsync"/>: explicit routes retry every second (route.go:connectToRoute), a mesh forms in one or two.</summary>
    public static readonly TimeSpan MeshTimeout = TimeSpan.FromSeconds(15);

    private readonly List<ClusterNode> _nodes;

    private TestCluster(List<ClusterNode> nodes, RouteLayout layout)
    {
        _nodes = nodes;
        Layout = layout;
    }

    public IReadOnlyList<ClusterNode> Nodes => _nodes;

    public ClusterNode this[int index] => _nodes[index];

    public int Count => _nodes.Count;

    public RouteLayout Layout { get; }

    /// <summary>"Ours,Go29,Go29": the kinds in node order.</summary>
    public string Topology => string.Join(',', _nodes.Select(n => n.Kind));

    /// <summary>Allocates the ports and writes the configs; starts nothing (<see cref="StartAsync"/>, <see cref="ClusterNode.StartAsync"/>).</summary>
    public static TestCluster Create(IReadOnlyList<ClusterNodeKind> kinds, RouteLayout layout = RouteLayout.Full, ITestOutputHelper? log = null)
    {
        var nodes = kinds.Select((kind, i) => new ClusterNode(i, kind, TestPorts.Next(), TestPorts.Next(), TestPorts.Next(), log)).ToList();
        foreach (var node in nodes)
        {
            var peers = layout switch
            {
                RouteLayout.Full => nodes.Where(n => n != node),
                RouteLayout.Chain => nodes.Where(n => n.Index == node.Index - 1),
                _ => throw new ArgumentOutOfRangeException(nameof(layout)),
            };
            node.Config = BuildConfig(node, peers);
        }

        return new TestCluster(nodes, layout);
    }

    /// <summary>Creates, starts every node at once and waits for the full mesh; disposes the nodes when any of it fails.</summary>
    public static async Task<TestCluster> StartMeshedAsync(IReadOnlyList<ClusterNodeKind> kinds, RouteLayout layout = RouteLayout.Full, ITestOutputHelper? log = null)
    {
        var cluster = Create(kinds, layout, log);
        try
        {
            await cluster.StartAsync().ConfigureAwait(false);
            await cluster.WaitForMeshAsync().ConfigureAwait(false);
            return cluster;
        }
        catch
        {
            await cluster.DisposeAsync().ConfigureAwait(false);
            throw;
        }
    }

    private static string BuildConfig(ClusterNode node, IEnumerable<ClusterNode> peers)
    {
        var sb = new StringBuilder();
        sb.Append("server_name: ").Append(node.Name).Append('\n');
        sb.Append("port: ").Append(node.ClientPort).Append('\n');
        sb.Append("http: 127.0.0.1:").Append(node.MonitorPort).Append('\n');
        sb.Append("cluster {\n");
        sb.Append("  name: ").Append(ClusterName).Append('\n');
        sb.Append("  listen: 127.0.0.1:").Append(node.RoutePort).Append('\n');
        sb.Append("  routes: [\n");
        foreach (var peer in peers)
        {
            sb.Append("    ").Append(peer.RouteUrl).Append('\n');
        }

        sb.Append("  ]\n}\n");
        return sb.ToString();
    }

    /// <summary>Starts every node that is not running, all at once (a failed start fails with that node's output).</summary>
    public async Task StartAsync()
    {
        await Task.WhenAll(_nodes.Where(n => !n.IsRunning).Select(async n =>
        {
            try
            {
                await n.StartAsync().ConfigureAwait(false);
            }
            catch (Exception e) when (e is InvalidOperationException or TimeoutException)
            {
                throw new InvalidOperationException($"cluster {Topology}: {n} did not start: {e.Message}", e);
            }
        })).ConfigureAwait(false);
    }

    /// <summary>
    /// Route connections a node holds to one peer once the mesh has settled. A 2.14.5 pair pools: <c>pool_size</c> 3
    /// (DEFAULT_ROUTE_POOL_SIZE) plus the system account pinned by default (opts.go:setBaselineOptions), 4 connections
    /// and 4 <c>/routez</c> entries on each side (observed, docs/design/routes.md section 1). A pair with a 2.9.10 node,
    /// or with our core (stage 1 behaves as 2.9: no <c>route_pool_size</c> in its INFO), has one: 2.14.5 treats the
    /// no-pool peer as 2.9 (route.go:processRouteInfo; routes.md 2.4). When our core pools (stage 2) this changes.
    /// </summary>
    public static int ExpectedConnections(ClusterNodeKind a, ClusterNodeKind b) =>
        a == ClusterNodeKind.Go214 && b == ClusterNodeKind.Go214 ? 4 : 1;

    /// <summary>
    /// Polls every node's <c>/routez</c> until, on each node, the routes' <c>remote_id</c>s are exactly the other
    /// running nodes' server_ids, each with <see cref="ExpectedConnections"/> entries, and <c>num_routes</c> equals
    /// the entries listed. A duplicate route left over from both sides dialling at once (route.go:handleDuplicateRoute)
    /// keeps it waiting, as does a node missing from anyone's list. Fails after <paramref name="timeout"/> with every
    /// node's routez and what is wrong with it. With <paramref name="allRunning"/> false the mesh is that of the
    /// running nodes only (a stopped node's routes must be gone from the others); the result has null for stopped nodes.
    /// </summary>
    public async Task<IReadOnlyList<Routez?>> WaitForMeshAsync(TimeSpan? timeout = null, bool allRunning = true)
    {
        var limit = timeout ?? MeshTimeout;
        var sw = Stopwatch.StartNew();
        while (true)
        {
            var (routez, problems) = await CheckMeshAsync(allRunning).ConfigureAwait(false);
            if (problems.All(p => p is null))
            {
                return routez!;
            }

            if (sw.Elapsed > limit)
            {
                throw new Xunit.Sdk.XunitException(await DescribeAsync(
                    $"cluster {Topology} ({Layout} routes): the mesh{(allRunning ? "" : " of the running nodes")} did not form within {limit.TotalSeconds:0} s "
                    + "(each node must list every other node's server_id as remote_id, 4 connections per 2.14.5 pair, else 1)",
                    problems).ConfigureAwait(false));
            }

            await Task.Delay(100).ConfigureAwait(false);
        }
    }

    /// <summary>Each running node's routez (null if unreachable) and, per node, what keeps the mesh incomplete (null = fine).</summary>
    private async Task<(Routez?[]? Routez, string?[] Problems)> CheckMeshAsync(bool allRunning)
    {
        var running = _nodes.Where(n => n.IsRunning).ToList();
        var problems = new string?[_nodes.Count];
        var all = new Routez?[_nodes.Count];
        foreach (var n in _nodes.Where(n => !n.IsRunning && allRunning))
        {
            problems[n.Index] = "not running";
        }

        foreach (var node in running)
        {
            Routez routez;
            try
            {
                routez = await Routez.GetAsync(node.MonitorPort).ConfigureAwait(false);
            }
            catch (Exception e) when (e is HttpRequestException or TaskCanceledException or JsonException)
            {
                problems[node.Index] = "/routez: " + e.Message;
                continue;
            }

            all[node.Index] = routez;
            var issues = new List<string>();
            if (routez.NumRoutes != routez.Routes.Count)
            {
                issues.Add($"num_routes {routez.NumRoutes} but {routez.Routes.Count} routes listed");
            }

            var byRemote = routez.Routes.GroupBy(r => r.RemoteId).ToDictionary(g => g.Key, g => g.Count());
            foreach (var peer in running.Where(p => p != node))
            {
                var expected = ExpectedConnections(node.Kind, peer.Kind);
                var actual = byRemote.GetValueOrDefault(peer.ServerId ?? "", 0);
                if (actual != expected)
                {
                    issues.Add($"{actual} connection(s) to {peer.Name} ({Routez.Abbrev(peer.ServerId)}), expected {expected}");
                }
            }

            var known = running.Select(p => p.ServerId).ToHashSet();
            foreach (var stray in byRemote.Keys.Where(id => !known.Contains(id)))
            {
                issues.Add($"route to unknown remote_id {Routez.Abbrev(stray)} (a stopped node's old id, or not set)");
            }

            problems[node.Index] = issues.Count == 0 ? null : string.Join("; ", issues);
        }

        return (problems.All(p => p is null) ? all : null, problems);
    }

    /// <summary>A failure message: <paramref name="headline"/>, then per node its kind, ports, routez and problem (and output for a stopped node).</summary>
    public async Task<string> DescribeAsync(string headline, IReadOnlyList<string?>? problems = null)
    {
        var sb = new StringBuilder(headline).Append('\n');
        foreach (var node in _nodes)
        {
            sb.Append("  ").Append(node).Append('\n');
            if (node.IsRunning)
            {
                try
                {
                    sb.Append("    /routez ").Append((await Routez.GetAsync(node.MonitorPort).ConfigureAwait(false)).Summary()).Append('\n');
                }
                catch (Exception e) when (e is HttpRequestException or TaskCanceledException or JsonException)
                {
                    sb.Append("    /routez unavailable: ").Append(e.Message).Append('\n');
                }
            }

            if (problems?[node.Index] is { } problem)
            {
                sb.Append("    problem: ").Append(problem).Append('\n');
            }

            if (!node.IsRunning || node.Kind == ClusterNodeKind.Ours)
            {
                sb.Append("    ").Append(node.OutputTail(1500).Replace("\n", "\n    ", StringComparison.Ordinal)).Append('\n');
            }
        }

        return sb.ToString();
    }

    public async ValueTask DisposeAsync()
    {
        foreach (var node in _nodes)
        {
            node.Kill();
        }

        foreach (var node in _nodes)
        {
            await node.DisposeAsync().ConfigureAwait(false);
        }
    }
}
