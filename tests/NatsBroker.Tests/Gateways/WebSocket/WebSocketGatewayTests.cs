using System.Diagnostics;
using System.Net;
using System.Net.Sockets;
using System.Net.WebSockets;
using System.Text;
using System.Text.Json;
using System.Text.RegularExpressions;
using NATS.Client.Core;
using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Gateways.WebSocket;

/// <summary>
/// NATS over WebSocket through the websocket gateway (gateways/websocket), started by the core as a supervised
/// child for a <c>websocket {}</c> block; Go nats-server 2.9.10 with the same config is the oracle.
/// </summary>
[Collection("Gateways")]
public sealed partial class WebSocketGatewayTests(ITestOutputHelper output)
{

    private sealed record Running(ServerProcess Server, int WsPort) : IAsyncDisposable
    {
        public ValueTask DisposeAsync() => Server.DisposeAsync();
    }

    private async Task<Running> Start(ServerKind kind, string wsExtra = "", bool monitoring = false, string rest = "")
    {
        Prerequisites.RequireServer(kind, output);
        int wsPort = TestPorts.Next();
        var server = await ServerProcess.StartAsync(kind, new ServerStartOptions
        {
            Config = $$"""
                websocket {
                  port: {{wsPort}}
                  no_tls: true
                  {{wsExtra}}
                }
                {{rest}}
                """,
            Port = TestPorts.Next(),
            Monitoring = monitoring,
        }, output);
        await GatewayTestHelpers.WaitListeningAsync(wsPort);
        return new Running(server, wsPort);
    }

    private static NatsOpts WsOpts(int port) => new()
    {
        Url = $"ws://127.0.0.1:{port}",
        ConnectTimeout = TimeSpan.FromSeconds(10),
    };

    [SkippableTheory]
    [InlineData(ServerKind.Ours)]
    [InlineData(ServerKind.Go)]
    public async Task NatsNet_over_ws_pubsub_request_reply_and_a_1MiB_message(ServerKind kind)
    {
        await using var s = await Start(kind);
        await using var nc = new NatsConnection(WsOpts(s.WsPort));
        await nc.ConnectAsync();
        await using var sub = await nc.SubscribeCoreAsync<byte[]>("big.>");
        await using var svc = await nc.SubscribeCoreAsync<string>("svc.echo");
        var serve = Task.Run(async () =>
        {
            await foreach (var m in svc.Msgs.ReadAllAsync())
            {
                await m.ReplyAsync("echo:" + m.Data);
                return;
            }
        });
        var reply = await nc.RequestAsync<string, string>("svc.echo", "hi");
        Assert.Equal("echo:hi", reply.Data);
        await serve;

        var payload = new byte[1024 * 1024];
        Random.Shared.NextBytes(payload);
        await nc.PublishAsync("big.one", payload);
        using var cts = new CancellationTokenSource(TimeSpan.FromSeconds(20));
        var msg = await sub.Msgs.ReadAsync(cts.Token);
        Assert.Equal(payload, msg.Data);
    }

    [SkippableFact]
    public async Task Connz_shows_the_end_users_address_and_the_websocket_gateway()
    {
        await using var s = await Start(ServerKind.Ours, monitoring: true);
        await using var nc = new NatsConnection(WsOpts(s.WsPort));
        await nc.ConnectAsync();
        await nc.PingAsync();
        using var http = new HttpClient();
        var connz = JsonDocument.Parse(await http.GetStringAsync(await GatewayTestHelpers.ConnzUri(s.Server)));
        var conn = Assert.Single(connz.RootElement.GetProperty("connections").EnumerateArray());
        Assert.Equal("127.0.0.1", conn.GetProperty("ip").GetString());
        Assert.NotEqual(0, conn.GetProperty("port").GetInt32());
        Assert.Equal("websocket", conn.GetProperty("proxy").GetProperty("gateway").GetString());
    }

