using System.Net;
using System.Net.Sockets;
using System.Runtime.InteropServices;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using NatsBroker.Gateways.Link;
using NatsBroker.Tls;

namespace NatsBroker.WebSocketGateway;

/// <summary>
/// The gateway's listener: accepts clients on the websocket host/port (SO_REUSEPORT with
/// <c>websocket { reuse_port: true }</c>, so several instances share it), runs a <see cref="WebSocketSession"/> per
/// client, reloads the wss certificate on SIGHUP, and on stop drains: no new clients, sessions stop reading from
/// users and close once the core's side has flushed, within the drain timeout.
/// </summary>
internal sealed class WebSocketService(WebSocketOptions options, GatewayEnvironment link, SessionSet sessions, ILoggerFactory loggers)
    : GatewayListenerService(options, link, sessions, loggers.CreateLogger("NatsBroker.WebSocketGateway"))
{
    private CertificateSet? _certificates;
    private NatsBroker.MqttGateway.MqttOverWebSocketHost? _mqtt;

    protected override TimeSpan DrainTimeout => options.DrainTimeout;

    protected override bool ReusePort => options.ReusePort;

    protected override void OnStarting()
    {
        if (options.Tls is { } tls) _certificates = new CertificateSet(tls);
        if (options.Mqtt is { } mqtt) _mqtt = new NatsBroker.MqttGateway.MqttOverWebSocketHost(mqtt, Link, Signer, Log);
    }

    protected override void Dispose(bool disposing)
    {
        if (disposing) _mqtt?.Dispose();
        base.Dispose(disposing);
    }

    protected override void OnReload() => _certificates?.ReloadAndLog(Log);

    protected override void LogListening()
    {
        // server/websocket.go startWebsocketServer's wording.
        Log.LogInformation("Listening for websocket clients on {Scheme}://{Host}:{Port}", _certificates is null ? "ws" : "wss", options.Host, Port);
        if (_certificates is null) Log.LogWarning("Websocket not configured with TLS. DO NOT USE IN PRODUCTION!");
    }

    protected override Func<CancellationToken, Task> NewSession(Socket socket) =>
        new WebSocketSession(socket, options, _certificates, Link, Signer, Log, _mqtt).RunAsync;
}
