namespace NatsBroker.Tests.Cluster;

/// <summary>
/// What runs as one node of a <see cref="TestCluster"/>: our core, Debian's nats-server 2.9.10
/// (<see cref="Infrastructure.TestEnvironment.GoServerPath"/>, the no-pool protocol our stage 1 speaks), or nats-server
/// 2.14.5 (<see cref="Infrastructure.TestEnvironment.Oracle214Path"/>, which pools routes: docs/design/routes.md section 3).
/// </summary>
public enum ClusterNodeKind
{
    Ours,
    Go29,
    Go214,
}
