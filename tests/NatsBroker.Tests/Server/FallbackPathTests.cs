using System.Net.Sockets;
using System.Text;
using NATS.Client.Core;
using NatsBroker.Tests.Differential;
using NatsBroker.Tests.Gateways;
using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Server;

/// <summary>
/// The operator switches that turn the fast paths off (issue 45, "CI runs the fallback paths"): without them nothing
/// would run the code they fall back to. <c>NATSBROKER_CLIENT_POLLING=0</c> gives TCP clients to the runtime's socket
/// engine (TcpConnectionListener.ClientPollingVariable), <c>NATSBROKER_LINK_POLLING=0</c> does that for every socket, Unix socket
/// clients and the gateways' links included (LinkPoller.Variable), and <c>NATSBROKER_FLUSH_DEFER=0</c> keeps the
/// pollers but writes at the end of each read instead of the poller's pass (Connection.DeferFlushesVariable).
/// Each broker runs with one switch set: a slice of the differential transcripts is compared with nats-server 2.14.5,
/// and the paths the transcripts do not stress (a large payload split across reads, a queue group, request/reply with
/// headers, a slow consumer, a supervised WebSocket gateway) are checked directly. Each test first checks that the
/// switch reached the process and took effect (the poller threads it names are there or not).
/// </summary>
[Collection("Gateways")] // the link-polling test starts a supervised gateway; gateway tests run one at a time
public sealed class FallbackPathTests(ITestOutputHelper output, ServerPool pool) : IClassFixture<ServerPool>
{
    private const string ClientPolling = "NATSBROKER_CLIENT_POLLING";
    private const string LinkPolling = "NATSBROKER_LINK_POLLING";
    private const string FlushDefer = "NATSBROKER_FLUSH_DEFER";
    private const string Quiet = """{"verbose":false,"pedantic":false}""";

    private static readonly string[] AllSwitches = [ClientPolling, LinkPolling, FlushDefer];

    public static TheoryData<string> Switches()
    {
        var d = new TheoryData<string>();
        foreach (var v in AllSwitches) d.Add(v);
        return d;
    }

    /// <summary>
    /// Transcripts with no config of their own that cover pub/sub, request/reply across connections, a queue group,
    /// headers, no-responders, pipelined ops and an op split across reads.
    /// </summary>
    private static readonly string[] TranscriptSlice =
    [
        "03_pub_sub_basic", "04_pub_with_reply_two_connections", "06_queue_group_single_member", "09_hpub_hmsg",
        "11_no_responders", "23_pipelined_ops", "36_split_writes",
    ];

    private static Dictionary<string, string> Off(string variable) => new() { [variable] = "0" };

    private void RequireOursOnLinux()
    {
        if (TestEnvironment.OursRedirectedToGo)
        {
            output.WriteLine("NATSBROKER_TEST_SERVER=go: nats-server has none of these switches");
            throw new SkipException("the fallback switches are ours; NATSBROKER_TEST_SERVER=go runs nats-server");
        }
        // The pollers are Linux-only (LinkPoller.Enabled): elsewhere the fallback is the only path and every suite runs it.
        if (!OperatingSystem.IsLinux()) throw new SkipException("the pollers, and so their switches, are Linux-only");
    }

    private Task<ServerProcess> Switched(string variable, string? config = null) =>
        pool.GetAsync(ServerKind.Ours, config, environment: Off(variable));

    [SkippableFact]
    public async Task Core_transcripts_match_nats_server_2_14_under_each_switch()
    {
        RequireOursOnLinux();
        var oracle = Prerequisites.RequireOracle214(output);
        var variables = AllSwitches;
        var go = await pool.GetAsync(ServerKind.Go, goBinary: oracle);
        var ours = await Task.WhenAll(variables.Select(v => Switched(v)));
        foreach (var s in ours) await AssertSwitchTookEffect(s);
        var failures = new List<string>();
        foreach (var name in TranscriptSlice)
        {
            var t = Transcript.Load(name);
            // Separate servers, so the four plays run at once without seeing each other's messages.
            var results = await Task.WhenAll(ours.Select(s => TranscriptPlayer.PlayAsync(t, s)).Prepend(TranscriptPlayer.PlayAsync(t, go)));
            for (int i = 0; i < ours.Length; i++)
            {
                if (results[i + 1] != results[0])
                    failures.Add($"{name} with {variables[i]}=0:\n" + TranscriptData.Diff("nats-server 2.14.5", results[0], "ours", results[i + 1]));
            }
        }
        Assert.True(failures.Count == 0, string.Join("\n", failures));
    }

