using NATS.Client.Core;

namespace NatsBroker.Tests.Cluster;

/// <summary>
/// NATS.Net connections to cluster nodes, with every wait bounded. Subscription channels are large (100 000): the
/// default 1024 with drop-newest would lose messages of a burst the test reads only afterwards, and a loss there
/// would look like a routing bug.
/// </summary>
public static class ClusterClients
{
    /// <summary>Bound on any single wait for a message, reply, fence or probe.</summary>
    public static readonly TimeSpan Wait = TimeSpan.FromSeconds(10);

    /// <summary>A subject prefix of its own for one test, so tests sharing a <see cref="ClusterFixture"/> cluster never see each other's traffic.</summary>
    public static string Prefix(string test) => $"ct.{test}.{Guid.NewGuid().ToString("N")[..8]}";

    public static NatsOpts Options(ClusterNode node, string name) =>
        NatsBroker.Tests.Clients.NatsNet.NatsNetKit.Options(node.Url, name) with { SubPendingChannelCapacity = 100_000 };

    /// <summary>Connects a client to <paramref name="node"/> (options adjusted by <paramref name="configure"/>); the caller disposes it.</summary>
    public static Task<NatsConnection> ConnectAsync(ClusterNode node, string name, Func<NatsOpts, NatsOpts>? configure = null) =>
        NatsBroker.Tests.Clients.NatsNet.NatsNetKit.ConnectAsync(Options(node, name), configure);

    /// <summary>Polls <paramref name="condition"/> every 25 ms until true; fails naming <paramref name="what"/> after <paramref name="limit"/> (default <see cref="Wait"/>).</summary>
    public static async Task EventuallyAsync(Func<bool> condition, string what, TimeSpan? limit = null)
    {
        var deadline = DateTime.UtcNow + (limit ?? Wait);
        while (!condition())
        {
            if (DateTime.UtcNow > deadline)
            {
                throw new TimeoutException($"{what}: not within {(limit ?? Wait).TotalSeconds:0.#} s");
            }

            await Task.Delay(25);
        }
    }
}
