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
    /// <param name="environment">Variables set for the server process (see <see cref="ServerStartOptions.Environment"/>); part of the key.</param>
    public async Task<ServerProcess> GetAsync(ServerKind kind, string? config = null, int instance = 0, string? goBinary = null,
        IReadOnlyDictionary<string, string>? environment = null)
    {
        var env = environment ?? new Dictionary<string, string>();
        var key = (kind, (config ?? "") + "\0" + instance + "\0" + goBinary + "\0"
            + string.Join("\0", env.OrderBy(v => v.Key, StringComparer.Ordinal).Select(v => v.Key + "=" + v.Value)));
        var start = new ServerStartOptions { Config = config, GoBinary = goBinary, Environment = env };
        var lazy = _servers.GetOrAdd(key, k => new Lazy<Task<ServerProcess>>(() => ServerProcess.StartAsync(kind, start)));
        var server = await lazy.Value.ConfigureAwait(false);
        if (server.HasExited)
        {
            // A previous test crashed it: the failure belongs to that test; start a fresh one for this one.
            _servers.TryUpdate(key, new Lazy<Task<ServerProcess>>(() => ServerProcess.StartAsync(kind, start)), lazy);
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
