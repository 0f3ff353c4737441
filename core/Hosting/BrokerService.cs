using System.Runtime.InteropServices;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Hosting.Systemd;
using Microsoft.Extensions.Logging;
using NatsBroker.Configuration;
using NatsBroker.Transport.Runtime;
using NatsBroker.Monitoring;
using NatsBroker.Server;

namespace NatsBroker.Hosting;

/// <summary>
/// Runs the broker under Microsoft.Extensions.Hosting: starts listeners (a failure stops the process with the
/// error), writes the pid and ports files, tells systemd READY=1 (Type=notify), and maps signals as nats-server
/// does: SIGINT/SIGTERM stop, SIGHUP reloads the config, SIGUSR2 enters lame duck mode, SIGUSR1 reopens the log.
/// </summary>
public sealed class BrokerService(ServerOptions options, Func<ServerOptions?> reload, ILoggerFactory loggers,
    IHostApplicationLifetime lifetime) : IHostedService
{
    private const int SigUsr1 = 10, SigUsr2 = 12;
    private readonly List<PosixSignalRegistration> _signals = [];
    private NatsServer? _server;
    private MonitoringServer? _monitor;
    private ILogger? _logger;
    // sd_notify(3) to $NOTIFY_SOCKET (Type=notify units); IsEnabled is false outside systemd.
    private readonly SystemdNotifier _systemd = new();

    public NatsServer? Server => _server;

    public async Task StartAsync(CancellationToken cancellationToken)
    {
        var logger = loggers.CreateLogger("nats");
        var server = new NatsServer(options, logger);
        // Signals first: a SIGHUP sent as soon as the port accepts must reload, not kill the process (default action).
        _signals.Add(Signals.Register(PosixSignal.SIGHUP, ctx =>
        {
            ctx.Cancel = true;
            try
            {
                var next = reload();
                if (next is not null) server.Reload(next);
            }
            catch (Exception ex)
            {
                logger.LogError("Failed to reload server configuration: {Error}", ex.Message);
            }
        }));
        _signals.Add(Signals.Register((PosixSignal)SigUsr2, ctx =>
        {
            ctx.Cancel = true;
            _ = Task.Run(async () =>
            {
                await server.EnterLameDuckModeAsync().ConfigureAwait(false);
                lifetime.StopApplication();
            });
        }));
        _signals.Add(Signals.Register((PosixSignal)SigUsr1, ctx => ctx.Cancel = true));
        foreach (var sig in new[] { PosixSignal.SIGINT, PosixSignal.SIGTERM, PosixSignal.SIGQUIT })
        {
            _signals.Add(Signals.Register(sig, ctx =>
            {
                ctx.Cancel = true;
                lifetime.StopApplication();
            }));
        }
        server.Start();
        _server = server;
        if (options.HttpPort != 0) _monitor = await MonitoringServer.StartAsync(server, logger, cancellationToken).ConfigureAwait(false);
        if (options.PidFile is { } pid) File.WriteAllText(pid, Environment.ProcessId.ToString(System.Globalization.CultureInfo.InvariantCulture));
        _logger = logger;
        if (!ReadyAfterGateways) AnnounceReady();
    }

    /// <summary>
    /// Set when supervised gateways serve clients (tls {}, websocket {}, mqtt {}): the ports file and "Server is ready"
    /// (what client test harnesses and tools wait for before connecting; NATS.Net's waits for the log line) and the
    /// systemd READY=1 come from <see cref="AnnounceReady"/> once every gateway accepts, not when the core listens.
    /// </summary>
    public bool ReadyAfterGateways { get; set; }

    /// <summary>The ports file, "Server is ready", systemd READY=1 (after <see cref="StartAsync"/>; see <see cref="ReadyAfterGateways"/>).</summary>
    public void AnnounceReady()
    {
        if (_server is null || _logger is null) throw new InvalidOperationException("the broker has not started");
        _server.WritePortsFile(_monitor?.Port);
        _server.Log.Ready();
        if (_systemd.IsEnabled) _systemd.Notify(ServiceState.Ready);
        HotPathWarmup.Start(_logger, options.JetStream);
    }

    public async Task StopAsync(CancellationToken cancellationToken)
    {
        if (_systemd.IsEnabled) _systemd.Notify(ServiceState.Stopping);
        foreach (var s in _signals) s.Dispose();
        if (_monitor is not null) await _monitor.DisposeAsync().ConfigureAwait(false);
        if (_server is not null) await _server.ShutdownAsync().ConfigureAwait(false);
        if (options.PidFile is { } pid && File.Exists(pid)) File.Delete(pid);
    }
}