    [SkippableTheory]
    [MemberData(nameof(Switches))]
    public async Task Large_payload_queue_group_and_request_reply_with_headers(string variable)
    {
        RequireOursOnLinux();
        var s = await Switched(variable);
        await AssertSwitchTookEffect(s);

        // A 600 KiB message sent in 7,000-byte pieces, so the server reads it over many reads (and its deliveries
        // go out in several writes); two subscribers on the same connection must both get every byte.
        await using var sub = await RawClient.ConnectAndHandshakeAsync(s, Quiet);
        await sub.SendAsync("SUB big.> 1\r\nSUB big.x 2\r\n");
        Assert.Empty(await sub.PingAsync());
        await using var pub = await RawClient.ConnectAndHandshakeAsync(s, Quiet);
        var payload = new byte[600 * 1024];
        for (int i = 0; i < payload.Length; i++) payload[i] = (byte)('a' + (i * 7 % 26));
        byte[] frame = [.. Encoding.ASCII.GetBytes($"PUB big.x {payload.Length}\r\n"), .. payload, .. "\r\nPING\r\n"u8];
        await pub.SendChunkedAsync(frame, 7000, TimeSpan.FromMilliseconds(1));
        await pub.ExpectLineAsync("PONG", TimeSpan.FromSeconds(15));
        var sids = new List<string>();
        for (int i = 0; i < 2; i++)
        {
            var m = await sub.ExpectMessageAsync(TimeSpan.FromSeconds(15));
            Assert.Equal("big.x", m.Subject);
            Assert.True(payload.AsSpan().SequenceEqual(m.Payload), $"payload of sid {m.Sid} differs ({m.Payload.Length} bytes)");
            sids.Add(m.Sid);
        }
        Assert.Equal(new[] { "1", "2" }, sids.Order());

        // A queue group of two: each of 40 messages goes to exactly one member.
        await using var q1 = await RawClient.ConnectAndHandshakeAsync(s, Quiet);
        await using var q2 = await RawClient.ConnectAndHandshakeAsync(s, Quiet);
        await q1.SendAsync("SUB work.q grp 1\r\n");
        await q2.SendAsync("SUB work.q grp 1\r\n");
        Assert.Empty(await q1.PingAsync());
        Assert.Empty(await q2.PingAsync());
        var batch = new StringBuilder();
        for (int i = 0; i < 40; i++) batch.Append(System.Globalization.CultureInfo.InvariantCulture, $"PUB work.q 2\r\n{i:00}\r\n");
        await pub.SendAsync(batch.ToString());
        Assert.Empty(await pub.PingAsync());
        var got = new List<string>();
        foreach (var q in new[] { q1, q2 })
        {
            foreach (var line in await q.PingAsync())
                if (!line.StartsWith("MSG ", StringComparison.Ordinal)) got.Add(line);
        }
        Assert.Equal(Enumerable.Range(0, 40).Select(i => i.ToString("00", System.Globalization.CultureInfo.InvariantCulture)), got.Order());

        // Request/reply with headers between two connections.
        await using var service = await RawClient.ConnectAndHandshakeAsync(s, """{"verbose":false,"pedantic":false,"headers":true}""");
        await using var requester = await RawClient.ConnectAndHandshakeAsync(s, """{"verbose":false,"pedantic":false,"headers":true}""");
        await service.SendAsync("SUB svc.echo 7\r\n");
        Assert.Empty(await service.PingAsync());
        await requester.SendAsync("SUB _INBOX.r1 9\r\n");
        Assert.Empty(await requester.PingAsync());
        const string Hdr = "NATS/1.0\r\nX-Id: 42\r\n\r\n";
        await requester.SendAsync($"HPUB svc.echo _INBOX.r1 {Hdr.Length} {Hdr.Length + 4}\r\n{Hdr}ping\r\n");
        var req = await service.ExpectMessageAsync();
        Assert.Equal("HMSG svc.echo _INBOX.r1", $"{req.Op} {req.Subject} {req.ReplyTo}");
        Assert.Equal(Hdr, req.HeaderText);
        Assert.Equal("ping", req.PayloadText);
        await service.SendAsync($"HPUB {req.ReplyTo} {Hdr.Length} {Hdr.Length + 4}\r\n{Hdr}pong\r\n");
        var reply = await requester.ExpectMessageAsync();
        Assert.Equal("HMSG _INBOX.r1 9", $"{reply.Op} {reply.Subject} {reply.Sid}");
        Assert.Equal(Hdr, reply.HeaderText);
        Assert.Equal("pong", reply.PayloadText);
    }

