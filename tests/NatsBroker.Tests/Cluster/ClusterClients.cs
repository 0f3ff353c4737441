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

    public static NatsOpts Options(ClusterNode node, string name) => new()
    {
        Url = node.Url,
        Name = name,
        ConnectTimeout = TimeSpan.FromSeconds(5),
        RequestTimeout = TimeSpan.FromSeconds(5),
        CommandTimeout = TimeSpan.FromSeconds(5),
        MaxReconnectRetry = 0,
        SubPendingChannelCapacity = 100_000,
    };

    /// <summary>Connects a client to <paramref name="node"/> (options adjusted by <paramref name="configure"/>); the caller disposes it.</summary>
    public static async Task<NatsConnection> ConnectAsync(ClusterNode node, string name, Func<NatsOpts, NatsOpts>? configure = null)
    {
        var opts = Options(node, name);
        var connection = new NatsConnection(configure is null ? opts : configure(opts));
        try
        {
            await connection.ConnectAsync();
            return connection;
        }
        catch
        {
            await connection.DisposeAsync();
            throw;
        }
    }

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
