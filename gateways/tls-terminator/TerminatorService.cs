using System.Net;
using System.Net.Sockets;
using System.Runtime.InteropServices;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using NatsBroker.Gateways.Link;

namespace NatsBroker.TlsTerminator;

/// <summary>
/// The terminator's listener: accepts clients on host/port (SO_REUSEPORT with <c>tls { reuse_port: true }</c>, so
/// several instances can share one port), runs a <see cref="TlsSession"/> per client, reloads certificates on
/// SIGHUP, and on stop drains: no new clients, every session stops reading from its user and closes once the
/// core's side has flushed, within the drain timeout.
/// </summary>
internal sealed class TerminatorService(TerminatorOptions options, GatewayEnvironment link, SessionSet sessions, ILoggerFactory loggers) : IHostedService, IDisposable
{
    private const int SolSocket = 1, SoReusePort = 15;

    private readonly ILogger _log = loggers.CreateLogger("NatsBroker.TlsTerminator");
    private readonly CancellationTokenSource _drain = new();
    private readonly ProxySigner _signer = new(link.Seed);
    private CertificateSet? _certificates;
    private Socket? _listener;
    private Task? _acceptLoop;
    private PosixSignalRegistration? _hup;

    public int Port { get; private set; }

    public Task StartAsync(CancellationToken cancellationToken)
    {
        _certificates = options.RelayOnly ? null : new CertificateSet(options);
        var address = options.Host is "0.0.0.0" or "" or "*" ? IPAddress.Any
            : options.Host is "::" ? IPAddress.IPv6Any
            : IPAddress.TryParse(options.Host, out var ip) ? ip : Dns.GetHostAddresses(options.Host).First();
        var listener = new Socket(address.AddressFamily, SocketType.Stream, ProtocolType.Tcp);
        listener.SetSocketOption(SocketOptionLevel.Socket, SocketOptionName.ReuseAddress, true);
        if (options.ReusePort && OperatingSystem.IsLinux()) listener.SetRawSocketOption(SolSocket, SoReusePort, BitConverter.GetBytes(1));
        listener.Bind(new IPEndPoint(address, options.Port < 0 ? 0 : options.Port));
        listener.Listen(1024);
        _listener = listener;
        Port = ((IPEndPoint)listener.LocalEndPoint!).Port;
        _hup = PosixSignalRegistration.Create(PosixSignal.SIGHUP, ctx =>
        {
            ctx.Cancel = true;
            try
            {
                if (_certificates is null) return;
                _certificates.Reload();
                _log.LogInformation("Reloaded TLS certificates");
            }
            catch (Exception ex) when (ex is IOException or UnauthorizedAccessException or System.Security.Cryptography.CryptographicException)
            {
                _log.LogError("Failed to reload TLS certificates, keeping the current ones: {Error}", ex.Message);
            }
        });
        _log.LogInformation("Listening for client connections on {Host}:{Port}", options.Host, Port);
        if (options.RelayOnly) _log.LogWarning("Relay only: plain NATS without TLS (--relay-only, for measuring the gateway hop)");
        else _log.LogInformation("TLS required for client connections");
        _log.LogInformation("Relaying to the core at {Socket} as proxy {Key}", link.CoreSocket, _signer.PublicKey);
        _acceptLoop = Task.Run(AcceptLoopAsync, CancellationToken.None);
        return Task.CompletedTask;
    }

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
            var session = new TlsSession(socket, options, _certificates, link, _signer, Port, _log);
            sessions.Start(session.RunAsync, _drain.Token);
        }
    }

    public async Task StopAsync(CancellationToken cancellationToken)
    {
        _hup?.Dispose();
        await _drain.CancelAsync().ConfigureAwait(false);
        _listener?.Dispose();
        if (_acceptLoop is not null) await _acceptLoop.ConfigureAwait(false);
        await sessions.DrainAsync(options.DrainTimeout).ConfigureAwait(false);
    }

    public void Dispose()
    {
        _drain.Dispose();
        _signer.Dispose();
        _listener?.Dispose();
        _hup?.Dispose();
    }
}
