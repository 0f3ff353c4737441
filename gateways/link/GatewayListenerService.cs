using System.Net;
using System.Net.Sockets;
using System.Runtime.InteropServices;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using NatsBroker.Transport.Sockets;
using NatsBroker.Transport.Runtime;

namespace NatsBroker.Gateways.Link;

/// <summary>
/// What every gateway process does around its sessions: binds its public port (optionally SO_REUSEPORT, so several
/// instances share one port), accepts clients and runs one session each in the process's <see cref="SessionSet"/>,
/// passes SIGHUP to <see cref="OnReload"/> (certificate reload), and on stop drains: no new clients, then the
/// sessions end within the drain timeout. A gateway supplies its session type, its log wording and its reload.
/// </summary>
public abstract class GatewayListenerService(IGatewayListenOptions listen, GatewayEnvironment link, SessionSet sessions, ILogger log)
    : IHostedService, IDisposable
{
    private readonly CancellationTokenSource _drain = new();
    private Socket? _listener;
    private Task? _acceptLoop;
    private PosixSignalRegistration? _hup;

    protected ILogger Log => log;
    protected GatewayEnvironment Link => link;

    /// <summary>Signs each session's CONNECT as the trusted proxy (ADR-55) with the seed the core gave this process.</summary>
    protected ProxySigner Signer { get; } = new(link.Seed);

    /// <summary>The port actually bound (the configured one, or the one chosen for port -1).</summary>
    public int Port { get; private set; }

    /// <summary>Whether several instances may bind the same port (SO_REUSEPORT, Linux).</summary>
    protected virtual bool ReusePort => false;

    /// <summary>How long stopping waits for sessions to end.</summary>
    protected abstract TimeSpan DrainTimeout { get; }

    /// <summary>Called once before the port is bound (load certificates here: a bad one fails the start).</summary>
    protected virtual void OnStarting()
    {
    }

    /// <summary>Logs what the gateway serves, in nats-server's wording for that listener.</summary>
    protected abstract void LogListening();

    /// <summary>SIGHUP: reload what can be reloaded (certificates). Must not throw.</summary>
    protected virtual void OnReload()
    {
    }

    /// <summary>The session for one accepted client; the returned function runs it until it ends or drains.</summary>
    protected abstract Func<CancellationToken, Task> NewSession(Socket socket);

    public Task StartAsync(CancellationToken cancellationToken)
    {
        OnStarting();
        var address = listen.Host is "0.0.0.0" or "" or "*" ? IPAddress.Any
            : listen.Host is "::" ? IPAddress.IPv6Any
            : IPAddress.TryParse(listen.Host, out var ip) ? ip : Dns.GetHostAddresses(listen.Host).First();
        var listener = new Socket(address.AddressFamily, SocketType.Stream, ProtocolType.Tcp);
        ListenerSocket.AllowRestartWhileInTimeWait(listener);
        if (ReusePort) ListenerSocket.ShareAcrossProcesses(listener);
        listener.Bind(new IPEndPoint(address, listen.Port < 0 ? 0 : listen.Port));
        listener.Listen(1024);
        _listener = listener;
        Port = ((IPEndPoint)listener.LocalEndPoint!).Port;
        _hup = Signals.Register(PosixSignal.SIGHUP, ctx =>
        {
            ctx.Cancel = true;
            OnReload();
        });
        LogListening();
        log.LogInformation("Relaying to the core at {Socket} as proxy {Key}", link.CoreSocket, Signer.PublicKey);
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
                // Out of descriptors and the like: nats-server's accept loop logs and retries after a pause too.
                log.LogError("Error accepting client connection: {Error}", ex.Message);
                await Task.Delay(10).ConfigureAwait(false);
                continue;
            }
            sessions.Start(NewSession(socket), _drain.Token);
        }
    }

    public async Task StopAsync(CancellationToken cancellationToken)
    {
        _hup?.Dispose();
        await _drain.CancelAsync().ConfigureAwait(false);
        _listener?.Dispose();
        if (_acceptLoop is not null) await _acceptLoop.ConfigureAwait(false);
        await sessions.DrainAsync(DrainTimeout).ConfigureAwait(false);
    }

    public void Dispose()
    {
        Dispose(true);
        GC.SuppressFinalize(this);
    }

    protected virtual void Dispose(bool disposing)
    {
        if (!disposing) return;
        _drain.Dispose();
        Signer.Dispose();
        _listener?.Dispose();
        _hup?.Dispose();
    }
}
