using System.Net.Sockets;
using System.Text;

namespace NatsBroker.Tests.Gateways.Mqtt;

/// <summary>A hand-made MQTT 3.1.1 client over a raw socket, for what a library client will not do (vanish without DISCONNECT, go silent).</summary>
internal sealed class RawMqtt : IDisposable
{
    private readonly TcpClient _tcp = new();
    private NetworkStream _stream = null!;

    public static async Task<RawMqtt> ConnectAsync(int port, string clientId, ushort keepAlive = 60, string? willTopic = null, string? willMessage = null,
        string? user = null, string? password = null, bool cleanSession = true)
    {
        var raw = new RawMqtt();
        await raw._tcp.ConnectAsync("127.0.0.1", port);
        raw._stream = raw._tcp.GetStream();
        var body = new List<byte>();
        body.AddRange(Str("MQTT"));
        body.Add(4);
        byte flags = (byte)(cleanSession ? 0x02 : 0);
        if (willTopic is not null) flags |= 0x04;
        if (user is not null) flags |= 0x80;
        if (password is not null) flags |= 0x40;
        body.Add(flags);
        body.Add((byte)(keepAlive >> 8));
        body.Add((byte)keepAlive);
        body.AddRange(Str(clientId));
        if (willTopic is not null)
        {
            body.AddRange(Str(willTopic));
            body.AddRange(Str(willMessage ?? ""));
        }
        if (user is not null) body.AddRange(Str(user));
        if (password is not null) body.AddRange(Str(password));
        await raw.SendAsync(0x10, [.. body]);
        return raw;
    }

    /// <summary>The CONNACK's return code.</summary>
    public async Task<byte> ReadConnAckAsync()
    {
        var buf = new byte[4];
        await _stream.ReadExactlyAsync(buf).AsTask().WaitAsync(TimeSpan.FromSeconds(15));
        Assert.Equal(0x20, buf[0]);
        return buf[3];
    }

    /// <summary>True when the server closes the connection within <paramref name="seconds"/>.</summary>
    public async Task<bool> ClosedWithinAsync(int seconds)
    {
        using var cts = new CancellationTokenSource(TimeSpan.FromSeconds(seconds));
        var buf = new byte[256];
        try
        {
            while (true)
            {
                if (await _stream.ReadAsync(buf, cts.Token) == 0) return true;
            }
        }
        catch (OperationCanceledException)
        {
            return false;
        }
        catch (IOException)
        {
            return true;
        }
    }

    public Task DisconnectAsync() => SendAsync(0xE0, []);

    /// <summary>A TCP connection and nothing sent yet (for hand-made CONNECT packets).</summary>
    public static async Task<RawMqtt> OpenAsync(int port)
    {
        var raw = new RawMqtt();
        await raw._tcp.ConnectAsync("127.0.0.1", port);
        raw._stream = raw._tcp.GetStream();
        return raw;
    }

    /// <summary>Writes the bytes as they are, in one write.</summary>
    public async Task SendRawAsync(byte[] bytes) => await _stream.WriteAsync(bytes);

    /// <summary>
    /// What the server does next: "closed" (end of stream or reset, nothing sent first), the next packet as
    /// "XX body" (hex; a packet then the close reads as that packet), or "silent" when nothing happens within
    /// <paramref name="seconds"/>.
    /// </summary>
    public async Task<string> OutcomeAsync(int seconds = 5)
    {
        try
        {
            var (header, body) = await ReadPacketAsync(seconds);
            return $"{header:X2} {Convert.ToHexString(body)}";
        }
        catch (EndOfStreamException)
        {
            return "closed";
        }
        catch (IOException)
        {
            return "closed";
        }
        catch (OperationCanceledException)
        {
            return "silent";
        }
    }

    /// <summary>QoS 1 PUBLISHes of the payloads "0", "1", ... with packet identifiers 1, 2, ..., all in one write.</summary>
    public async Task PublishQoS1BurstAsync(string topic, int count)
    {
        var burst = new List<byte>();
        for (int i = 0; i < count; i++)
        {
            byte[] body = [.. Str(topic), (byte)((i + 1) >> 8), (byte)(i + 1), .. Encoding.ASCII.GetBytes(i.ToString(System.Globalization.CultureInfo.InvariantCulture))];
            burst.AddRange(Packet(0x32, body));
        }
        await _stream.WriteAsync(burst.ToArray());
    }