    /// <summary>Every refusal, byte for byte as nats-server 2.9.10 answers it (its Date header aside).</summary>
    [SkippableFact]
    public async Task Refused_upgrades_are_answered_as_nats_server_answers_them()
    {
        const string ok = "GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n";
        string[] requests =
        [
            "POST / HTTP/1.1\r\nHost: x\r\n\r\n",
            ok.Replace("Version: 13", "Version: 12", StringComparison.Ordinal) + "\r\n",
            ok.Replace("Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n", "", StringComparison.Ordinal) + "\r\n",
            ok.Replace("Upgrade: websocket\r\n", "", StringComparison.Ordinal) + "\r\n",
            ok.Replace("Connection: Upgrade", "Connection: keep-alive", StringComparison.Ordinal) + "\r\n",
            "GET / HTTP/1.0\r\n\r\n",
            "hello\r\n\r\n",
            ok + "Origin: http://evil.example\r\n\r\n",
            ok + "Origin: http://good.example:8080\r\n\r\n",
        ];
        const string origins = "allowed_origins: [\"http://good.example:8080\"]";
        await using var ours = await Start(ServerKind.Ours, origins);
        await using var go = await Start(ServerKind.Go, origins);
        foreach (var request in requests)
        {
            var expected = Normalize(await Exchange(go.WsPort, request));
            var actual = Normalize(await Exchange(ours.WsPort, request));
            output.WriteLine($"{request.Split("\r\n")[0]} -> {expected.Split("\r\n")[0]}");
            Assert.Equal(expected, actual);
        }
    }

    /// <summary>The HTTP answer to one request (up to the end of the head for a 101, else what comes within a second).</summary>
    private static async Task<string> Exchange(int port, string request)
    {
        using var c = new TcpClient();
        await c.ConnectAsync(IPAddress.Loopback, port);
        var stream = c.GetStream();
        await stream.WriteAsync(Encoding.ASCII.GetBytes(request));
        var buffer = new byte[8192];
        int filled = 0;
        using var cts = new CancellationTokenSource(TimeSpan.FromSeconds(1));
        try
        {
            while (filled < buffer.Length)
            {
                int n = await stream.ReadAsync(buffer.AsMemory(filled), cts.Token);
                if (n == 0) break;
                filled += n;
                var text = Encoding.Latin1.GetString(buffer, 0, filled);
                if (text.StartsWith("HTTP/1.1 101", StringComparison.Ordinal) && text.Contains("\r\n\r\n", StringComparison.Ordinal)) break;
            }
        }
        catch (OperationCanceledException)
        {
            // Go's server keeps the connection open after an error answer.
        }
        var all = Encoding.Latin1.GetString(buffer, 0, filled);
        int head = all.IndexOf("\r\n\r\n", StringComparison.Ordinal);
        return all.StartsWith("HTTP/1.1 101", StringComparison.Ordinal) && head >= 0 ? all[..(head + 4)] : all;
    }

    private static string Normalize(string response) => DateHeader().Replace(response, "Date: -\r\n");

    [GeneratedRegex("Date: [^\r]*\r\n")]
    private static partial Regex DateHeader();

