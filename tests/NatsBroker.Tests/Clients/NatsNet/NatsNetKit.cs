using System.Threading.Channels;
using NATS.Client.Core;
using NatsBroker.Tests.Infrastructure;

namespace NatsBroker.Tests.Clients.NatsNet;

/// <summary>
/// Connections of the official .NET client (NATS.Client.Core) to a test server, with every wait bounded so a
/// misbehaving server fails a test instead of hanging the run.
/// </summary>
internal static class NatsNetKit
{
    /// <summary>Bound on any single wait for a message, reply or event.</summary>
    public static readonly TimeSpan Wait = TimeSpan.FromSeconds(10);

    /// <summary>Options for a test client: bounded timeouts, no reconnect unless the test asks for it.</summary>
    public static NatsOpts Options(ServerProcess server, string name) => Options(server.Url, name);

    /// <summary><see cref="Options(ServerProcess, string)"/> for any server URL (a cluster node's).</summary>
    public static NatsOpts Options(string url, string name) => new()
    {
        Url = url,
        Name = name,
        ConnectTimeout = TimeSpan.FromSeconds(5),
        RequestTimeout = TimeSpan.FromSeconds(5),
        CommandTimeout = TimeSpan.FromSeconds(5),
        MaxReconnectRetry = 0,
    };

    /// <summary>Connects with <see cref="Options(ServerProcess, string)"/> (adjusted by <paramref name="configure"/>); the caller disposes it.</summary>
    public static Task<NatsConnection> ConnectAsync(ServerProcess server, string name, Func<NatsOpts, NatsOpts>? configure = null) =>
        ConnectAsync(Options(server, name), configure);

    /// <summary>Connects with <paramref name="opts"/> (adjusted by <paramref name="configure"/>); the caller disposes it.</summary>
    public static async Task<NatsConnection> ConnectAsync(NatsOpts opts, Func<NatsOpts, NatsOpts>? configure = null)
    {
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

    /// <summary>The next message of a subscription, or a failure naming <paramref name="what"/> after <see cref="Wait"/>.</summary>
    public static async Task<NatsMsg<T>> NextAsync<T>(INatsSub<T> sub, string what)
    {
        using var cts = new CancellationTokenSource(Wait);
        try
        {
            return await sub.Msgs.ReadAsync(cts.Token);
        }
        catch (OperationCanceledException)
        {
            throw new TimeoutException($"no message for {what} within {Wait.TotalSeconds:0} s");
        }
        catch (ChannelClosedException e)
        {
            throw new InvalidOperationException($"subscription for {what} ended before a message arrived", e);
        }
    }

    /// <summary>Everything already delivered to the subscription's channel (call after a ping barrier).</summary>
    public static List<NatsMsg<T>> Drain<T>(INatsSub<T> sub)
    {
        var list = new List<NatsMsg<T>>();
        while (sub.Msgs.TryRead(out var m))
        {
            list.Add(m);
        }

        return list;
    }

    /// <summary>
    /// A barrier: after the publisher's PONG the server has routed its PUBs; after each subscriber's PONG the
    /// messages routed to that subscriber before it are in its subscription channels (the server writes them first).
    /// </summary>
    public static async Task BarrierAsync(NatsConnection publisher, params NatsConnection[] subscribers)
    {
        await publisher.PingAsync();
        foreach (var s in subscribers)
        {
            await s.PingAsync();
        }
    }

    /// <summary>Awaits <paramref name="task"/> for at most <paramref name="limit"/>, failing with <paramref name="what"/>.</summary>
    public static async Task<T> WithinAsync<T>(Task<T> task, TimeSpan limit, string what)
    {
        var done = await Task.WhenAny(task, Task.Delay(limit));
        if (done != task)
        {
            throw new TimeoutException($"{what} did not happen within {limit.TotalSeconds:0.#} s");
        }

        return await task;
    }
}
