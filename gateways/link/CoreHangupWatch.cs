using System.Net.Sockets;

namespace NatsBroker.Gateways.Link;

/// <summary>
/// Closes an end user's connection that the core has already let go of but that takes nothing more. When the core
/// closes a link (a slow consumer cut at max_pending or write_deadline, an -ERR and close, shutdown) the gateway
/// relays what the core sent before and then closes the user. But a user who does not read leaves the gateway's write
/// to it pending for ever: the gateway kept such a user connected, with its session, its buffers and the link's unread
/// bytes, long after the core had closed it (GatewayBackpressureTests: still ESTABLISHED 15 s after the slow-consumer
/// verdict, then 8 MB of stale messages once it read), where nats-server closes a slow consumer's socket at once.
/// So once the core has hung up, the relay toward the user must keep making progress: when no write to the user
/// completes during <see cref="Grace"/>, the user's socket is shut down both ways. What the kernel already holds for
/// the user still goes out, then the FIN, as when nats-server closes a slow consumer's socket; the pending write
/// fails and the session ends as for any closed user. Should it still not end within another <see cref="Grace"/>,
/// the socket is disposed (a reset). A user who reads gets everything the core sent, then the close.
/// </summary>
public sealed class CoreHangupWatch : IDisposable
{
    /// <summary>How long a user may take no bytes at all after the core hung up.</summary>
    public static readonly TimeSpan Grace = TimeSpan.FromSeconds(2);

    private readonly Lock _lock = new();
    private readonly Func<long> _progress;
    private readonly Socket _user;
    private readonly CancellationTokenRegistration _registration;
    private Timer? _timer;
    private long _lastProgress;
    private bool _shutDown;
    private bool _done;

    /// <param name="core">The user's link.</param>
    /// <param name="progress">Writes to the user completed so far (any count that grows with each).</param>
    /// <param name="user">The user's socket (under TLS or WebSocket framing, if any).</param>
    public CoreHangupWatch(CoreLink core, Func<long> progress, Socket user)
    {
        ArgumentNullException.ThrowIfNull(core);
        ArgumentNullException.ThrowIfNull(progress);
        ArgumentNullException.ThrowIfNull(user);
        _progress = progress;
        _user = user;
        // Runs on the link poller's thread (or here, when the core is already gone): only starts a timer.
        _registration = core.Closed.UnsafeRegister(static s => ((CoreHangupWatch)s!).Arm(), this);
    }

    private void Arm()
    {
        lock (_lock)
        {
            if (_done || _timer is not null) return;
            _lastProgress = _progress();
            _timer = new Timer(static s => ((CoreHangupWatch)s!).Check(), this, Grace, Grace);
        }
    }

    private void Check()
    {
        bool dispose;
        lock (_lock)
        {
            if (_done) return;
            long now = _progress();
            if (now != _lastProgress)
            {
                _lastProgress = now;
                return;
            }
            dispose = _shutDown;
            _shutDown = true;
            if (dispose)
            {
                _done = true;
                _timer!.Dispose();
            }
        }
        try
        {
            if (dispose) _user.Dispose();
            else _user.Shutdown(SocketShutdown.Both);
        }
        catch (Exception ex) when (ex is SocketException or ObjectDisposedException)
        {
            // Already closed by the session.
        }
    }

    /// <summary>The session ended: nothing to watch any more.</summary>
    public void Dispose()
    {
        _registration.Dispose();
        lock (_lock)
        {
            _done = true;
            _timer?.Dispose();
        }
    }
}
