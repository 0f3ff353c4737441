using System.IO.Compression;
using System.Security.Cryptography;
using System.Text;
using NatsBroker.WebSocketGateway;

namespace NatsBroker.Tests.Gateways.WebSocket;

/// <summary>The hand-written frame codec: masking, and decoding whatever way the bytes arrive.</summary>
public sealed class FrameCodecTests
{
    [Theory]
    [InlineData(0, 0)]
    [InlineData(1, 3)]
    [InlineData(7, 1)]
    [InlineData(31, 2)]
    [InlineData(33, 0)]
    [InlineData(100, 3)]
    [InlineData(4099, 1)]
    public void Vector_masking_equals_the_rfc_byte_loop(int length, int position)
    {
        var data = RandomNumberGenerator.GetBytes(length);
        var key = RandomNumberGenerator.GetBytes(4);
        var expected = data.Select((b, i) => (byte)(b ^ key[(position + i) & 3])).ToArray();
        int pos = position;
        Masking.Apply(data, BitConverter.ToUInt32(key), ref pos);
        Assert.Equal(expected, data);
        Assert.Equal((position + length) & 3, pos);
    }

    private sealed class Collector : IFrameSink
    {
        public List<byte> Data { get; } = [];
        public List<(byte Opcode, byte[] Payload)> Controls { get; } = [];
        void IFrameSink.Data(ReadOnlySpan<byte> payload) => Data.AddRange(payload.ToArray());
        void IFrameSink.Control(byte opcode, ReadOnlySpan<byte> payload) => Controls.Add((opcode, payload.ToArray()));
    }

    private static byte[] Frame(byte first, byte[] payload, bool mask = true)
    {
        var f = new List<byte> { first };
        byte m = mask ? (byte)0x80 : (byte)0;
        if (payload.Length <= 125) f.Add((byte)(m | payload.Length));
        else if (payload.Length < 65536) f.AddRange([(byte)(m | 126), (byte)(payload.Length >> 8), (byte)payload.Length]);
        else
        {
            f.Add((byte)(m | 127));
            f.AddRange(BitConverter.GetBytes((ulong)payload.Length).Reverse());
        }
        var key = mask ? RandomNumberGenerator.GetBytes(4) : [0, 0, 0, 0];
        if (mask) f.AddRange(key);
        f.AddRange(payload.Select((b, i) => (byte)(b ^ key[i & 3])));
        return [.. f];
    }

    /// <summary>A stream of mixed frames decodes the same whatever the read sizes (1 byte up to all at once).</summary>
    [Theory]
    [InlineData(1)]
    [InlineData(3)]
    [InlineData(7)]
    [InlineData(1000)]
    [InlineData(1 << 20)]
    public void Any_split_decodes_the_same(int chunk)
    {
        var big = Encoding.ASCII.GetBytes("PUB x 70000\r\n" + new string('a', 70000) + "\r\n");
        byte[] wire = [
            .. Frame(0x01, "CONN"u8.ToArray()), // text, not final
            .. Frame(0x89, "p1"u8.ToArray()),   // ping between fragments
            .. Frame(0x80, "ECT {}\r\n"u8.ToArray()), // final continuation
            .. Frame(0x82, big),
            .. Frame(0x82, "PING\r\n"u8.ToArray()),
        ];
        var sink = new Collector();
        using var decoder = new FrameDecoder(requireMask: true, compressionNegotiated: false);
        for (int i = 0; i < wire.Length; i += chunk)
            Assert.True(decoder.Decode(wire.AsSpan(i, Math.Min(chunk, wire.Length - i)), sink), decoder.Error);
        Assert.Equal("CONNECT {}\r\n" + Encoding.ASCII.GetString(big) + "PING\r\n", Encoding.ASCII.GetString([.. sink.Data]));
        var ping = Assert.Single(sink.Controls);
        Assert.Equal(WsOpcode.Ping, ping.Opcode);
        Assert.Equal("p1", Encoding.ASCII.GetString(ping.Payload));
    }