    /// <summary>
    /// One NATS op split over a text frame and two continuation frames, several ops in one binary frame, a ping
    /// answered with a pong carrying its payload, and a close echoed with its status: same as nats-server.
    /// </summary>
    [SkippableTheory]
    [InlineData(ServerKind.Ours)]
    [InlineData(ServerKind.Go)]
    public async Task Fragments_many_ops_per_frame_ping_and_close(ServerKind kind)
    {
        await using var s = await Start(kind);
        using var ws = await RawWs.Connect(s.WsPort);
        var info = await ws.ReadFrame();
        Assert.Equal(2, info.Opcode);
        Assert.StartsWith("INFO {", Encoding.ASCII.GetString(info.Payload), StringComparison.Ordinal);
        // CONNECT split across three frames (text, continuation, final continuation).
        var connect = "CONNECT {\"verbose\":false,\"protocol\":1}\r\n"u8.ToArray();
        await ws.Send(1, connect[..10], fin: false);
        await ws.Send(0, connect[10..20], fin: false);
        await ws.Send(0, connect[20..], fin: true);
        // Many ops in one frame.
        await ws.Send(2, "SUB a 1\r\nPUB a 5\r\nhello\r\nPING\r\n"u8.ToArray(), fin: true);
        var got = new StringBuilder();
        while (!got.ToString().Contains("PONG\r\n", StringComparison.Ordinal))
        {
            var f = await ws.ReadFrame();
            Assert.Equal(2, f.Opcode);
            got.Append(Encoding.ASCII.GetString(f.Payload));
        }
        Assert.Contains("MSG a 1 5\r\nhello\r\n", got.ToString(), StringComparison.Ordinal);
        await ws.Send(9, "ping-data"u8.ToArray(), fin: true);
        var pong = await ws.ReadFrame();
        Assert.Equal(10, pong.Opcode);
        Assert.Equal("ping-data", Encoding.ASCII.GetString(pong.Payload));
        await ws.Send(8, [0x03, 0xE8, (byte)'b', (byte)'y', (byte)'e'], fin: true);
        var close = await ws.ReadFrame();
        Assert.Equal(8, close.Opcode);
        Assert.Equal(new byte[] { 0x03, 0xE8, (byte)'b', (byte)'y', (byte)'e' }, close.Payload);
    }

    /// <summary>
    /// An unmasked client frame is a protocol error. nats-server's code queues a close 1002 "mask bit missing"
    /// (server/websocket.go wsHandleProtocolError) and closes the socket, racing the flush: 2.9.10 sometimes sends the
    /// frame and sometimes ends the stream without it (both observed). The gateway always sends the frame, then closes.
    /// </summary>
    [SkippableTheory]
    [InlineData(ServerKind.Ours)]
    [InlineData(ServerKind.Go)]
    public async Task Unmasked_frame_ends_the_connection_with_1002(ServerKind kind)
    {
        await using var s = await Start(kind);
        using var ws = await RawWs.Connect(s.WsPort);
        await ws.ReadFrame();
        await ws.SendRaw([0x82, 0x06, .. "PING\r\n"u8.ToArray()]);
        (int Opcode, byte[] Payload) close;
        try
        {
            close = await ws.ReadFrame();
        }
        catch (EndOfStreamException) when (kind == ServerKind.Go)
        {
            return;
        }
        Assert.Equal(8, close.Opcode);
        Assert.Equal(1002, (close.Payload[0] << 8) | close.Payload[1]);
        Assert.Equal("mask bit missing", Encoding.ASCII.GetString(close.Payload, 2, close.Payload.Length - 2));
        await Assert.ThrowsAsync<EndOfStreamException>(ws.ReadFrame);
    }

    /// <summary>A browser (User-Agent "Mozilla/") gets frames of at most 4 KB; other clients get bigger ones.</summary>
    [SkippableTheory]
    [InlineData(ServerKind.Ours, true)]
    [InlineData(ServerKind.Ours, false)]
    [InlineData(ServerKind.Go, true)]
    [InlineData(ServerKind.Go, false)]
    public async Task Browsers_get_frames_of_at_most_4KB(ServerKind kind, bool browser)
    {
        await using var s = await Start(kind);
        using var ws = await RawWs.Connect(s.WsPort, browser ? "User-Agent: Mozilla/5.0 (X11; Linux x86_64)\r\n" : "");
        await ws.ReadFrame();
        var body = new string('x', 20000);
        await ws.Send(2, Encoding.ASCII.GetBytes($"CONNECT {{\"verbose\":false}}\r\nSUB b 1\r\nPUB b {body.Length}\r\n{body}\r\nPING\r\n"), fin: true);
        var got = new StringBuilder();
        int largest = 0;
        while (!got.ToString().Contains("PONG\r\n", StringComparison.Ordinal))
        {
            var f = await ws.ReadFrame();
            largest = Math.Max(largest, f.Payload.Length);
            got.Append(Encoding.ASCII.GetString(f.Payload));
        }
        Assert.Contains($"MSG b 1 {body.Length}\r\n{body}\r\n", got.ToString(), StringComparison.Ordinal);
        if (browser) Assert.True(largest <= 4096, $"largest frame {largest}");
        else Assert.True(largest > 4096, $"largest frame {largest}");
    }

