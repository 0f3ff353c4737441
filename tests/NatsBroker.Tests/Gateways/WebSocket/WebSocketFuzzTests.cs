using System.Net;
using System.Net.Sockets;
using System.Text;
using NATS.Client.Core;
using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Gateways.WebSocket;

/// <summary>
/// A bounded, seeded fuzz of the websocket gateway: a few thousand malformed or hostile inputs (upgrade requests,
/// frame headers, reserved opcodes and RSV bits, oversized and fragmented control frames, close frames with bad codes
/// and invalid UTF-8, NATS protocol with invalid UTF-8 in CONNECT, truncated frames, random bytes), many connections at
/// once. Whatever a connection sends, the gateway must answer or close that connection only: no session may fail with
/// an exception (an outside fuzz once dropped 14 of 5,000 connections with "Cannot transcode invalid UTF-8"), the
/// gateway must not exit, and a well-formed client must work afterwards. The seed is logged; a failure replays with it.
/// </summary>
[Collection("Gateways")]
public sealed class WebSocketFuzzTests(ITestOutputHelper output)
{
    private const int Connections = 600, FramesPerConnection = 5;

    [Fact]
    public async Task Malformed_frames_and_upgrades_never_fail_a_session_or_the_gateway()
    {
        int wsPort = TestPorts.Next();
        await using var server = await ServerProcess.StartAsync(ServerKind.Ours, new ServerStartOptions
        {
            // jwt_cookie: a CONNECT is then rewritten with the cookie's JWT when the upgrade carried one.
            Config = $"websocket {{ port: {wsPort}, no_tls: true, compression: true, jwt_cookie: \"jwt\" }}\nmax_payload: 65536\n",
            Port = TestPorts.Next(),
        }, output);
        await GatewayTestHelpers.WaitListeningAsync(wsPort);
        int seed = Environment.GetEnvironmentVariable("NATSBROKER_FUZZ_SEED") is { } s ? int.Parse(s, System.Globalization.CultureInfo.InvariantCulture) : Random.Shared.Next();
        output.WriteLine($"seed {seed} (NATSBROKER_FUZZ_SEED replays it)");

        int inputs = 0;
        using var gate = new SemaphoreSlim(16);
        var runs = Enumerable.Range(0, Connections).Select(async i =>
        {
            await gate.WaitAsync();
            try
            {
                var rng = new Random(seed + i);
                Interlocked.Add(ref inputs, await OneConnection(wsPort, rng));
            }
            finally
            {
                gate.Release();
            }
        });
        await Task.WhenAll(runs);
        output.WriteLine($"{inputs} inputs over {Connections} connections");

        // A well-formed client still works.
        await using (var nc = new NatsConnection(new NatsOpts { Url = $"ws://127.0.0.1:{wsPort}", ConnectTimeout = TimeSpan.FromSeconds(10) }))
        {
            await nc.ConnectAsync();
            await using var sub = await nc.SubscribeCoreAsync<string>("fuzz.after");
            await nc.PublishAsync("fuzz.after", "ok");
            using var cts = new CancellationTokenSource(TimeSpan.FromSeconds(10));
            Assert.Equal("ok", (await sub.Msgs.ReadAsync(cts.Token)).Data);
        }
        var log = server.Output;
        Assert.DoesNotContain("Client session failed", log, StringComparison.Ordinal);
        Assert.DoesNotContain("Exception", log, StringComparison.Ordinal);
        Assert.DoesNotContain("Cannot transcode", log, StringComparison.Ordinal);
        Assert.DoesNotContain("gateway exited", log, StringComparison.Ordinal);
    }

