using System.Net;
using System.Net.Sockets;
using System.Runtime.InteropServices;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using NatsBroker.Gateways.Link;
using NatsBroker.TlsTerminator;

namespace NatsBroker.MqttGateway;

/// <summary>
/// The gateway's listener: accepts MQTT clients on the mqtt host/port, runs an <see cref="MqttSession"/> per client,
/// reloads the TLS certificate on SIGHUP, and on stop drains (no new clients; sessions end within the drain timeout).
/// </summary>
internal sealed class MqttService(MqttOptions options, GatewayEnvironment link, SessionSet sessions, ILoggerFactory loggers) : IHostedService, IDisposable
{
    private readonly ILogger _log = loggers.CreateLogger("NatsBroker.MqttGateway");
    // The process-wide set (GatewayProgram): the control plane reports and drains the same sessions.
    private readonly SessionSet _sessions = sessions;
    private readonly SessionRegistry _registry = new();
    private readonly CancellationTokenSource _drain = new();
    private readonly ProxySigner _signer = new(link.Seed);
    private CertificateSet? _certificates;
    private Socket? _listener;
    private Task? _acceptLoop;
    private PosixSignalRegistration? _hup;

    public Task StartAsync(CancellationToken cancellationToken)
    {
        if (options.Tls is { } tls) _certificates = new CertificateSet(tls);
        var address = options.Host is "0.0.0.0" or "" or "*" ? IPAddress.Any
            : options.Host is "::" ? IPAddress.IPv6Any
            : IPAddress.TryParse(options.Host, out var ip) ? ip : Dns.GetHostAddresses(options.Host).First();
        var listener = new Socket(address.AddressFamily, SocketType.Stream, ProtocolType.Tcp);
        listener.SetSocketOption(SocketOptionLevel.Socket, SocketOptionName.ReuseAddress, true);
        listener.Bind(new IPEndPoint(address, options.Port < 0 ? 0 : options.Port));
        listener.Listen(1024);
        _listener = listener;
        int port = ((IPEndPoint)listener.LocalEndPoint!).Port;
        _hup = PosixSignalRegistration.Create(PosixSignal.SIGHUP, ctx =>
        {
            ctx.Cancel = true;
            if (_certificates is null) return;
            try
            {
                _certificates.Reload();
                _log.LogInformation("Reloaded TLS certificates");
            }
            catch (Exception ex) when (ex is IOException or UnauthorizedAccessException or System.Security.Cryptography.CryptographicException)
            {
                _log.LogError("Failed to reload TLS certificates, keeping the current ones: {Error}", ex.Message);
            }
        });
        // server/mqtt.go startMQTT's wording.
        _log.LogInformation("Listening for MQTT clients on {Scheme}://{Host}:{Port}", _certificates is null ? "mqtt" : "mqtts", options.Host, port);
        _log.LogInformation("Relaying to the core at {Socket} as proxy {Key}", link.CoreSocket, _signer.PublicKey);
        _acceptLoop = Task.Run(AcceptLoopAsync, CancellationToken.None);
        return Task.CompletedTask;
    }

    /// <summary>A session over any stream (MQTT over WebSocket hands its unframed bytes here).</summary>
    internal MqttSession NewSession(Socket socket) => new(socket, options, _certificates, link, _signer, _registry, _log);

    private async Task AcceptLoopAsync()
    {
        while (!_drain.IsCancellationRequested)
        {
            Socket socket;
            try
            {
                socket = await _listener!.AcceptAsync(_drain.Token).ConfigureAwait(false);
            }
            catch (Exception ex) when (ex is OperationCanceledException or ObjectDisposedException)
            {
                break;
            }
            catch (SocketException ex)
            {
                _log.LogError("Error accepting client connection: {Error}", ex.Message);
                await Task.Delay(10).ConfigureAwait(false);
                continue;
            }
            var session = NewSession(socket);
            _sessions.Start(session.RunAsync, _drain.Token);
        }
    }

    public async Task StopAsync(CancellationToken cancellationToken)
    {
        _hup?.Dispose();
        await _drain.CancelAsync().ConfigureAwait(false);
        _listener?.Dispose();
        if (_acceptLoop is not null) await _acceptLoop.ConfigureAwait(false);
        await _sessions.DrainAsync(options.DrainTimeout).ConfigureAwait(false);
    }

    public void Dispose()
    {
        _drain.Dispose();
        _signer.Dispose();
        _listener?.Dispose();
        _hup?.Dispose();
    }
}
