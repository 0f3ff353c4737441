using NatsBroker.Connections;

namespace NatsBroker.Transport;

/// <summary>
/// Where connections come from: a TCP port, a Unix socket, an in-process pipe, and later the cluster and leaf node
/// ports (core/Connections/README.md "Listeners"). A listener picks the stream type for what it accepts (a poller's
/// <c>LinkSocketStream</c> or the runtime's engine), so the server runs every accepted connection the same way.
/// </summary>
public interface IConnectionListener : IDisposable
{
    /// <summary>What it listens on, for the log ("127.0.0.1:4222", a socket path).</summary>
    string Address { get; }

    /// <summary>
    /// The next connection, on the thread that accepted it (a connection's synchronous start can run there); null once
    /// the listener is closed. A transient accept error (out of descriptors) is thrown as a <see cref="System.Net.Sockets.SocketException"/>.
    /// </summary>
    ValueTask<AcceptedConnection?> AcceptAsync(CancellationToken cancellationToken);
}

/// <summary>One accepted connection: its duplex stream (owned by whoever runs it), its kind and the peer's address.</summary>
public readonly record struct AcceptedConnection(Stream Stream, TransportKind Kind, string RemoteIp, int RemotePort);
