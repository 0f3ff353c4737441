using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Cluster;

/// <summary>
/// The harness's own failure path: a mesh wait that cannot succeed must fail (not pass vacuously) and say, per node,
/// what its /routez shows and what is missing. Go nodes only, so it runs before our route code exists.
/// </summary>
[Collection("Cluster")]
public sealed class TestClusterSelfTests(ITestOutputHelper output)
{
    [SkippableFact]
    public async Task A_mesh_wait_with_a_killed_node_fails_listing_every_nodes_routez()
    {
        Prerequisites.RequireGoServer(output);
        await using var cluster = await TestCluster.StartMeshedAsync([ClusterNodeKind.Go29, ClusterNodeKind.Go29, ClusterNodeKind.Go29], RouteLayout.Full, output);
        var killedId = cluster[2].ServerId;
        cluster[2].Kill();

        var e = await Assert.ThrowsAsync<Xunit.Sdk.XunitException>(() => cluster.WaitForMeshAsync(TimeSpan.FromSeconds(1)));
        output.WriteLine(e.Message);
        Assert.Contains("the mesh did not form within 1 s", e.Message, StringComparison.Ordinal);
        Assert.Contains("n3 (Go29", e.Message, StringComparison.Ordinal);
        Assert.Contains("problem: not running", e.Message, StringComparison.Ordinal);
        Assert.Equal(2, e.Message.Split("/routez server_id").Length - 1);
        Assert.DoesNotContain(Routez.Abbrev(killedId) + " solicit", e.Message, StringComparison.Ordinal);

        // The two survivors are a whole mesh of the running nodes once they dropped n3's routes.
        await cluster.WaitForMeshAsync(allRunning: false);
    }
}
