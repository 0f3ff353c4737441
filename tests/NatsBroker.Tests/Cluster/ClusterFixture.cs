using System.Collections.Concurrent;

namespace NatsBroker.Tests.Cluster;

/// <summary>
/// Class fixture: one meshed cluster (full route list) per topology, started on first use and killed when the
/// class is done, for the scenarios that neither stop nor restart a node. Tests share it by using subjects of their
/// own (<see cref="ClusterClients.Prefix"/>). A cluster that failed to start or mesh stays failed: every test of
/// that topology reports the same failure at once instead of waiting for the mesh again.
/// </summary>
public sealed class ClusterFixture : IAsyncLifetime
{
    private readonly ConcurrentDictionary<string, Lazy<Task<TestCluster>>> _clusters = new(StringComparer.Ordinal);

    public Task<TestCluster> GetAsync(string topology, IReadOnlyList<ClusterNodeKind> kinds) =>
        _clusters.GetOrAdd(topology, _ => new Lazy<Task<TestCluster>>(() => TestCluster.StartMeshedAsync(kinds))).Value;

    Task IAsyncLifetime.InitializeAsync() => Task.CompletedTask;

    async Task IAsyncLifetime.DisposeAsync()
    {
        foreach (var lazy in _clusters.Values.Where(l => l.IsValueCreated))
        {
            try
            {
                await (await lazy.Value.ConfigureAwait(false)).DisposeAsync().ConfigureAwait(false);
            }
            catch (Exception e) when (e is InvalidOperationException or TimeoutException or Xunit.Sdk.XunitException)
            {
                // Never meshed: StartMeshedAsync already killed its nodes.
            }
        }
    }
}