    [Fact]
    public void Compressed_message_across_frames_is_inflated()
    {
        var text = Encoding.ASCII.GetBytes(string.Concat(Enumerable.Repeat("PUB a 5\r\nhello\r\n", 500)));
        using var ms = new MemoryStream();
        using (var d = new DeflateStream(ms, CompressionLevel.Optimal, leaveOpen: true))
        {
            d.Write(text);
            d.Flush();
        }
        var compressed = ms.ToArray();
        int marker = compressed.AsSpan().LastIndexOf((ReadOnlySpan<byte>)[0x00, 0x00, 0xff, 0xff]);
        compressed = compressed[..marker];
        int half = compressed.Length / 2;
        byte[] wire = [.. Frame(0x42, compressed[..half]), .. Frame(0x80, compressed[half..])];
        var sink = new Collector();
        using var decoder = new FrameDecoder(requireMask: true, compressionNegotiated: true);
        Assert.True(decoder.Decode(wire, sink), decoder.Error);
        Assert.Equal(text, sink.Data.ToArray());
    }

    [Theory]
    [InlineData(new byte[] { 0x82, 0x01, 0x41 }, "mask bit missing")]
    [InlineData(new byte[] { 0x83, 0x80, 0, 0, 0, 0 }, "unknown opcode 3")]
    [InlineData(new byte[] { 0x80, 0x80, 0, 0, 0, 0 }, "invalid continuation frame")]
    [InlineData(new byte[] { 0x09, 0x80, 0, 0, 0, 0 }, "control frame does not have final bit set")]
    [InlineData(new byte[] { 0x89, 0xFE, 0, 126, 0, 0, 0, 0 }, "control frame length bigger than maximum allowed of 125 bytes")]
    [InlineData(new byte[] { 0x02, 0x80, 0, 0, 0, 0, 0x82, 0x80, 0, 0, 0, 0 }, "new message started before final frame for previous message was received")]
    [InlineData(new byte[] { 0xC2, 0x80, 0, 0, 0, 0 }, "compressed frame received but compression was not negotiated")]
    public void Protocol_errors_have_nats_server_texts(byte[] wire, string error)
    {
        using var decoder = new FrameDecoder(requireMask: true, compressionNegotiated: false);
        Assert.False(decoder.Decode(wire, new Collector()));
        Assert.Equal(error, decoder.Error);
        Assert.Equal(WsCloseStatus.ProtocolError, decoder.ErrorStatus);
    }

    /// <summary>Browsers' 4 KB frames: one read from the core becomes consecutive frames in one buffer (one write).</summary>
    [Theory]
    [InlineData(10_000)]
    [InlineData(8192)]
    [InlineData(4097)]
    public void Write_frames_cuts_a_payload_into_browser_sized_frames(int length)
    {
        var payload = new byte[length];
        for (int i = 0; i < length; i++) payload[i] = (byte)(i * 7);
        var output = new byte[FrameHeader.FramedSize(length, 4096)];
        int written = FrameHeader.WriteFrames(payload, output, 4096);
        Assert.Equal(output.Length, written);
        var joined = new List<byte>();
        int at = 0, frames = 0;
        while (at < written)
        {
            Assert.Equal(WsOpcode.Fin | WsOpcode.Binary, output[at]);
            int len = output[at + 1] == 126 ? (output[at + 2] << 8) | output[at + 3] : output[at + 1];
            int header = output[at + 1] == 126 ? 4 : 2;
            Assert.InRange(len, 1, 4096);
            joined.AddRange(output.AsSpan(at + header, len).ToArray());
            at += header + len;
            frames++;
        }
        Assert.Equal((length + 4095) / 4096, frames);
        Assert.Equal(payload, joined.ToArray());
    }

    [Fact]
    public void Accept_key_is_rfc6455s_example() =>
        Assert.Equal("s3pPLMBiTxaQ9kYGzzhZRbK+xOo=", UpgradeRequest.AcceptKey("dGhlIHNhbXBsZSBub25jZQ=="));

    /// <summary>jwt_cookie: the cookie's JWT goes into CONNECT only when CONNECT has no jwt of its own (nats-server's rule).</summary>
    [Theory]
    [InlineData("CONNECT {\"verbose\":false}", "CONNECT {\"verbose\":false,\"jwt\":\"cookie.jwt\"}")]
    [InlineData("CONNECT {\"jwt\":\"own.jwt\"}", "CONNECT {\"jwt\":\"own.jwt\"}")]
    [InlineData("CONNECT {\"jwt\":\"\"}", "CONNECT {\"jwt\":\"cookie.jwt\"}")]
    [InlineData("PING", "PING")]
    public void Jwt_cookie_fills_a_missing_jwt(string line, string expected) =>
        Assert.Equal(expected, Encoding.ASCII.GetString(WebSocketSession.WithCookieCredentials(Encoding.ASCII.GetBytes(line), new AcceptedUpgrade("k", UpgradeKind.Nats, false, false, null, null, false, "cookie.jwt", null))));