    /// <summary>One connection: an upgrade (sometimes malformed), then a few fuzzed frames; returns the inputs sent.</summary>
    private static async Task<int> OneConnection(int port, Random rng)
    {
        using var tcp = new TcpClient();
        await tcp.ConnectAsync(IPAddress.Loopback, port);
        var stream = tcp.GetStream();
        int sent = 0;
        try
        {
            await stream.WriteAsync(Upgrade(rng));
            sent++;
            // The 101 (or a refusal) before frames, as a client would wait for it; a refused upgrade closes.
            if (!await ReadHead(stream)) return sent;
            for (int f = 0; f < FramesPerConnection; f++)
            {
                // Half the connections start as a client does, with a well-framed CONNECT (some with invalid UTF-8 in
                // a string the gateway reads or rewrites), so the fuzz reaches past the first frame's checks.
                await stream.WriteAsync(f == 0 && rng.Next(2) == 0 ? ConnectFrame(rng) : Frame(rng));
                sent++;
            }
            // Read whatever comes back until the gateway closes or goes quiet.
            var buf = new byte[8192];
            using var quiet = new CancellationTokenSource(TimeSpan.FromMilliseconds(150));
            while (await stream.ReadAsync(buf, quiet.Token) > 0) { }
        }
        catch (Exception ex) when (ex is IOException or SocketException or OperationCanceledException)
        {
            // The gateway closing on a protocol error is an answer, not a failure.
        }
        return sent;
    }

    private static async Task<bool> ReadHead(NetworkStream stream)
    {
        var head = new List<byte>();
        var b = new byte[1];
        using var cts = new CancellationTokenSource(TimeSpan.FromSeconds(5));
        while (head.Count < 4 || !(head[^4] == '\r' && head[^3] == '\n' && head[^2] == '\r' && head[^1] == '\n'))
        {
            if (await stream.ReadAsync(b, cts.Token) == 0) return false;
            head.Add(b[0]);
        }
        return Encoding.ASCII.GetString([.. head]).StartsWith("HTTP/1.1 101", StringComparison.Ordinal);
    }

    private static byte[] Upgrade(Random rng)
    {
        var lines = new List<string>
        {
            "GET / HTTP/1.1", "Host: 127.0.0.1", "Upgrade: websocket", "Connection: Upgrade",
            "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Version: 13",
        };
        if (rng.Next(4) == 0) lines.Add("Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits");
        if (rng.Next(8) == 0) lines.Add("Cookie: " + RandomText(rng, 40));
        else if (rng.Next(3) == 0) lines.Add("Cookie: jwt=eyJ0eXAiOiJKV1QifQ.e30.sig");
        switch (rng.Next(10))
        {
            case 0: lines.RemoveAt(1 + rng.Next(lines.Count - 1)); break;            // a required header missing
            case 1: lines[0] = "POST / HTTP/1.1"; break;
            case 2: lines[5] = "Sec-WebSocket-Version: " + rng.Next(20); break;
            case 3: lines.Add(RandomText(rng, 30)); break;                           // a malformed header line
            case 4: lines[0] = "GET /" + RandomText(rng, 20) + " HTTP/1.1"; break;
        }
        var bytes = Encoding.Latin1.GetBytes(string.Join("\r\n", lines) + "\r\n\r\n");
        if (rng.Next(20) == 0) bytes[rng.Next(bytes.Length)] = (byte)rng.Next(256); // one flipped byte anywhere
        return bytes;
    }

    private static string RandomText(Random rng, int max)
    {
        var chars = new char[rng.Next(1, max)];
        for (int i = 0; i < chars.Length; i++) chars[i] = (char)rng.Next(0x20, 0xFF);
        return new string(chars);
    }

    private static readonly byte[][] Protocol =
    [
        [.. "CONNECT {\"verbose\":false,\"protocol\":1,\"name\":\"a"u8, 0xFF, 0xE2, 0x82, .. "\"}\r\n"u8], // invalid UTF-8
        "CONNECT {\"verbose\":false,\"name\":\""u8.ToArray(),
        "PUB a 5\r\nhello\r\n"u8.ToArray(),
        "SUB > 1\r\nPING\r\n"u8.ToArray(),
        "HPUB a 12 14\r\nNATS/1.0\r\n\r\nhi\r\n"u8.ToArray(),
        "PUB a 99999999\r\n"u8.ToArray(),
        "UNSUB 1\r\n"u8.ToArray(),
    ];

    private static readonly byte[][] Connects =
    [
        "CONNECT {\"verbose\":false,\"protocol\":1}\r\n"u8.ToArray(),
        [.. "CONNECT {\"verbose\":false,\"name\":\"a"u8, 0xFF, .. "\"}\r\n"u8],
        [.. "CONNECT {\"verbose\":false,\"jwt\":\"x"u8, 0xC3, .. "\"}\r\n"u8],
        [.. "CONNECT {\"verbose\":false,\"jwt\":\""u8, 0xED, 0xA0, 0x80, .. "\"}\r\n"u8], // an encoded surrogate
        [.. "CONNECT {\"user\":\"u"u8, 0xFE, .. "\",\"pass\":\"p\"}\r\n"u8],
    ];