    /// <summary>QoS 0 PUBLISHes (each its fixed header byte, topic and payload), all in one write.</summary>
    public async Task PublishBurstAsync(IEnumerable<(byte Header, string Topic, string Payload)> packets)
    {
        var burst = new List<byte>();
        foreach (var (header, topic, payload) in packets) burst.AddRange(Packet(header, [.. Str(topic), .. Encoding.UTF8.GetBytes(payload)]));
        await _stream.WriteAsync(burst.ToArray());
    }

    /// <summary>The packet identifiers of the next <paramref name="count"/> PUBACKs, in the order they came.</summary>
    public async Task<List<int>> ReadPubAcksAsync(int count)
    {
        var ids = new List<int>(count);
        var ack = new byte[4];
        for (int i = 0; i < count; i++)
        {
            await _stream.ReadExactlyAsync(ack).AsTask().WaitAsync(TimeSpan.FromSeconds(15));
            Assert.Equal(0x40, ack[0]);
            Assert.Equal(2, ack[1]);
            ids.Add(ack[2] << 8 | ack[3]);
        }
        return ids;
    }

    /// <summary>SUBSCRIBE to one filter (packet identifier 1); the granted QoS from the SUBACK.</summary>
    public async Task<byte> SubscribeAsync(string filter, byte qos)
    {
        await SendAsync(0x82, [0, 1, .. Str(filter), qos]);
        var (header, body) = await ReadPacketAsync();
        Assert.Equal(0x90, header);
        return body[2];
    }

    /// <summary>The next packet: its first byte and its body.</summary>
    public async Task<(byte Header, byte[] Body)> ReadPacketAsync(int seconds = 15)
    {
        using var cts = new CancellationTokenSource(TimeSpan.FromSeconds(seconds));
        var one = new byte[1];
        await _stream.ReadExactlyAsync(one, cts.Token);
        byte header = one[0];
        int length = 0, shift = 0;
        do
        {
            await _stream.ReadExactlyAsync(one, cts.Token);
            length |= (one[0] & 0x7F) << shift;
            shift += 7;
        }
        while ((one[0] & 0x80) != 0);
        var body = new byte[length];
        await _stream.ReadExactlyAsync(body, cts.Token);
        return (header, body);
    }

    /// <summary>A PUBLISH packet's topic, QoS, packet identifier (0 for QoS 0) and payload.</summary>
    public static (string Topic, int Qos, int PacketId, string Payload) ParsePublish(byte header, byte[] body)
    {
        Assert.Equal(3, header >> 4);
        int qos = (header >> 1) & 3;
        int topicLength = body[0] << 8 | body[1];
        string topic = Encoding.UTF8.GetString(body, 2, topicLength);
        int at = 2 + topicLength;
        int id = 0;
        if (qos > 0)
        {
            id = body[at] << 8 | body[at + 1];
            at += 2;
        }
        return (topic, qos, id, Encoding.UTF8.GetString(body, at, body.Length - at));
    }

    /// <summary>PUBACK (0x40), PUBREC (0x50), PUBREL (0x62) or PUBCOMP (0x70) for a packet identifier.</summary>
    public Task AcknowledgeAsync(byte header, int packetId) => SendAsync(header, [(byte)(packetId >> 8), (byte)packetId]);

    /// <summary>Closes the socket without DISCONNECT (RST): the will must be published.</summary>
    public void Vanish()
    {
        _tcp.Client.LingerState = new LingerOption(true, 0);
        _tcp.Close();
    }

    private async Task SendAsync(byte header, byte[] body) => await _stream.WriteAsync(Packet(header, body));

    internal static byte[] Packet(byte header, byte[] body)
    {
        var packet = new List<byte> { header };
        int len = body.Length;
        do
        {
            byte b = (byte)(len & 0x7F);
            len >>= 7;
            if (len > 0) b |= 0x80;
            packet.Add(b);
        }
        while (len > 0);
        packet.AddRange(body);
        return [.. packet];
    }

    internal static byte[] Str(string s)
    {
        var b = Encoding.UTF8.GetBytes(s);
        return [(byte)(b.Length >> 8), (byte)b.Length, .. b];
    }

    public void Dispose() => _tcp.Dispose();
}
