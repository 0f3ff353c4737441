using System.Net.Sockets;

namespace NatsBroker.Bench.Raw;

/// <summary>
/// The byte pipe under a <see cref="RawConnection"/>: a plain TCP socket, a WebSocket over one
/// (<see cref="WebSocketTransport"/>) or TLS over one (<see cref="TlsTransport"/>). Blocking calls only: the raw
/// generator runs on its own threads.
/// </summary>
internal abstract class RawTransport
{
    protected RawTransport(Socket socket) => Socket = socket;

    /// <summary>The socket underneath, for timeouts and socket options.</summary>
    public Socket Socket { get; }

    /// <summary>Sends all of <paramref name="data"/> as NATS protocol bytes. Callers serialize sends.</summary>
    public abstract void Send(ReadOnlySpan<byte> data);

    /// <summary>
    /// Receives NATS protocol bytes into <paramref name="into"/>: the count (0 at end of stream), or -1 with
    /// <paramref name="error"/> set when the socket reports one (a timeout among them).
    /// </summary>
    public abstract int Receive(Span<byte> into, out SocketError error);
}

/// <summary>NATS over plain TCP: bytes as they are.</summary>
internal sealed class SocketTransport(Socket socket) : RawTransport(socket)
{
    public override void Send(ReadOnlySpan<byte> data)
    {
        while (!data.IsEmpty)
        {
            int n = Socket.Send(data, SocketFlags.None);
            data = data[n..];
        }
    }

    public override int Receive(Span<byte> into, out SocketError error)
    {
        int r = Socket.Receive(into, SocketFlags.None, out error);
        return error == SocketError.Success ? r : -1;
    }
}
