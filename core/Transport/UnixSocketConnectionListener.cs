using System.Net.Sockets;
using NatsBroker.Connections;
using NatsBroker.Transport.Polling;

namespace NatsBroker.Transport;

/// <summary>
/// A Unix socket: the gateways' links come in here. An accepted link is polled for input only (LinkSocketStream), so
/// the gateway reading what we send it does not wake this process once per message
/// (contracts/Gateways/Polling/LinkPoller.cs); with <c>NATSBROKER_LINK_POLLING=0</c> it goes to the runtime's engine.
/// </summary>
public sealed class UnixSocketConnectionListener : IConnectionListener
{
    private readonly Socket _socket;

    /// <summary>Binds <paramref name="path"/> (a stale socket file there is replaced), owner-only, and listens.</summary>
    public UnixSocketConnectionListener(string path, int backlog = 1024)
    {
        ArgumentException.ThrowIfNullOrEmpty(path);
        Path = path;
        if (File.Exists(path)) File.Delete(path);
        _socket = new Socket(AddressFamily.Unix, SocketType.Stream, ProtocolType.Unspecified);
        try
        {
            _socket.Bind(new UnixDomainSocketEndPoint(path));
            // Owner only: gateways run as the broker's user; the peer's uid is checked again for proxy trust.
            if (!OperatingSystem.IsWindows()) File.SetUnixFileMode(path, UnixFileMode.UserRead | UnixFileMode.UserWrite);
            _socket.Listen(backlog);
        }
        catch
        {
            _socket.Dispose();
            throw;
        }
    }

    public string Path { get; }

    public string Address => Path;

    public async ValueTask<AcceptedConnection?> AcceptAsync(CancellationToken cancellationToken)
    {
        Socket socket;
        try
        {
            socket = await _socket.AcceptAsync(cancellationToken).ConfigureAwait(false);
        }
        catch (Exception ex) when (ex is OperationCanceledException or ObjectDisposedException)
        {
            return null;
        }
        Stream stream = LinkPoller.Enabled ? new LinkSocketStream(socket) : new NetworkStream(socket, ownsSocket: true);
        return new AcceptedConnection(stream, TransportKind.UnixSocket, "", 0);
    }

    /// <summary>Stops listening; the socket file stays until <see cref="RemoveSocketFile"/> (lame duck mode keeps it, as before).</summary>
    public void Dispose() => _socket.Dispose();

    /// <summary>Removes the socket file (at shutdown).</summary>
    public void RemoveSocketFile()
    {
        if (File.Exists(Path)) File.Delete(Path);
    }
}
