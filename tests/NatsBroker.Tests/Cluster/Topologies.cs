using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Cluster;

/// <summary>
/// Theory data for the mixed-cluster scenarios: three nodes in the orders of docs/design/routes.md section 7.3, and
/// one Go-only cluster that must pass before any route code of ours exists (it proves the harness and the
/// expectations against the two references). Passed as text so test names read "Ours,Go29,Go29".
/// </summary>
public static class Topologies
{
    public static TheoryData<string> All => new()
    {
        "Ours,Go29,Go29",
        "Ours,Ours,Go214",
        "Ours,Ours,Ours",
        "Ours,Go214,Go29",
        "Go214,Go214,Go29",
    };

    public static ClusterNodeKind[] Parse(string topology) =>
        topology.Split(',').Select(k => Enum.Parse<ClusterNodeKind>(k.Trim())).ToArray();

    /// <summary>The kinds of <paramref name="topology"/>, after skipping (or, under CI=true, failing) when a reference binary is missing.</summary>
    public static ClusterNodeKind[] Require(string topology, ITestOutputHelper output)
    {
        var kinds = Parse(topology);
        foreach (var kind in kinds.Distinct())
        {
            switch (kind)
            {
                case ClusterNodeKind.Go29:
                    Prerequisites.RequireGoServer(output);
                    break;
                case ClusterNodeKind.Go214:
                    Prerequisites.RequireOracle214(output);
                    break;
                case ClusterNodeKind.Ours:
                    Prerequisites.RequireServer(ServerKind.Ours, output);
                    break;
            }
        }

        return kinds;
    }
}