    /// <summary>permessage-deflate negotiated by .NET's ClientWebSocket (which checks the server's answer) both ways.</summary>
    [SkippableTheory]
    [InlineData(ServerKind.Ours, true)]
    [InlineData(ServerKind.Ours, false)]
    [InlineData(ServerKind.Go, true)]
    [InlineData(ServerKind.Go, false)]
    public async Task Compression_on_and_off(ServerKind kind, bool compression)
    {
        await using var s = await Start(kind, compression ? "compression: true" : "");
        using var ws = new ClientWebSocket();
        ws.Options.CollectHttpResponseDetails = true;
        ws.Options.DangerousDeflateOptions = new WebSocketDeflateOptions { ClientContextTakeover = false, ServerContextTakeover = false };
        await ws.ConnectAsync(new Uri($"ws://127.0.0.1:{s.WsPort}"), CancellationToken.None);
        Assert.Equal(compression ? "permessage-deflate; server_no_context_takeover; client_no_context_takeover" : null,
            ws.HttpResponseHeaders?.Where(h => h.Key.Equals("Sec-WebSocket-Extensions", StringComparison.OrdinalIgnoreCase)).SelectMany(h => h.Value).FirstOrDefault());
        var body = string.Concat(Enumerable.Repeat("compressible-", 2000));
        var ops = $"CONNECT {{\"verbose\":false}}\r\nSUB z 1\r\nPUB z {body.Length}\r\n{body}\r\nPING\r\n";
        await ws.SendAsync(Encoding.ASCII.GetBytes(ops), WebSocketMessageType.Binary, WebSocketMessageFlags.EndOfMessage, CancellationToken.None);
        var got = new StringBuilder();
        var buffer = new byte[1 << 20];
        using var cts = new CancellationTokenSource(TimeSpan.FromSeconds(10));
        while (!got.ToString().Contains("PONG\r\n", StringComparison.Ordinal))
        {
            var r = await ws.ReceiveAsync(buffer, cts.Token);
            got.Append(Encoding.ASCII.GetString(buffer, 0, r.Count));
        }
        Assert.Contains($"MSG z 1 {body.Length}\r\n{body}\r\n", got.ToString(), StringComparison.Ordinal);
    }

    /// <summary>SIGKILL the supervised gateway: the core restarts it and a NATS.Net client reconnects and works.</summary>
    [SkippableFact]
    public async Task Gateway_restart_clients_reconnect()
    {
        await using var s = await Start(ServerKind.Ours);
        await using var nc = new NatsConnection(WsOpts(s.WsPort) with { ReconnectWaitMin = TimeSpan.FromMilliseconds(200), MaxReconnectRetry = -1 });
        await nc.ConnectAsync();
        await nc.PingAsync();
        var m = GatewayPid().Match(s.Server.Output);
        Assert.True(m.Success, s.Server.OutputTail());
        using (var child = Process.GetProcessById(int.Parse(m.Groups[1].Value, System.Globalization.CultureInfo.InvariantCulture)))
            child.Kill();
        var sw = Stopwatch.StartNew();
        while (GatewayPid().Count(s.Server.Output) < 2 && sw.Elapsed < TimeSpan.FromSeconds(20)) await Task.Delay(100);
        Assert.Equal(2, GatewayPid().Count(s.Server.Output));
        await GatewayTestHelpers.WaitListeningAsync(s.WsPort);
        using var cts = new CancellationTokenSource(TimeSpan.FromSeconds(20));
        while (nc.ConnectionState != NatsConnectionState.Open) await Task.Delay(100, cts.Token);
        await using var sub = await nc.SubscribeCoreAsync<string>("after");
        await nc.PublishAsync("after", "restart");
        Assert.Equal("restart", (await sub.Msgs.ReadAsync(cts.Token)).Data);
    }

    [GeneratedRegex(@"Started the websocket gateway \(pid (\d+)\)")]
    private static partial Regex GatewayPid();
}
