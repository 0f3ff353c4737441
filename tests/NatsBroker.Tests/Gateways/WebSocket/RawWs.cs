using System.Buffers.Binary;
using System.Net;
using System.Net.Sockets;
using System.Security.Cryptography;
using System.Text;

namespace NatsBroker.Tests.Gateways.WebSocket;

/// <summary>A minimal hand-driven WebSocket client for frame-level tests (masked frames, raw bytes, fragments).</summary>
internal sealed class RawWs : IDisposable
{
    private readonly TcpClient _tcp;
    private readonly NetworkStream _stream;

    private RawWs(TcpClient tcp)
    {
        _tcp = tcp;
        _stream = tcp.GetStream();
    }

    public static async Task<RawWs> Connect(int port, string extraHeaders = "")
    {
        var tcp = new TcpClient();
        await tcp.ConnectAsync(IPAddress.Loopback, port);
        var ws = new RawWs(tcp);
        await ws._stream.WriteAsync(Encoding.ASCII.GetBytes(
            "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n" + extraHeaders + "\r\n"));
        var head = new List<byte>();
        while (head.Count < 4 || !(head[^4] == '\r' && head[^3] == '\n' && head[^2] == '\r' && head[^1] == '\n'))
        {
            var b = new byte[1];
            if (await ws._stream.ReadAsync(b) == 0) throw new IOException("closed during the handshake");
            head.Add(b[0]);
        }
        Assert.StartsWith("HTTP/1.1 101", Encoding.ASCII.GetString([.. head]), StringComparison.Ordinal);
        return ws;
    }

    public Task Send(byte opcode, byte[] payload, bool fin)
    {
        var frame = new List<byte> { (byte)((fin ? 0x80 : 0) | opcode) };
        if (payload.Length <= 125) frame.Add((byte)(0x80 | payload.Length));
        else
        {
            frame.Add(0x80 | 126);
            frame.Add((byte)(payload.Length >> 8));
            frame.Add((byte)payload.Length);
        }
        var key = RandomNumberGenerator.GetBytes(4);
        frame.AddRange(key);
        for (int i = 0; i < payload.Length; i++) frame.Add((byte)(payload[i] ^ key[i & 3]));
        return SendRaw([.. frame]);
    }

    public async Task SendRaw(byte[] bytes) => await _stream.WriteAsync(bytes);

    public async Task<(int Opcode, byte[] Payload)> ReadFrame()
    {
        using var cts = new CancellationTokenSource(TimeSpan.FromSeconds(10));
        var h = new byte[2];
        await _stream.ReadExactlyAsync(h, cts.Token);
        long len = h[1] & 0x7f;
        if (len == 126)
        {
            var l = new byte[2];
            await _stream.ReadExactlyAsync(l, cts.Token);
            len = BinaryPrimitives.ReadUInt16BigEndian(l);
        }
        else if (len == 127)
        {
            var l = new byte[8];
            await _stream.ReadExactlyAsync(l, cts.Token);
            len = (long)BinaryPrimitives.ReadUInt64BigEndian(l);
        }
        var payload = new byte[len];
        await _stream.ReadExactlyAsync(payload, cts.Token);
        return (h[0] & 0x0f, payload);
    }

    public void Dispose()
    {
        _stream.Dispose();
        _tcp.Dispose();
    }
}
