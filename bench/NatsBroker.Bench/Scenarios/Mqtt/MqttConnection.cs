using NatsBroker.Bench.Raw;
using System.Net;
using System.Net.Sockets;

namespace NatsBroker.Bench.Scenarios.Mqtt;

/// <summary>
/// One MQTT 3.1.1 client connection over a blocking socket, as the raw NATS generator's <see cref="Raw.RawConnection"/>:
/// a synchronous connect (so the socket stays in blocking mode), CONNECT/CONNACK bounded by a receive timeout, then
/// reads bounded by the scenario watchdog, which disposes the connection. Packets are parsed in place in one reusable
/// buffer: <see cref="TryNext"/> takes a whole packet that is already buffered, <see cref="Fill"/> reads more.
/// </summary>
internal sealed class MqttConnection : IDisposable, IBulkConnection
{
    private readonly Socket _socket;
    private readonly byte[] _buf;
    private readonly Lock _sendLock = new();
    private int _start;
    private int _end;
    private int _disposed;

    private MqttConnection(Socket socket, int readBuffer)
    {
        _socket = socket;
        _buf = new byte[readBuffer];
    }

    /// <summary>First byte of the current packet: type in the high nibble, flags in the low one.</summary>
    public byte Header { get; private set; }

    public int Type => Header & 0xF0;

    /// <summary>QoS of the current PUBLISH (3.3.1.2).</summary>
    public int Qos => (Header >> 1) & 3;

    /// <summary>The current packet's variable header and payload (valid until the next <see cref="TryNext"/>/<see cref="Fill"/>).</summary>
    public ReadOnlySpan<byte> Body => _buf.AsSpan(BodyStart, BodyLength);

    private int BodyStart { get; set; }

    private int BodyLength { get; set; }

    /// <summary>Connects, sends CONNECT (clean session) and waits for a CONNACK with return code 0.</summary>
    public static MqttConnection Connect(IPEndPoint ep, string clientId, TimeSpan timeout, int readBuffer = 64 * 1024, ushort keepAliveSeconds = 600)
    {
        var s = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp) { NoDelay = true };
        MqttConnection? c = null;
        try
        {
            using (new Timer(_ => s.Dispose(), null, timeout, Timeout.InfiniteTimeSpan))
            {
                s.Connect(ep);
            }

            s.ReceiveTimeout = (int)timeout.TotalMilliseconds;
            c = new MqttConnection(s, readBuffer);
            c.Send(MqttPackets.ConnectPacket(clientId, keepAliveSeconds));
            if (c.Next() != MqttPackets.ConnAck || c.Body.Length < 2)
            {
                throw new InvalidDataException($"expected CONNACK, got packet 0x{c.Header:X2}");
            }

            if (c.Body[1] != 0)
            {
                throw new InvalidDataException($"CONNACK return code {c.Body[1]} for client {clientId}");
            }

            s.ReceiveTimeout = 0;
            return c;
        }
        catch
        {
            if (c is null)
            {
                s.Dispose();
            }
            else
            {
                c.Dispose();
            }

            throw;
        }
    }

    /// <summary>SUBSCRIBE to one filter and wait for its SUBACK; fails when the broker refuses (0x80) or grants less.</summary>
    public void Subscribe(string topicFilter, int qos)
    {
        Send(MqttPackets.SubscribePacket(topicFilter, qos));
        while (Next() != MqttPackets.SubAck)
        {
        }

        if (Body.Length < 3 || Body[2] != qos)
        {
            throw new InvalidDataException($"SUBACK for {topicFilter} QoS {qos}: return code 0x{(Body.Length < 3 ? 0xFF : Body[2]):X2}");
        }
    }

    public void Send(ReadOnlySpan<byte> data)
    {
        lock (_sendLock)
        {
            while (!data.IsEmpty)
            {
                int n = _socket.Send(data, SocketFlags.None);
                data = data[n..];
            }
        }
    }

    /// <summary>Blocks until the next packet is complete and returns its first byte.</summary>
    public byte Next()
    {
        while (!TryNext())
        {
            Fill();
        }

        return Header;
    }

    /// <summary>PINGREQ, then reads until PINGRESP: the broker has read everything sent before. Only for connections no other thread reads.</summary>
    void IBulkConnection.Flush() => Ping();

    public void Ping()
    {
        Send(MqttPackets.PingReq);
        while (Next() != MqttPackets.PingResp)
        {
        }
    }

    /// <summary>Takes the next packet if it is wholly buffered (fixed header, Remaining Length, body).</summary>
    public bool TryNext()
    {
        int avail = _end - _start;
        if (avail < 2)
        {
            return false;
        }

        int len = 0;
        int shift = 0;
        int i = _start + 1;
        while (true)
        {
            if (i >= _end)
            {
                return false;
            }

            byte b = _buf[i++];
            len |= (b & 0x7F) << shift;
            if ((b & 0x80) == 0)
            {
                break;
            }

            shift += 7;
            if (shift > 21)
            {
                throw new InvalidDataException("malformed Remaining Length");
            }
        }

        if (i + len > _end)
        {
            if (i - _start + len > _buf.Length)
            {
                throw new InvalidDataException($"packet of {len} B does not fit the {_buf.Length} B read buffer");
            }

            return false;
        }

        Header = _buf[_start];
        BodyStart = i;
        BodyLength = len;
        _start = i + len;
        return true;
    }

    /// <summary>One blocking receive (after moving a partial packet to the front); end of stream or an error throws.</summary>
    public void Fill()
    {
        if (_start == _end)
        {
            _start = _end = 0;
        }
        else if (_buf.Length - _end < 4 * 1024)
        {
            Buffer.BlockCopy(_buf, _start, _buf, 0, _end - _start);
            _end -= _start;
            _start = 0;
        }

        int n = _socket.Receive(_buf.AsSpan(_end), SocketFlags.None, out var error);
        if (error != SocketError.Success)
        {
            throw new IOException("MQTT receive failed: " + error);
        }

        if (n == 0)
        {
            throw new IOException("the broker closed the MQTT connection");
        }

        _end += n;
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
        }
    }
}
