using System.Net;
using System.Net.Sockets;
using NatsBroker.Connections;
using NatsBroker.Transport.Polling;
using NatsBroker.Transport.Sockets;

namespace NatsBroker.Transport;

/// <summary>
/// A TCP port. An accepted socket is polled by one of the client pollers (one per processor), whose pass ends with
/// one write per destination that its clients' reads delivered to (Connection.Flush): requests from several clients
/// to one service leave in one write. The runtime's socket engine has no such point. Measured on the 2-core VM
/// (bench/results/session-2026-11-29-g): against the runtime's engine in the same run, qreqrep-16 1.06-1.23x and
/// reqrep150-256 1.16-1.24x; polling without the deferral moved neither.
/// </summary>
public sealed class TcpConnectionListener : IConnectionListener
{
    private readonly Socket _socket;

    /// <summary>Set to 0 to give TCP clients' sockets to the runtime's socket engine (an operator's A/B switch).</summary>
    public const string ClientPollingVariable = "NATSBROKER_CLIENT_POLLING";

    private static readonly bool ClientPollingEnabled = LinkPoller.Enabled && Environment.GetEnvironmentVariable(ClientPollingVariable) != "0";

    /// <summary>Binds and listens (port 0: a random one, see <see cref="Port"/>); failures surface to the caller.</summary>
    public TcpConnectionListener(IPAddress address, int port, int backlog = 1024)
    {
        ArgumentNullException.ThrowIfNull(address);
        _socket = new Socket(address.AddressFamily, SocketType.Stream, ProtocolType.Tcp);
        try
        {
            ListenerSocket.AllowRestartWhileInTimeWait(_socket);
            _socket.Bind(new IPEndPoint(address, port));
            _socket.Listen(backlog);
        }
        catch
        {
            _socket.Dispose();
            throw;
        }
        Port = ((IPEndPoint)_socket.LocalEndPoint!).Port;
    }

    /// <summary>The bound port.</summary>
    public int Port { get; }

    public string Address => _socket.LocalEndPoint?.ToString() ?? "";

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
        string ip = "";
        int port = 0;
        if (socket.RemoteEndPoint is IPEndPoint ep)
        {
            ip = ep.Address.IsIPv4MappedToIPv6 ? ep.Address.MapToIPv4().ToString() : ep.Address.ToString();
            port = ep.Port;
        }
        socket.NoDelay = true;
        Stream stream = ClientPollingEnabled ? new LinkSocketStream(socket, LinkPoller.NextClientPoller(), tcp: true) : new NetworkStream(socket, ownsSocket: true);
        return new AcceptedConnection(stream, TransportKind.Tcp, ip, port);
    }

    public void Dispose() => _socket.Dispose();
}
