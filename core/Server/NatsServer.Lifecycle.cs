using NatsBroker.Auth;
using NatsBroker.Configuration;
using NatsBroker.Connections;
using NatsBroker.Protocol;

namespace NatsBroker.Server;

public sealed partial class NatsServer
{
    private int _shutdownStarted;

    /// <summary>Stops accepting, flushes and closes every client (SIGINT/SIGTERM).</summary>
    public async Task ShutdownAsync()
    {
        if (Interlocked.Exchange(ref _shutdownStarted, 1) != 0) return;
        Log.ShuttingDown();
        CloseListeners();
        // The SHUTDOWN advisory goes out while clients can still receive it (server/events.go shutdownEventing).
        if (SystemServices is not null) await SystemServices.DisposeAsync().ConfigureAwait(false);
        if (_heartbeat is not null) await _heartbeat.DisposeAsync().ConfigureAwait(false);
        foreach (var c in _clients.Values) c.CloseAfterFlush(CloseReason.ServerShutdown);
        // Routes close with clients (server.go Shutdown): peers see the connection go and drop our interest.
        if (Cluster is not null) await Cluster.DisposeAsync().ConfigureAwait(false);
        // Connections parked on a password check wake up (abandoned) and close.
        PasswordHashing.Dispose();
        if (HasIdentity) Identity.Dispose();
        // Bounded wait for writers to drain.
        var deadline = Environment.TickCount64 + 2000;
        while (!_clients.IsEmpty && Environment.TickCount64 < deadline) await Task.Delay(10).ConfigureAwait(false);
        foreach (var c in _clients.Values) c.CloseNow(CloseReason.ServerShutdown);
        // Clients are gone: stop JetStream, flushing and closing every store.
        if (JetStream is not null) await JetStream.DisposeAsync().ConfigureAwait(false);
        Log.ServerExiting();
    }

    /// <summary>
    /// Lame duck mode (SIGUSR2): stop accepting, tell clients with an INFO carrying ldm:true, wait the grace
    /// period, then close the clients spread over the lame duck duration, then shut down (server/server.go lameDuckMode).
    /// </summary>
    public async Task EnterLameDuckModeAsync()
    {
        if (LameDuckMode) return;
        LameDuckMode = true;
        Log.LameDuck(_options.LameDuckDuration, _options.LameDuckGracePeriod);
        StopListening();
        // Nobody to move: shut down at once (server.go lameDuckMode: "If there is no client, we need to call
        // Shutdown() to complete the LDMode"); peers see the routes close.
        if (OpenClientCount() == 0)
        {
            await ShutdownAsync().ConfigureAwait(false);
            return;
        }
        // Peers first, so they take our URLs out of their clients' INFO (server.go sendLDMToRoutes), then our
        // clients: an INFO with ldm and only the other nodes' URLs.
        Cluster?.SendLameDuck();
        foreach (var c in _clients.Values) c.SendAsyncInfo();
        var grace = _options.LameDuckGracePeriod;
        var duration = _options.LameDuckDuration;
        if (grace >= duration) grace = TimeSpan.Zero;
        await Task.Delay(grace).ConfigureAwait(false);
        var clients = _clients.Values.ToList();
        var spread = duration - grace;
        int batches = Math.Max(1, (int)Math.Min(clients.Count, spread.TotalSeconds));
        int perBatch = (clients.Count + batches - 1) / Math.Max(1, batches);
        var pause = batches > 1 ? spread / batches : TimeSpan.Zero;
        for (int i = 0; i < clients.Count; i += Math.Max(1, perBatch))
        {
            foreach (var c in clients.Skip(i).Take(Math.Max(1, perBatch))) c.CloseAfterFlush(CloseReason.LameDuck);
            if (pause > TimeSpan.Zero && i + perBatch < clients.Count) await Task.Delay(pause).ConfigureAwait(false);
        }
        await ShutdownAsync().ConfigureAwait(false);
    }

    /// <summary>
    /// Applies a reloaded configuration (SIGHUP): auth, limits and logging change in place; connections stay.
    /// Options nats-server cannot reload (listen host/port, store dir, server name) are kept and reported.
    /// </summary>
    /// <exception cref="InvalidOperationException">The new configuration changes what nats-server refuses to reload
    /// (then nothing of it is applied).</exception>
    public IReadOnlyList<string> Reload(ServerOptions next)
    {
        var current = _options;
        // nats-server's reload (reload.go diffOptions) has no case for JetStreamLimits: any change to
        // jetstream { limits {} } fails the whole reload with this error, and the server keeps running as it was.
        string oldLimits = BatchLimits(current), newLimits = BatchLimits(next);
        if (oldLimits != newLimits) throw new InvalidOperationException($"config reload not supported for JetStreamLimits: old={oldLimits}, new={newLimits}");
        // reload.go validateClusterOpts: the route listener cannot move, nor can clustering be turned on or off.
        if (ClusterReload.Validate(current.Cluster, next.Cluster) is { } clusterError) throw new InvalidOperationException(clusterError);
        var ignored = new List<string>();
        if (next.Port != current.Port && !(current.Port < 0)) ignored.Add("port");
        if (next.Host != current.Host) ignored.Add("host");
        if (next.StoreDir != current.StoreDir) ignored.Add("store_dir");
        if (next.ServerName != current.ServerName) ignored.Add("server_name");
        if (next.UnixSocketPath != current.UnixSocketPath) ignored.Add("unix_socket");
        next.Port = current.Port;
        next.Host = current.Host;
        next.StoreDir = current.StoreDir;
        next.ServerName = current.ServerName;
        next.UnixSocketPath = current.UnixSocketPath;
        _options = next;
        Accounts.Apply(next);
        _auth = CreateAuthenticator(next);
        ClientLimits.Apply(next.MaxPending, next.WriteDeadline);
        // Existing connections stay, but are re-checked against the new users and limits, as nats-server's
        // reloadAuthorization does: invalid credentials are closed, permissions and limits replaced.
        foreach (var c in _clients.Values) c.OnReload(next, _auth);
        if (Cluster is not null && next.Cluster is not null)
        {
            next.Cluster.Port = current.Cluster!.Port;
            Cluster.Reload(next.Cluster);
        }
        ConfigLoadTime = DateTime.UtcNow;
        Log.Reloaded(ignored.Count == 0 ? "" : $" (not reloadable, kept: {string.Join(", ", ignored)})");
        return ignored;
    }

    /// <summary>The reloadable-or-not part of <c>jetstream { limits {} }</c> this server reads, in nats-server's field order.</summary>
    private static string BatchLimits(ServerOptions o) => string.Create(System.Globalization.CultureInfo.InvariantCulture,
        $"{{max_batch_inflight_per_stream: {o.JetStreamBatchMaxInflightPerStream}, max_batch_inflight_total: {o.JetStreamBatchMaxInflightTotal}, max_batch_size: {o.JetStreamBatchMaxMsgs}, max_batch_timeout: {o.JetStreamBatchTimeout.TotalSeconds}s}}");

    public async ValueTask DisposeAsync()
    {
        await ShutdownAsync().ConfigureAwait(false);
        _shutdown.Dispose();
    }
}
