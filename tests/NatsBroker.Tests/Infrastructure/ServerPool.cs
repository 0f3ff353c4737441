using System.Collections.Concurrent;

namespace NatsBroker.Tests.Infrastructure;

/// <summary>
/// Class fixture that shares servers between the tests of one class: one process per (kind, config),
/// started on first use and stopped when the class is done. Use it for tests that do not kill, reload or
/// exhaust a server.
/// </summary>
public sealed class ServerPool : IAsyncLifetime
{
    private readonly ConcurrentDictionary<(ServerKind, string), Lazy<Task<ServerProcess>>> _servers = new();

    /// <param name="instance">Distinguishes several servers of the same kind and config (e.g. two Go servers).</param>
    /// <param name="goBinary">For <see cref="ServerKind.Go"/>: this nats-server binary (e.g. <see cref="TestEnvironment.Oracle214Path"/>).</param>
    public async Task<ServerProcess> GetAsync(ServerKind kind, string? config = null, int instance = 0, string? goBinary = null)
    {
        var key = (kind, (config ?? "") + "\0" + instance + "\0" + goBinary);
        var lazy = _servers.GetOrAdd(key, k => new Lazy<Task<ServerProcess>>(
            () => ServerProcess.StartAsync(kind, new ServerStartOptions { Config = config, GoBinary = goBinary })));
        var server = await lazy.Value.ConfigureAwait(false);
        if (server.HasExited)
        {
            // A previous test crashed it: the failure belongs to that test; start a fresh one for this one.
            _servers.TryUpdate(key, new Lazy<Task<ServerProcess>>(
                () => ServerProcess.StartAsync(kind, new ServerStartOptions { Config = config, GoBinary = goBinary })), lazy);
            throw new InvalidOperationException($"shared {kind} server had exited:\n{server.OutputTail()}");
        }

        return server;
    }

    Task IAsyncLifetime.InitializeAsync() => Task.CompletedTask;

    async Task IAsyncLifetime.DisposeAsync()
    {
        foreach (var lazy in _servers.Values)
        {
            if (!lazy.IsValueCreated)
            {
                continue;
            }

            try
            {
                await (await lazy.Value.ConfigureAwait(false)).DisposeAsync().ConfigureAwait(false);
            }
            catch (Exception e) when (e is InvalidOperationException or TimeoutException)
            {
                // Never started: nothing to stop.
            }
        }
    }
}
