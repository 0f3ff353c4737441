using System.Net;
using System.Net.Sockets;
using System.Runtime.InteropServices;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using NatsBroker.Gateways.Link;
using NatsBroker.Tls;

namespace NatsBroker.MqttGateway;

/// <summary>
/// The gateway's listener: accepts MQTT clients on the mqtt host/port, runs an <see cref="MqttSession"/> per client,
/// reloads the TLS certificate on SIGHUP, and on stop drains (no new clients; sessions end within the drain timeout).
/// </summary>
internal sealed class MqttService(MqttOptions options, GatewayEnvironment link, SessionSet sessions, ILoggerFactory loggers)
    : GatewayListenerService(options, link, sessions, loggers.CreateLogger("NatsBroker.MqttGateway"))
{
    // Which client id is connected where: a second CONNECT with the same id takes the session over.
    private readonly SessionRegistry _registry = new();
    private SessionSweeper? _sweeper;
    private CertificateSet? _certificates;
    private EnhancedAuth? _enhancedAuth;

    protected override TimeSpan DrainTimeout => options.DrainTimeout;

    /// <summary><c>mqtt { reuse_port: true }</c> (ours): SO_REUSEPORT, so several instances share the port and its sessions.</summary>
    protected override bool ReusePort => options.ReusePort;

    protected override void OnStarting()
    {
        if (options.Tls is { } tls) _certificates = new CertificateSet(tls);
        _sweeper = new SessionSweeper(options, Link, Signer, _registry, Log);
        _sweeper.Start();
        _enhancedAuth = new EnhancedAuth(options, Link, Signer, Log);
    }

    protected override void Dispose(bool disposing)
    {
        if (disposing)
        {
            _sweeper?.Dispose();
            _enhancedAuth?.Dispose();
        }
        base.Dispose(disposing);
    }

    protected override void OnReload() => _certificates?.ReloadAndLog(Log);

    // server/mqtt.go startMQTT's wording.
    protected override void LogListening() =>
        Log.LogInformation("Listening for MQTT clients on {Scheme}://{Host}:{Port}", _certificates is null ? "mqtt" : "mqtts", options.Host, Port);

    /// <summary>A session over any stream (MQTT over WebSocket hands its unframed bytes here).</summary>
    internal MqttSession NewMqttSession(Socket socket) => new(socket, options, _certificates, Link, Signer, _registry, Log, _sweeper, _enhancedAuth);

    protected override Func<CancellationToken, Task> NewSession(Socket socket) => NewMqttSession(socket).RunAsync;
}