    /// <summary>A masked, final text or binary frame holding a CONNECT.</summary>
    private static byte[] ConnectFrame(Random rng)
    {
        var payload = Connects[rng.Next(Connects.Length)];
        var key = RandomBytes(rng, 4);
        var frame = new List<byte> { (byte)(0x80 | (rng.Next(2) == 0 ? 1 : 2)), (byte)(0x80 | payload.Length) };
        frame.AddRange(key);
        for (int i = 0; i < payload.Length; i++) frame.Add((byte)(payload[i] ^ key[i & 3]));
        return [.. frame];
    }

    /// <summary>A frame: mostly well-framed with fuzzed contents, sometimes a broken header or random bytes.</summary>
    private static byte[] Frame(Random rng)
    {
        byte[] payload = rng.Next(3) switch
        {
            0 => Protocol[rng.Next(Protocol.Length)],
            1 => RandomBytes(rng, rng.Next(0, 300)),
            _ => Mutate(rng, Protocol[rng.Next(Protocol.Length)]),
        };
        int opcode = rng.Next(6) switch
        {
            0 => rng.Next(16),                       // any opcode, reserved ones included
            1 => 8,                                  // close, with whatever body
            2 => rng.Next(2) == 0 ? 9 : 10,          // ping / pong
            3 => 0,                                  // a continuation with nothing to continue
            _ => rng.Next(2) == 0 ? 1 : 2,
        };
        if (opcode == 8 && rng.Next(2) == 0)
        {
            // A close code (valid, reserved or out of range) and a reason that may not be UTF-8.
            ushort code = (ushort)(rng.Next(3) switch { 0 => 1000, 1 => rng.Next(0, 5000), _ => rng.Next(0, 65536) });
            payload = [(byte)(code >> 8), (byte)code, .. RandomBytes(rng, rng.Next(0, 140))];
        }
        bool fin = rng.Next(5) != 0;
        int rsv = rng.Next(6) == 0 ? rng.Next(8) << 4 : 0;
        bool masked = rng.Next(20) != 0;
        var frame = new List<byte> { (byte)((fin ? 0x80 : 0) | rsv | opcode) };
        int lengthForm = rng.Next(12);
        if (lengthForm == 0)
        {
            // A 64-bit length far beyond anything allowed (or with the top bit set).
            frame.Add((byte)((masked ? 0x80 : 0) | 127));
            var len = (ulong)rng.NextInt64() | (rng.Next(2) == 0 ? 0x8000000000000000UL : 0);
            for (int s = 56; s >= 0; s -= 8) frame.Add((byte)(len >> s));
        }
        else if (payload.Length <= 125 && lengthForm != 1)
        {
            frame.Add((byte)((masked ? 0x80 : 0) | payload.Length));
        }
        else
        {
            frame.Add((byte)((masked ? 0x80 : 0) | 126));
            frame.Add((byte)(payload.Length >> 8));
            frame.Add((byte)payload.Length);
        }
        var key = RandomBytes(rng, 4);
        if (masked) frame.AddRange(key);
        for (int i = 0; i < payload.Length; i++) frame.Add(masked ? (byte)(payload[i] ^ key[i & 3]) : payload[i]);
        var bytes = frame.ToArray();
        // Sometimes cut short: the connection then ends mid-frame.
        return rng.Next(10) == 0 ? bytes[..rng.Next(1, bytes.Length + 1)] : bytes;
    }

    private static byte[] RandomBytes(Random rng, int n)
    {
        var b = new byte[n];
        rng.NextBytes(b);
        return b;
    }

    private static byte[] Mutate(Random rng, byte[] source)
    {
        var b = (byte[])source.Clone();
        for (int k = rng.Next(1, 4); k > 0 && b.Length > 0; k--) b[rng.Next(b.Length)] = (byte)rng.Next(256);
        return b;
    }
}