    [SkippableTheory]
    [MemberData(nameof(Switches))]
    public async Task Slow_consumer_is_cut_while_the_publisher_keeps_flowing(string variable)
    {
        RequireOursOnLinux();
        // As Protocol/LimitsTests: a subscriber that stops reading overflows max_pending (or the write deadline).
        var s = await Switched(variable, "max_pending: 262144\nwrite_deadline: \"500ms\"\n");
        await AssertSwitchTookEffect(s);
        using var stalled = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp) { ReceiveBufferSize = 4096 };
        await stalled.ConnectAsync(s.Host, s.Port);
        await ReadUntil(stalled, "\r\n");
        await stalled.SendAsync(Encoding.ASCII.GetBytes($"CONNECT {Quiet}\r\nSUB sc.x 1\r\nPING\r\n"));
        await ReadUntil(stalled, "PONG\r\n");

        await using var pub = await RawClient.ConnectAndHandshakeAsync(s, Quiet);
        byte[] frame = [.. "PUB sc.x 65536\r\n"u8, .. new byte[65536], 13, 10];
        for (int i = 0; i < 200; i++) await pub.SendBytesAsync(frame); // 13 MB, well past the socket buffers
        Assert.Empty(await pub.PingAsync(TimeSpan.FromSeconds(20)));
        Assert.True(await DrainsToClose(stalled, TimeSpan.FromSeconds(15)), "the stalled subscriber was not disconnected");
        Assert.Empty(await pub.PingAsync());
    }

    [SkippableFact]
    public async Task Link_polling_off_serves_websocket_users_through_the_supervised_gateway_and_unix_socket_clients()
    {
        RequireOursOnLinux();
        int wsPort = TestPorts.Next();
        await using var s = await ServerProcess.StartAsync(ServerKind.Ours, new ServerStartOptions
        {
            Config = $"websocket {{ port: {wsPort}, no_tls: true }}\n",
            Port = TestPorts.Next(),
            UnixSocket = true,
            Environment = Off(LinkPolling),
        }, output);
        await GatewayTestHelpers.WaitListeningAsync(wsPort);

        var ws = new NatsOpts { Url = $"ws://127.0.0.1:{wsPort}", ConnectTimeout = TimeSpan.FromSeconds(10) };
        await using var user = new NatsConnection(ws);
        await user.ConnectAsync();
        await using var direct = new NatsConnection(new NatsOpts { Url = s.Url, ConnectTimeout = TimeSpan.FromSeconds(10) });
        await direct.ConnectAsync();
        await using var uds = await RawClient.ConnectUnixAsync(s.UnixSocketPath!);
        await uds.HandshakeAsync(Quiet);
        await uds.SendAsync("SUB big 1\r\n");
        Assert.Empty(await uds.PingAsync());

        // The gateway's link to the core and the core's side of it both run on the runtime's socket engine now.
        AssertThreads(s.Pid, LinkPolling);
        var gateways = ChildPids(s.Pid);
        Assert.NotEmpty(gateways);
        foreach (var pid in gateways)
        {
            Assert.Contains($"{LinkPolling}=0", Environ(pid));
            Assert.DoesNotContain(ThreadNames(pid), n => n.StartsWith("link-poller", StringComparison.Ordinal));
        }

        // Request/reply from a direct client to a service behind the gateway.
        await using var svc = await user.SubscribeCoreAsync<string>("svc.echo");
        await user.PingAsync();
        var serve = Task.Run(async () =>
        {
            await foreach (var m in svc.Msgs.ReadAllAsync())
            {
                await m.ReplyAsync("echo:" + m.Data);
                return;
            }
        });
        var answer = await direct.RequestAsync<string, string>("svc.echo", "hi", replyOpts: new NatsSubOpts { Timeout = TimeSpan.FromSeconds(10) });
        Assert.Equal("echo:hi", answer.Data);
        await serve;

        // A 512 KiB message from the WebSocket user reaches the Unix socket client whole (many link reads and writes).
        var payload = new byte[512 * 1024];
        for (int i = 0; i < payload.Length; i++) payload[i] = (byte)(i * 31);
        await user.PublishAsync("big", payload);
        await user.PingAsync();
        var msg = await uds.ExpectMessageAsync(TimeSpan.FromSeconds(15));
        Assert.True(payload.AsSpan().SequenceEqual(msg.Payload), $"payload differs ({msg.Payload.Length} bytes)");
    }

    /// <summary>The switch is in the process's environment and took effect: the pollers it turns off are not running.</summary>
    private async Task AssertSwitchTookEffect(ServerProcess s)
    {
        var variable = s.Options.Environment.Keys.Single();
        Assert.Contains($"{variable}=0", Environ(s.Pid));
        // Client pollers start with the first TCP client.
        await (await RawClient.ConnectAndHandshakeAsync(s, Quiet)).DisposeAsync();
        AssertThreads(s.Pid, variable);
    }

    private void AssertThreads(int pid, string variable)
    {
        var threads = ThreadNames(pid);
        output.WriteLine($"{variable}=0, pid {pid} threads: {string.Join(", ", threads.Distinct().Order())}");
        bool clientPollers = threads.Any(n => n.StartsWith("client-poller", StringComparison.Ordinal));
        bool linkPoller = threads.Any(n => n.StartsWith("link-poller", StringComparison.Ordinal));
        switch (variable)
        {
            case ClientPolling:
                Assert.False(clientPollers, "client pollers run with NATSBROKER_CLIENT_POLLING=0");
                break;
            case LinkPolling:
                Assert.False(clientPollers || linkPoller, "a poller runs with NATSBROKER_LINK_POLLING=0");
                break;
            case FlushDefer:
                // Only the deferral is off: the TCP clients are still on the pollers, so this runs their other branch.
                Assert.True(clientPollers, "no client poller runs: NATSBROKER_FLUSH_DEFER=0 would test nothing");
                break;
        }
    }

    private static string[] ThreadNames(int pid) =>
        [.. Directory.GetDirectories($"/proc/{pid}/task").Select(t => TryRead(Path.Combine(t, "comm")).Trim())];

    private static string[] Environ(int pid) => TryRead($"/proc/{pid}/environ").Split('\0');

    /// <summary>Children of <paramref name="pid"/> (the supervised gateways), from each thread's children list.</summary>
    private static int[] ChildPids(int pid) =>
        [.. Directory.GetDirectories($"/proc/{pid}/task")
            .SelectMany(t => TryRead(Path.Combine(t, "children")).Split(' ', StringSplitOptions.RemoveEmptyEntries))
            .Select(p => int.Parse(p, System.Globalization.CultureInfo.InvariantCulture))];

    private static string TryRead(string path)
    {
        try
        {
            return File.ReadAllText(path);
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException)
        {
            return ""; // a thread or process that ended meanwhile
        }
    }

    private static async Task ReadUntil(Socket socket, string marker)
    {
        var buf = new byte[8192];
        var got = "";
        using var cts = new CancellationTokenSource(TimeSpan.FromSeconds(10));
        while (!got.Contains(marker, StringComparison.Ordinal))
        {
            int n = await socket.ReceiveAsync(buf, SocketFlags.None, cts.Token);
            if (n == 0) throw new IOException("closed before " + marker.Trim());
            got += Encoding.ASCII.GetString(buf, 0, n);
        }
    }

    /// <summary>Reads everything the server queued; true once it closes its side.</summary>
    private static async Task<bool> DrainsToClose(Socket socket, TimeSpan timeout)
    {
        var buf = new byte[1 << 20];
        using var cts = new CancellationTokenSource(timeout);
        try
        {
            while (await socket.ReceiveAsync(buf, SocketFlags.None, cts.Token) > 0) { }
            return true;
        }
        catch (SocketException)
        {
            return true; // reset: closed too
        }
        catch (OperationCanceledException)
        {
            return false;
        }
    }
}
