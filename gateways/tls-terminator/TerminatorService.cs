using System.Net;
using System.Net.Sockets;
using System.Runtime.InteropServices;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using NatsBroker.Gateways.Link;
using NatsBroker.Tls;

namespace NatsBroker.TlsTerminator;

/// <summary>
/// The terminator's listener: accepts clients on host/port (SO_REUSEPORT with <c>tls { reuse_port: true }</c>, so
/// several instances can share one port), runs a <see cref="TlsSession"/> per client, reloads certificates on
/// SIGHUP, and on stop drains: no new clients, every session stops reading from its user and closes once the
/// core's side has flushed, within the drain timeout.
/// </summary>
internal sealed class TerminatorService(TerminatorOptions options, GatewayEnvironment link, SessionSet sessions, ILoggerFactory loggers)
    : GatewayListenerService(options, link, sessions, loggers.CreateLogger("NatsBroker.TlsTerminator"))
{
    private CertificateSet? _certificates;

    protected override bool ReusePort => options.ReusePort;

    protected override TimeSpan DrainTimeout => options.DrainTimeout;

    protected override void OnStarting() => _certificates = options.RelayOnly ? null : new CertificateSet(options);

    protected override void OnReload() => _certificates?.ReloadAndLog(Log);

    protected override void LogListening()
    {
        Log.LogInformation("Listening for client connections on {Host}:{Port}", options.Host, Port);
        if (options.RelayOnly) Log.LogWarning("Relay only: plain NATS without TLS (--relay-only, for measuring the gateway hop)");
        else if (options.AllowNonTls) Log.LogInformation("TLS available for client connections");
        else Log.LogInformation("TLS required for client connections");
    }

    protected override Func<CancellationToken, Task> NewSession(Socket socket) =>
        new TlsSession(socket, options, _certificates, Link, Signer, Port, Log).RunAsync;
}
