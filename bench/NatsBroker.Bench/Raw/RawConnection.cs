using System.Net;
using System.Net.Sockets;
using System.Text;

namespace NatsBroker.Bench.Raw;

/// <summary>
/// One NATS client connection speaking the raw text protocol over a blocking socket. Sends are serialized by a
/// lock (taken once per batch, not per message). Every wait is bounded: the handshake by a receive timeout, later
/// reads by the scenario watchdog, which disposes the connection.
/// </summary>
internal sealed class RawConnection : IDisposable, IBulkConnection
{
    private readonly Socket _socket;
    private readonly RawTransport _transport;
    private readonly Lock _sendLock = new();
    private int _disposed;

    private RawConnection(RawTransport transport, int readBuffer)
    {
        _transport = transport;
        _socket = transport.Socket;
        Reader = new FrameReader(transport, this, readBuffer);
    }

    public FrameReader Reader { get; }

    public string ServerInfo { get; private set; } = "";

    public long BytesSent { get; private set; }

    /// <param name="webSocket">NATS over a WebSocket on <paramref name="ep"/> (a server's <c>websocket {}</c> port) instead of plain TCP.</param>
    /// <param name="auth">CONNECT's credentials: JSON fields, each after a comma, made from INFO's nonce (null without one).</param>
    /// <param name="tlsCaFile">NATS over TLS (<see cref="TlsTransport"/>): INFO in plaintext, then the handshake, the server's certificate checked against this CA.</param>
    public static RawConnection Connect(IPEndPoint ep, string name, TimeSpan timeout, bool headers = false, int readBuffer = 256 * 1024, string? user = null, string? pass = null, bool webSocket = false, Func<string?, string>? auth = null, string? tlsCaFile = null)
    {
        var s = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp) { NoDelay = true };
        RawConnection? c = null;
        try
        {
            // A synchronous connect keeps the socket in blocking mode: on Unix, one async operation switches a .NET
            // socket to non-blocking for good, and every later blocking Receive is then emulated through the
            // epoll thread (a wake-up and an event handoff per read, several times the CPU). Bounded by a timer.
            using (new Timer(_ => s.Dispose(), null, timeout, Timeout.InfiniteTimeSpan))
            {
                s.Connect(ep);
            }

            s.ReceiveTimeout = (int)timeout.TotalMilliseconds;
            if (tlsCaFile is not null)
            {
                // The INFO came before TLS (the server does not send it again inside), so the reader starts after it.
                var tls = TlsTransport.Upgrade(s, tlsCaFile, out string info);
                c = new RawConnection(tls, readBuffer) { ServerInfo = info };
            }
            else
            {
                RawTransport transport = webSocket ? WebSocketTransport.Upgrade(s, ep, readBuffer) : new SocketTransport(s);
                c = new RawConnection(transport, readBuffer);
                if (c.Reader.Next() != FrameKind.Info)
                {
                    throw new InvalidDataException("server did not start with INFO: " + c.Reader.LineText);
                }

                c.ServerInfo = c.Reader.LineText;
            }

            string h = headers ? "true" : "false";
            string connect = "CONNECT {\"verbose\":false,\"pedantic\":false,\"tls_required\":" + (tlsCaFile is null ? "false" : "true") + ",\"name\":\"" + name +
                             "\",\"lang\":\"raw-bench\",\"version\":\"1.0\",\"protocol\":1,\"headers\":" + h +
                             ",\"no_responders\":" + h +
                             (user is null ? "" : ",\"user\":\"" + user + "\",\"pass\":\"" + pass + "\"") +
                             (auth is null ? "" : auth(Nonce(c.ServerInfo))) + "}\r\nPING\r\n";
            c.Send(Encoding.ASCII.GetBytes(connect));
            c.WaitPong();
            s.ReceiveTimeout = 0;
            return c;
        }
        catch
        {
            // The connection, once made, owns the socket (and a TLS session's native state).
            if (c is not null)
            {
                c.Dispose();
            }
            else
            {
                s.Dispose();
            }

            throw;
        }
    }

    /// <summary>INFO's <c>nonce</c> (nkey and JWT users sign it), or null.</summary>
    private static string? Nonce(string infoLine)
    {
        int i = infoLine.IndexOf("\"nonce\":\"", StringComparison.Ordinal);
        if (i < 0)
        {
            return null;
        }

        i += 9;
        int end = infoLine.IndexOf('"', i);
        return end < 0 ? null : infoLine[i..end];
    }

    public void SetReceiveTimeout(TimeSpan t) => _socket.ReceiveTimeout = (int)t.TotalMilliseconds;

    /// <summary>
    /// Throughput readers: the kernel wakes the reader only when <paramref name="lowWater"/> bytes are buffered
    /// (SO_RCVLOWAT) or after <paramref name="timeoutMs"/> with whatever is there. Fewer, larger reads: the
    /// generator's CPU per message drops; the end of a run is seen at most timeoutMs late.
    /// </summary>
    public void EnableBatchedReads(int lowWater = 64 * 1024, int timeoutMs = 2)
    {
        try
        {
            _socket.SetSocketOption(SocketOptionLevel.Socket, SocketOptionName.ReceiveLowWater, lowWater);
            _socket.ReceiveTimeout = timeoutMs;
            Reader.TimeoutIsIdle = true;
        }
        catch (SocketException)
        {
            // not supported: plain reads
        }
    }

    public void Send(ReadOnlySpan<byte> data)
    {
        lock (_sendLock)
        {
            BytesSent += data.Length;
            _transport.Send(data);
        }
    }

    public void Send(string ascii) => Send(Encoding.ASCII.GetBytes(ascii));

    /// <summary>PING and wait for the PONG: the server has processed everything sent before.</summary>
    public void Flush()
    {
        Send("PING\r\n"u8);
        WaitPong();
    }

    /// <summary>Reads until PONG. Only for connections on which no other thread reads.</summary>
    public void WaitPong()
    {
        while (true)
        {
            switch (Reader.Next())
            {
                case FrameKind.Pong:
                    return;
                case FrameKind.Err:
                    throw new InvalidOperationException("server error: " + Reader.LineText);
                default:
                    continue;
            }
        }
    }

    public void Dispose()
    {
        if (Interlocked.Exchange(ref _disposed, 1) == 0)
        {
            try
            {
                _socket.Shutdown(SocketShutdown.Both);
            }
            catch (SocketException)
            {
            }
            catch (ObjectDisposedException)
            {
            }

            _socket.Dispose();
            // The TLS session's native state too. A reader still inside SslStream then fails on the closed socket or
            // the disposed stream: either ends its loop, as a closed socket does for the other transports.
            (_transport as IDisposable)?.Dispose();
        }
    }
}