    /// <summary>user_cookie, pass_cookie, token_cookie fill CONNECT's user, pass and auth_token only where CONNECT has none.</summary>
    [Theory]
    [InlineData("CONNECT {}", "CONNECT {\"user\":\"cu\",\"pass\":\"cp\",\"auth_token\":\"ct\"}")]
    [InlineData("CONNECT {\"user\":\"me\",\"pass\":\"\"}", "CONNECT {\"user\":\"me\",\"pass\":\"cp\",\"auth_token\":\"ct\"}")]
    public void Credential_cookies_fill_missing_fields(string line, string expected) =>
        Assert.Equal(expected, Encoding.ASCII.GetString(WebSocketSession.WithCookieCredentials(Encoding.ASCII.GetBytes(line),
            new AcceptedUpgrade("k", UpgradeKind.Nats, false, false, null, null, false, null, null, "cu", "cp", "ct"))));

    /// <summary>
    /// Invalid UTF-8 in CONNECT (a fuzzed client name) is read as Go reads it, one U+FFFD per bad byte, instead of an
    /// InvalidOperationException ("Cannot transcode invalid UTF-8") that dropped the connection when the object was
    /// written back. The proxy rewrite (every gateway) and the cookie fill (WebSocket) both go through it.
    /// </summary>
    [Fact]
    public void Connect_with_invalid_utf8_is_rewritten_with_replacement_characters()
    {
        byte[] line = [.. "CONNECT {\"name\":\"a"u8, 0xFF, 0xE2, 0x82, .. "b\"}"u8];
        var filled = WebSocketSession.WithCookieCredentials(line, new AcceptedUpgrade("k", UpgradeKind.Nats, false, false, null, null, false, "cookie.jwt", null));
        Assert.Equal("a\uFFFD\uFFFD\uFFFDb", ConnectField(filled, "name"));
        Assert.Equal("cookie.jwt", ConnectField(filled, "jwt"));

        using var signer = new NatsBroker.Gateways.Link.ProxySigner(NATS.NKeys.KeyPair.CreatePair(NATS.NKeys.PrefixByte.User).GetSeed());
        var rewritten = NatsBroker.Gateways.Link.CoreLink.RewriteConnect(line, signer, "nonce", new NatsBroker.Contracts.Gateways.ProxiedClient { Ip = "192.0.2.1", Port = 1 });
        Assert.NotNull(rewritten);
        Assert.Equal("a\uFFFD\uFFFD\uFFFDb", ConnectField(rewritten, "name"));
    }

    private static string? ConnectField(byte[] line, string field) =>
        System.Text.Json.JsonDocument.Parse(line.AsMemory(8)).RootElement.GetProperty(field).GetString();

    [Fact]
    public void Credential_cookies_are_read_from_the_upgrade_request()
    {
        var head = "GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: k\r\nSec-WebSocket-Version: 13\r\nCookie: u=alice; p=secret; t=tok\r\n\r\n"u8;
        var outcome = UpgradeRequest.Check(head, trailing: false, new WebSocketOptions { NoTls = true, UserCookie = "u", PassCookie = "p", TokenCookie = "t" }, tls: false);
        Assert.Equal(("alice", "secret", "tok"), (outcome.Upgrade!.CookieUser, outcome.Upgrade.CookiePass, outcome.Upgrade.CookieToken));
    }

    [Fact]
    public void Jwt_cookie_is_read_from_the_upgrade_request()
    {
        var head = "GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: k\r\nSec-WebSocket-Version: 13\r\nCookie: a=b; my_jwt=eyJ.x.y; c=d\r\n\r\n"u8;
        var outcome = UpgradeRequest.Check(head, trailing: false, new WebSocketOptions { NoTls = true, JwtCookie = "my_jwt" }, tls: false);
        Assert.Equal("eyJ.x.y", outcome.Upgrade!.CookieJwt);
    }

    [Fact]
    public void Mqtt_path_is_recognised_for_the_mqtt_seam()
    {
        var head = "GET /mqtt HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: k\r\nSec-WebSocket-Version: 13\r\n\r\n"u8;
        var outcome = UpgradeRequest.Check(head, trailing: false, new WebSocketOptions { NoTls = true }, tls: false);
        Assert.Equal(UpgradeKind.Mqtt, outcome.Upgrade!.Kind);
        Assert.Contains("Sec-Websocket-Protocol: mqtt\r\n", Encoding.ASCII.GetString(UpgradeRequest.SwitchingProtocols(outcome.Upgrade)), StringComparison.Ordinal);
    }
}
