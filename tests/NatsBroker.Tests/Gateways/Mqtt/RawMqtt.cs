using System.Net.Sockets;
using System.Text;

namespace NatsBroker.Tests.Gateways.Mqtt;

/// <summary>A hand-made MQTT 3.1.1 client over a raw socket, for what a library client will not do (vanish without DISCONNECT, go silent).</summary>
internal sealed class RawMqtt : IDisposable
{
    private readonly TcpClient _tcp = new();
    private NetworkStream _stream = null!;

    public static async Task<RawMqtt> ConnectAsync(int port, string clientId, ushort keepAlive = 60, string? willTopic = null, string? willMessage = null,
        string? user = null, string? password = null)
    {
        var raw = new RawMqtt();
        await raw._tcp.ConnectAsync("127.0.0.1", port);
        raw._stream = raw._tcp.GetStream();
        var body = new List<byte>();
        body.AddRange(Str("MQTT"));
        body.Add(4);
        byte flags = 0x02; // clean session
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

    /// <summary>Closes the socket without DISCONNECT (RST): the will must be published.</summary>
    public void Vanish()
    {
        _tcp.Client.LingerState = new LingerOption(true, 0);
        _tcp.Close();
    }

    private async Task SendAsync(byte header, byte[] body)
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
        await _stream.WriteAsync(packet.ToArray());
    }

    private static byte[] Str(string s)
    {
        var b = Encoding.UTF8.GetBytes(s);
        return [(byte)(b.Length >> 8), (byte)b.Length, .. b];
    }

    public void Dispose() => _tcp.Dispose();
}
