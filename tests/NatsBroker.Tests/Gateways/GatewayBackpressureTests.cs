using System.Buffers.Binary;
using System.Diagnostics;
using System.Globalization;
using System.Net;
using System.Net.Security;
using System.Net.Sockets;
using System.Security.Cryptography;
using System.Security.Cryptography.X509Certificates;
using System.Text;
using System.Text.Json;
using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Gateways;

/// <summary>
/// Issue 11, "backpressure both ways", end to end through the gateways: an end user behind the WebSocket gateway or
/// the TLS terminator who stops reading is cut by the core as a slow consumer exactly as a direct client is (its
/// server-side connection closed, /varz slow_consumers counted), while the publisher and a healthy user of the same
/// gateway keep flowing; a user flooding a core that does not read is held back at its own socket (the gateway's
/// memory stays bounded and nothing is lost once the core reads again); limits reach the user as nats-server sends
/// them. Go nats-server 2.9.10 with the same config is the oracle where it has the feature.
/// </summary>
[Collection("Gateways")]
public sealed class GatewayBackpressureTests(ITestOutputHelper output) : IDisposable
{
    /// <summary>Messages of <see cref="PayloadSize"/> bytes in a flood: 30 MB, well past every buffer between the core and a user (4 MB link, TCP).</summary>
    private const int FloodCount = 30_000, PayloadSize = 1024, Batch = 100;

    // A small max_pending so the core cuts a stuck user soon; write_deadline 2 s so nats-server 2.9.10, which holds the
    // publisher back rather than let pending grow, cuts it too (its default is 10 s).
    private const string Limits = """
        max_pending: 1048576
        write_deadline: "2s"
        """;

    private readonly TestPki _pki = new();

    public void Dispose() => _pki.Dispose();

    /// <summary>A server with <paramref name="config"/> and a plain <c>websocket {}</c> block, once its gateway listens.</summary>
    private async Task<(ServerProcess Server, int WsPort)> StartWithWebSocket(ServerKind kind, string config = "", bool monitoring = false)
    {
        int wsPort = TestPorts.Next();
        var server = await ServerProcess.StartAsync(kind, new ServerStartOptions
        {
            Config = config + $"\nwebsocket {{ port: {wsPort}, no_tls: true }}\n",
            Port = TestPorts.Next(),
            Monitoring = monitoring,
        }, output);
        try
        {
            await GatewayTestHelpers.WaitListeningAsync(wsPort);
        }
        catch
        {
            await server.DisposeAsync();
            throw;
        }
        return (server, wsPort);
    }

    [SkippableTheory]
    [MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task A_websocket_user_who_stops_reading_is_cut_as_a_slow_consumer_as_a_direct_client_is(ServerKind kind)
    {
        Prerequisites.RequireServer(kind, output);
        var (server, wsPort) = await StartWithWebSocket(kind, Limits, monitoring: true);
        await using var owned = server;

        using var slowWs = await Peer.WebSocket(wsPort);
        using var slowTcp = await Peer.Plain(server.Port);
        using var healthyWs = await Peer.WebSocket(wsPort);
        using var publisher = await Peer.Plain(server.Port);
        await SlowConsumerScenario(server, wsPort, server.Port, slowWs, slowTcp, healthyWs, publisher);
    }

    [SkippableTheory]
    [MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task A_TLS_user_who_stops_reading_is_cut_as_a_slow_consumer_through_the_terminator(ServerKind kind)
    {
        Prerequisites.RequireServer(kind, output);
        await using var server = await ServerProcess.StartAsync(kind, new ServerStartOptions
        {
            Config = Limits + $$"""

                tls { cert_file: "{{_pki.ServerCert}}", key_file: "{{_pki.ServerKey}}" }
                """,
            Port = TestPorts.Next(),
            Monitoring = true,
        }, output);
        await GatewayTestHelpers.WaitListeningAsync(server.Port);

        // With tls {} every client is a TLS client (ours: all through the terminator); the "direct" comparison is a
        // second TLS user, as nats-server serves them all in process.
        using var slowTls = await Peer.Tls(server.Port, _pki.CaFile);
        using var slowOther = await Peer.Tls(server.Port, _pki.CaFile);
        using var healthy = await Peer.Tls(server.Port, _pki.CaFile);
        using var publisher = await Peer.Tls(server.Port, _pki.CaFile);
        await SlowConsumerScenario(server, server.Port, server.Port, slowTls, slowOther, healthy, publisher);
    }

    /// <summary>
    /// <paramref name="slow"/> (through the gateway, connected to <paramref name="userPort"/>) and
    /// <paramref name="slowReference"/> (connected to <paramref name="referencePort"/>) subscribe and stop reading;
    /// <paramref name="publisher"/> floods 30 MB; both slow users must be cut as slow consumers with the server's side
    /// of their connections closed while they still do not read, the publisher must finish (PING answered) and stay
    /// connected, and <paramref name="healthy"/>, on the same gateway, must get every message.
    /// </summary>
    private async Task SlowConsumerScenario(ServerProcess server, int userPort, int referencePort, Peer slow, Peer slowReference, Peer healthy, Peer publisher)
    {
        using var http = new HttpClient();
        var monitor = (await GatewayTestHelpers.ConnzUri(server)).GetLeftPart(UriPartial.Authority);
        long slowBefore = await SlowConsumers(http, monitor);

        await slow.Handshake("slow", "SUB flood 1\r\n");
        await slowReference.Handshake("slow-reference", "SUB flood 1\r\n");
        await healthy.Handshake("healthy", "SUB flood 1\r\n");
        await publisher.Handshake("publisher", "");
        // The check below must see these connections while they are open (else "closed" would hold trivially).
        Assert.True(ServerSideEstablished(userPort, slow.LocalPort), "the stuck user's connection is not in /proc/net/tcp");
        Assert.True(ServerSideEstablished(referencePort, slowReference.LocalPort), "the reference user's connection is not in /proc/net/tcp");
        using var readerStop = new CancellationTokenSource(TimeSpan.FromSeconds(120));
        var healthyCount = healthy.CountMessagesAsync(FloodCount, readerStop.Token);

        // The flood: 100 PUBs per write, then a PING whose PONG says the server took it all.
        var pub = Encoding.ASCII.GetBytes($"PUB flood {PayloadSize}\r\n" + new string('x', PayloadSize) + "\r\n");
        var batch = new byte[pub.Length * Batch];
        for (int i = 0; i < Batch; i++) pub.CopyTo(batch, i * pub.Length);
        var sw = Stopwatch.StartNew();
        using (var floodTimeout = new CancellationTokenSource(TimeSpan.FromSeconds(90)))
        {
            for (int i = 0; i < FloodCount / Batch; i++) await publisher.Send(batch, floodTimeout.Token);
            await publisher.Send("PING\r\n"u8.ToArray(), floodTimeout.Token);
            await publisher.ReadUntil("PONG\r\n", floodTimeout.Token);
        }
        output.WriteLine($"{server.Kind}: the publisher's 30 MB flood was taken in {sw.ElapsedMilliseconds} ms");

        // Both stuck users are closed as slow consumers, for the same kind of reason.
        var reasons = await Poll(async () =>
        {
            using var closed = JsonDocument.Parse(await http.GetStringAsync(new Uri(monitor + "/connz?state=closed")));
            var byName = closed.RootElement.GetProperty("connections").EnumerateArray()
                .Where(c => c.TryGetProperty("name", out _))
                .ToDictionary(c => c.GetProperty("name").GetString()!, c => c.GetProperty("reason").GetString() ?? "");
            return byName.TryGetValue("slow", out var a) && byName.TryGetValue("slow-reference", out var b) ? new ClosedReasons(a, b) : null;
        }, TimeSpan.FromSeconds(30), "both stuck users closed in /connz?state=closed");
        output.WriteLine($"{server.Kind}: closed reasons: through the gateway \"{reasons.Stuck}\", reference \"{reasons.Reference}\"");
        Assert.StartsWith("Slow Consumer (", reasons.Stuck, StringComparison.Ordinal);
        Assert.StartsWith("Slow Consumer (", reasons.Reference, StringComparison.Ordinal);
        Assert.True(await SlowConsumers(http, monitor) >= slowBefore + 2, "/varz slow_consumers did not count both");

        // The server's side of each stuck user's TCP connection is closed while the user still reads nothing
        // (nats-server closes the socket; a gateway must not keep the user connected after the core let it go).
        var closedWithin = Stopwatch.StartNew();
        await Poll(() => Task.FromResult(ServerSideEstablished(userPort, slow.LocalPort) ? null : (object)true),
            TimeSpan.FromSeconds(15), "the server's side of the stuck user's connection to leave ESTABLISHED");
        await Poll(() => Task.FromResult(ServerSideEstablished(referencePort, slowReference.LocalPort) ? null : (object)true),
            TimeSpan.FromSeconds(15), "the server's side of the reference user's connection to leave ESTABLISHED");
        output.WriteLine($"{server.Kind}: both stuck users' connections closed by the server {closedWithin.ElapsedMilliseconds} ms after the verdict");

        // The publisher was neither cut nor left stalled, and the healthy user got every message.
        Assert.Equal(FloodCount, await healthyCount);
        using (var ping = new CancellationTokenSource(TimeSpan.FromSeconds(10)))
        {
            await publisher.Send("PING\r\n"u8.ToArray(), ping.Token);
            await publisher.ReadUntil("PONG\r\n", ping.Token);
        }

        // What the stuck user sees when it reads at last: what was in flight, then the end of the connection; never
        // an -ERR (neither server sends one for a slow consumer).
        var (bytes, end) = await slow.DrainToEnd(TimeSpan.FromSeconds(30));
        output.WriteLine($"{server.Kind}: the stuck user read {bytes} bytes, then {end}");
        Assert.DoesNotContain("-ERR", slow.Seen, StringComparison.Ordinal);
    }

    /// <summary>
    /// A WebSocket user floods while the core reads nothing (SIGSTOP): the user's own writes stop (the backpressure
    /// reaches its socket), the gateway's resident memory stays bounded, and once the core runs again every message
    /// reaches a subscriber.
    /// </summary>
    [Fact]
    public async Task A_websocket_user_flooding_a_core_that_does_not_read_is_held_at_its_socket_and_the_gateway_stays_bounded()
    {
        var (server, wsPort) = await StartWithWebSocket(ServerKind.Ours);
        await using var owned = server;
        int gateway = await Poll(() => Task.FromResult(ChildProcess(server.Pid, "WebSocketGateway")), TimeSpan.FromSeconds(30), "the supervised websocket gateway");

        using var subscriber = await Peer.Plain(server.Port);
        await subscriber.Handshake("subscriber", "SUB in.> 1\r\n");
        using var flooder = await Peer.WebSocket(wsPort);
        await flooder.Handshake("flooder", "");
        using var readerStop = new CancellationTokenSource(TimeSpan.FromSeconds(180));
        var received = subscriber.CountMessagesAsync(FloodCount, readerStop.Token);

        long rssBefore = VmRssKb(gateway);
        long written = 0;
        var pub = Encoding.ASCII.GetBytes($"PUB in.flood {PayloadSize}\r\n" + new string('y', PayloadSize) + "\r\n");
        var batch = new byte[pub.Length * Batch];
        for (int i = 0; i < Batch; i++) pub.CopyTo(batch, i * pub.Length);
        server.Signal("STOP");
        long peakKb = rssBefore;
        try
        {
            using var floodTimeout = new CancellationTokenSource(TimeSpan.FromSeconds(150));
            var flood = Task.Run(async () =>
            {
                for (int i = 0; i < FloodCount / Batch; i++)
                {
                    await flooder.Send(batch, floodTimeout.Token);
                    Interlocked.Add(ref written, batch.Length);
                }
            });

            // The user's writes stop: a whole second without progress, while the core is stopped.
            long last = -1;
            await Poll(async () =>
            {
                await Task.Delay(1000);
                peakKb = Math.Max(peakKb, VmRssKb(gateway));
                long now = Interlocked.Read(ref written);
                bool stalled = now == last && now > 0;
                last = now;
                return stalled ? (object)true : null;
            }, TimeSpan.FromSeconds(30), "the flooding user's writes to stall while the core reads nothing");
            Assert.False(flood.IsCompleted, "the whole 30 MB flood went somewhere while the core read nothing");
            output.WriteLine($"held back after {Interlocked.Read(ref written) / 1024} KiB written by the user; gateway RSS {rssBefore / 1024} -> {peakKb / 1024} MiB");
            // One link (a few MB of socket buffer, kernel memory) and one 32 KB buffer per direction: the gateway
            // itself holds no queue of the user's bytes.
            Assert.True(peakKb - rssBefore < 32 * 1024, $"the gateway grew by {(peakKb - rssBefore) / 1024} MiB while the core was stopped");

            server.Signal("CONT");
            await flood;
        }
        finally
        {
            if (!server.HasExited) server.Signal("CONT");
        }
        Assert.Equal(FloodCount, await received);
        output.WriteLine($"gateway RSS after the flood: {VmRssKb(gateway) / 1024} MiB");
    }

    /// <summary>
    /// One user stuck both ways does not hold up another user of the same gateway: a WebSocket user floods a subject
    /// it subscribes to itself and reads nothing, so the core stops reading it (its own outbound is full) and the
    /// backpressure reaches its socket through the gateway; meanwhile a second WebSocket user's round trips
    /// (PUB to its own subscription, PING) go through the same gateway promptly.
    /// </summary>
    [SkippableTheory]
    [MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task A_user_stuck_both_ways_does_not_hold_up_another_user_of_the_same_gateway(ServerKind kind)
    {
        Prerequisites.RequireServer(kind, output);
        // A long write_deadline: the stuck user stays connected (and stuck) for the whole check.
        var (server, wsPort) = await StartWithWebSocket(kind, "write_deadline: \"60s\"");
        await using var owned = server;
        using var stuck = await Peer.WebSocket(wsPort);
        await stuck.Handshake("stuck", "SUB self.> 1\r\n");
        using var other = await Peer.WebSocket(wsPort);
        await other.Handshake("other", "SUB mine 1\r\n");

        long written = 0;
        var pub = Encoding.ASCII.GetBytes($"PUB self.x {PayloadSize}\r\n" + new string('s', PayloadSize) + "\r\n");
        var batch = new byte[pub.Length * Batch];
        for (int i = 0; i < Batch; i++) pub.CopyTo(batch, i * pub.Length);
        using var stop = new CancellationTokenSource();
        var flood = Task.Run(async () =>
        {
            try
            {
                while (true)
                {
                    await stuck.Send(batch, stop.Token);
                    Interlocked.Add(ref written, batch.Length);
                }
            }
            catch (Exception ex) when (ex is OperationCanceledException or IOException or ObjectDisposedException) { }
        });
        try
        {
            long last = -1;
            await Poll(async () =>
            {
                await Task.Delay(1000);
                long now = Interlocked.Read(ref written);
                bool stalled = now == last && now > 0;
                last = now;
                return stalled ? (object)true : null;
            }, TimeSpan.FromSeconds(30), "the stuck user's writes to stall");
            output.WriteLine($"{kind}: the stuck user is held after {Interlocked.Read(ref written) / 1024} KiB");

            var sw = Stopwatch.StartNew();
            long worst = 0;
            for (int i = 0; i < 20; i++)
            {
                var one = Stopwatch.StartNew();
                using var cts = new CancellationTokenSource(TimeSpan.FromSeconds(5));
                await other.Send(Encoding.ASCII.GetBytes($"PUB mine 5\r\nhello\r\nPING\r\n"), cts.Token);
                await other.ReadUntil("PONG\r\n", cts.Token);
                // The message to its own subscription came before the PONG.
                Assert.Equal(1, other.MessagesSeen);
                worst = Math.Max(worst, one.ElapsedMilliseconds);
                other.ResetSeen();
            }
            output.WriteLine($"{kind}: 20 round trips of the other user in {sw.ElapsedMilliseconds} ms, slowest {worst} ms");
        }
        finally
        {
            await stop.CancelAsync();
            stuck.Dispose();
            await flood;
        }
    }

    /// <summary>A message over max_payload through the WebSocket gateway: the -ERR and the close as nats-server sends them.</summary>
    [SkippableTheory]
    [MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Max_payload_through_the_websocket_gateway_is_refused_as_nats_server_refuses_it(ServerKind kind)
    {
        Prerequisites.RequireServer(kind, output);
        var (server, wsPort) = await StartWithWebSocket(kind, "max_payload: 1024");
        await using var owned = server;
        using var user = await Peer.WebSocket(wsPort);
        await user.Handshake("big", "");
        await user.Send(Encoding.ASCII.GetBytes("PUB big 2000\r\n" + new string('z', 2000) + "\r\n"), CancellationToken.None);
        var (_, end) = await user.DrainToEnd(TimeSpan.FromSeconds(15));
        output.WriteLine($"{kind}: {user.Seen.Trim()} / {end}");
        Assert.Equal("-ERR 'Maximum Payload Violation'\r\n", user.Seen);
        Assert.Equal("close 1009 Maximum Message Payload Exceeded", end);
    }

    /// <summary>
    /// max_connections applies to the users behind the WebSocket gateway (each has its own link, counted by the core):
    /// the user over the limit gets INFO, the -ERR and the close frame nats-server 2.9.10 sends (1008).
    /// </summary>
    [SkippableTheory]
    [MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Max_connections_through_the_websocket_gateway_is_refused_as_nats_server_refuses_it(ServerKind kind)
    {
        Prerequisites.RequireServer(kind, output);
        var (server, wsPort) = await StartWithWebSocket(kind, "max_connections: 1");
        await using var owned = server;
        using var first = await Peer.WebSocket(wsPort);
        await first.Handshake("first", "");
        using var second = await Peer.WebSocket(wsPort);
        var (_, end) = await second.DrainToEnd(TimeSpan.FromSeconds(15));
        output.WriteLine($"{kind}: {second.Seen.Trim()} / {end}");
        Assert.StartsWith("INFO {", second.Seen, StringComparison.Ordinal);
        Assert.EndsWith("\r\n-ERR 'maximum connections exceeded'\r\n", second.Seen, StringComparison.Ordinal);
        Assert.Equal("close 1008 Maximum Connections Exceeded", end);
        // The first user is unaffected.
        using var cts = new CancellationTokenSource(TimeSpan.FromSeconds(10));
        await first.Send("PING\r\n"u8.ToArray(), cts.Token);
        await first.ReadUntil("PONG\r\n", cts.Token);
    }

    /// <summary>A message over max_payload through the TLS terminator: the -ERR, then the connection closed.</summary>
    [SkippableTheory]
    [MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Max_payload_through_the_TLS_terminator_is_refused_as_nats_server_refuses_it(ServerKind kind)
    {
        Prerequisites.RequireServer(kind, output);
        await using var server = await ServerProcess.StartAsync(kind, new ServerStartOptions
        {
            Config = $$"""
                max_payload: 1024
                tls { cert_file: "{{_pki.ServerCert}}", key_file: "{{_pki.ServerKey}}" }
                """,
            Port = TestPorts.Next(),
        }, output);
        await GatewayTestHelpers.WaitListeningAsync(server.Port);
        using var user = await Peer.Tls(server.Port, _pki.CaFile);
        await user.Handshake("big", "");
        await user.Send(Encoding.ASCII.GetBytes("PUB big 2000\r\n" + new string('z', 2000) + "\r\n"), CancellationToken.None);
        var (_, end) = await user.DrainToEnd(TimeSpan.FromSeconds(15));
        output.WriteLine($"{kind}: {user.Seen.Trim()} / {end}");
        Assert.Equal("-ERR 'Maximum Payload Violation'\r\n", user.Seen);
    }

    private sealed record ClosedReasons(string Stuck, string Reference);

    private static async Task<long> SlowConsumers(HttpClient http, string monitor)
    {
        using var varz = JsonDocument.Parse(await http.GetStringAsync(new Uri(monitor + "/varz")));
        return varz.RootElement.GetProperty("slow_consumers").GetInt64();
    }

    /// <summary>Polls <paramref name="probe"/> until it returns a value, failing with <paramref name="what"/> after <paramref name="timeout"/>.</summary>
    private static async Task<T> Poll<T>(Func<Task<T?>> probe, TimeSpan timeout, string what) where T : class
    {
        var sw = Stopwatch.StartNew();
        while (true)
        {
            var value = await probe();
            if (value is not null) return value;
            if (sw.Elapsed > timeout) Assert.Fail($"timed out after {timeout.TotalSeconds:0} s waiting for {what}");
            await Task.Delay(100);
        }
    }

    private static async Task<int> Poll(Func<Task<int?>> probe, TimeSpan timeout, string what)
    {
        var sw = Stopwatch.StartNew();
        while (true)
        {
            if (await probe() is int value) return value;
            if (sw.Elapsed > timeout) Assert.Fail($"timed out after {timeout.TotalSeconds:0} s waiting for {what}");
            await Task.Delay(100);
        }
    }

    /// <summary>
    /// Whether the server's end of the loopback TCP connection (local port <paramref name="serverPort"/>, peer port
    /// <paramref name="clientPort"/>) is still ESTABLISHED (/proc/net/tcp and tcp6, state 01). Once the server has
    /// closed its socket it is FIN_WAIT1 or later (or gone), whatever the client has read.
    /// </summary>
    private static bool ServerSideEstablished(int serverPort, int clientPort)
    {
        foreach (var file in new[] { "/proc/net/tcp", "/proc/net/tcp6" })
        {
            foreach (var line in File.ReadLines(file).Skip(1))
            {
                var f = line.Split(' ', StringSplitOptions.RemoveEmptyEntries);
                if (f.Length < 4) continue;
                if (Port(f[1]) == serverPort && Port(f[2]) == clientPort) return f[3] == "01";
            }
        }
        return false;

        static int Port(string address) => int.Parse(address.AsSpan(address.IndexOf(':', StringComparison.Ordinal) + 1), NumberStyles.HexNumber, CultureInfo.InvariantCulture);
    }

    /// <summary>The pid of a child of <paramref name="parent"/> whose command line contains <paramref name="name"/>, or null.</summary>
    private static int? ChildProcess(int parent, string name)
    {
        foreach (var dir in Directory.EnumerateDirectories("/proc"))
        {
            if (!int.TryParse(Path.GetFileName(dir), out int pid)) continue;
            try
            {
                var stat = File.ReadAllText(Path.Combine(dir, "stat"));
                // pid (comm) state ppid ...: comm may hold spaces, so count from the last ')'.
                var rest = stat[(stat.LastIndexOf(')') + 2)..].Split(' ');
                if (int.Parse(rest[1], CultureInfo.InvariantCulture) != parent) continue;
                if (File.ReadAllText(Path.Combine(dir, "cmdline")).Contains(name, StringComparison.Ordinal)) return pid;
            }
            catch (IOException)
            {
                // The process ended while we looked.
            }
        }
        return null;
    }

    private static long VmRssKb(int pid)
    {
        foreach (var line in File.ReadLines($"/proc/{pid}/status"))
        {
            if (line.StartsWith("VmRSS:", StringComparison.Ordinal))
                return long.Parse(line["VmRSS:".Length..].Trim().Split(' ')[0], CultureInfo.InvariantCulture);
        }
        throw new InvalidOperationException("no VmRSS for " + pid);
    }

    /// <summary>
    /// A raw NATS user: plain TCP, TLS (INFO first, then the handshake) or WebSocket (masked binary frames out,
    /// frames decoded in). Reads are explicit, so a user that stops reading really leaves its socket unread.
    /// </summary>
    private sealed class Peer : IDisposable
    {
        private readonly TcpClient _tcp;
        private readonly Stream _stream;
        private readonly bool _ws;
        private readonly StringBuilder _seen = new();
        private byte[] _pending = [];
        private bool _infoRead;

        private Peer(TcpClient tcp, Stream stream, bool ws)
        {
            _tcp = tcp;
            _stream = stream;
            _ws = ws;
            LocalPort = ((IPEndPoint)tcp.Client.LocalEndPoint!).Port;
        }

        public int LocalPort { get; }

        /// <summary>Protocol text read so far other than MSG payloads (INFO, PONG, -ERR ...), after the handshake.</summary>
        public string Seen => _seen.ToString();

        /// <summary>MSGs parsed since the last <see cref="ResetSeen"/> (or the handshake).</summary>
        public int MessagesSeen { get; private set; }

        public void ResetSeen()
        {
            _seen.Clear();
            MessagesSeen = 0;
        }

        public static async Task<Peer> Plain(int port)
        {
            var tcp = new TcpClient { NoDelay = true };
            await tcp.ConnectAsync(IPAddress.Loopback, port);
            return new Peer(tcp, tcp.GetStream(), ws: false);
        }

        public static async Task<Peer> Tls(int port, string caFile)
        {
            var tcp = new TcpClient { NoDelay = true };
            await tcp.ConnectAsync(IPAddress.Loopback, port);
            var network = tcp.GetStream();
            // INFO first (tls_required), then the handshake, as NATS clients do.
            var one = new byte[1];
            while (await network.ReadAsync(one) == 1 && one[0] != '\n') { }
            using var ca = X509Certificate2.CreateFromPem(File.ReadAllText(caFile));
            var policy = new X509ChainPolicy { TrustMode = X509ChainTrustMode.CustomRootTrust, RevocationMode = X509RevocationMode.NoCheck };
            policy.CustomTrustStore.Add(ca);
            var ssl = new SslStream(network, leaveInnerStreamOpen: false);
            await ssl.AuthenticateAsClientAsync(new SslClientAuthenticationOptions { TargetHost = "localhost", CertificateChainPolicy = policy });
            return new Peer(tcp, ssl, ws: false) { _infoRead = true };
        }

        public static async Task<Peer> WebSocket(int port)
        {
            var tcp = new TcpClient { NoDelay = true };
            await tcp.ConnectAsync(IPAddress.Loopback, port);
            var stream = tcp.GetStream();
            await stream.WriteAsync(Encoding.ASCII.GetBytes(
                "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"));
            var head = new List<byte>();
            var one = new byte[1];
            while (head.Count < 4 || !(head[^4] == '\r' && head[^3] == '\n' && head[^2] == '\r' && head[^1] == '\n'))
            {
                if (await stream.ReadAsync(one) == 0) throw new IOException("closed during the upgrade");
                head.Add(one[0]);
            }
            Assert.StartsWith("HTTP/1.1 101", Encoding.ASCII.GetString([.. head]), StringComparison.Ordinal);
            return new Peer(tcp, stream, ws: true);
        }

        /// <summary>Reads INFO, sends CONNECT (with <paramref name="name"/>) and <paramref name="more"/>, and waits for the PONG.</summary>
        public async Task Handshake(string name, string more)
        {
            using var cts = new CancellationTokenSource(TimeSpan.FromSeconds(15));
            if (!_infoRead) await ReadUntil("\r\n", cts.Token); // INFO
            await Send(Encoding.ASCII.GetBytes($"CONNECT {{\"verbose\":false,\"pedantic\":false,\"name\":\"{name}\"}}\r\n{more}PING\r\n"), cts.Token);
            await ReadUntil("PONG\r\n", cts.Token);
            ResetSeen();
        }

        public async Task Send(byte[] nats, CancellationToken ct)
        {
            if (!_ws)
            {
                await _stream.WriteAsync(nats, ct);
                return;
            }
            // One masked binary frame (RFC 6455: client frames are masked).
            var header = new byte[14];
            header[0] = 0x82;
            int h;
            if (nats.Length <= 125) { header[1] = (byte)(0x80 | nats.Length); h = 2; }
            else if (nats.Length <= ushort.MaxValue) { header[1] = 0x80 | 126; BinaryPrimitives.WriteUInt16BigEndian(header.AsSpan(2), (ushort)nats.Length); h = 4; }
            else { header[1] = 0x80 | 127; BinaryPrimitives.WriteUInt64BigEndian(header.AsSpan(2), (ulong)nats.Length); h = 10; }
            RandomNumberGenerator.Fill(header.AsSpan(h, 4));
            var frame = new byte[h + 4 + nats.Length];
            header.AsSpan(0, h + 4).CopyTo(frame);
            for (int i = 0; i < nats.Length; i++) frame[h + 4 + i] = (byte)(nats[i] ^ header[h + (i & 3)]);
            await _stream.WriteAsync(frame, ct);
        }

        /// <summary>The next NATS bytes (a frame's payload for WebSocket); empty at the end ("end" says how it ended).</summary>
        private async Task<(byte[] Data, string? End)> ReadChunk(CancellationToken ct)
        {
            if (!_ws)
            {
                var buffer = new byte[64 * 1024];
                int n = await _stream.ReadAsync(buffer, ct);
                return n == 0 ? ([], "end of stream") : (buffer[..n], null);
            }
            var h = new byte[2];
            if (!await ReadExactly(h, ct)) return ([], "end of stream");
            long len = h[1] & 0x7f;
            if (len >= 126)
            {
                var l = new byte[len == 126 ? 2 : 8];
                if (!await ReadExactly(l, ct)) return ([], "end of stream inside a frame header");
                len = l.Length == 2 ? BinaryPrimitives.ReadUInt16BigEndian(l) : (long)BinaryPrimitives.ReadUInt64BigEndian(l);
            }
            var payload = new byte[len];
            if (!await ReadExactly(payload, ct)) return ([], "end of stream inside a frame");
            int opcode = h[0] & 0x0f;
            if (opcode == 8)
            {
                string status = payload.Length >= 2 ? BinaryPrimitives.ReadUInt16BigEndian(payload).ToString(CultureInfo.InvariantCulture) : "-";
                return ([], $"close {status} {Encoding.UTF8.GetString(payload.AsSpan(Math.Min(2, payload.Length)))}");
            }
            return opcode is 0 or 1 or 2 ? (payload, null) : ([], null);
        }

        private async Task<bool> ReadExactly(byte[] buffer, CancellationToken ct)
        {
            int filled = 0;
            while (filled < buffer.Length)
            {
                int n = await _stream.ReadAsync(buffer.AsMemory(filled), ct);
                if (n == 0) return false;
                filled += n;
            }
            return true;
        }

        /// <summary>Reads until <paramref name="marker"/> has been seen in the protocol text (MSG payloads skipped).</summary>
        public async Task ReadUntil(string marker, CancellationToken ct)
        {
            while (!_seen.ToString().Contains(marker, StringComparison.Ordinal))
            {
                var (data, end) = await ReadChunk(ct);
                if (end is not null) throw new IOException($"{end} before \"{marker}\"; seen: {_seen}");
                Consume(data);
            }
        }

        /// <summary>Counts MSGs until <paramref name="expected"/> have arrived (or the connection ends, or <paramref name="ct"/>).</summary>
        public async Task<int> CountMessagesAsync(int expected, CancellationToken ct)
        {
            int count = 0;
            try
            {
                while (count < expected)
                {
                    var (data, end) = await ReadChunk(ct);
                    if (end is not null) break;
                    count += Consume(data);
                }
            }
            catch (OperationCanceledException)
            {
            }
            return count;
        }

        /// <summary>Reads everything until the connection ends; returns the bytes read and how it ended.</summary>
        public async Task<(long Bytes, string End)> DrainToEnd(TimeSpan timeout)
        {
            using var cts = new CancellationTokenSource(timeout);
            long total = 0;
            try
            {
                while (true)
                {
                    var (data, end) = await ReadChunk(cts.Token);
                    if (end is not null) return (total, end);
                    total += data.Length;
                    Consume(data);
                }
            }
            catch (IOException ex)
            {
                return (total, "error: " + ex.Message);
            }
            catch (OperationCanceledException)
            {
                Assert.Fail($"the connection did not end within {timeout.TotalSeconds:0} s ({total} bytes read)");
                throw;
            }
        }

        /// <summary>Parses NATS protocol bytes: MSG payloads are skipped and counted, other lines kept in <see cref="Seen"/>.</summary>
        private int Consume(byte[] data)
        {
            var buffer = _pending.Length == 0 ? data : [.. _pending, .. data];
            int at = 0, messages = 0;
            while (at < buffer.Length)
            {
                int lf = Array.IndexOf(buffer, (byte)'\n', at);
                if (lf < 0) break;
                var line = Encoding.ASCII.GetString(buffer, at, lf + 1 - at);
                if (line.StartsWith("MSG ", StringComparison.Ordinal))
                {
                    int size = int.Parse(line.TrimEnd().Split(' ')[^1], CultureInfo.InvariantCulture);
                    if (lf + 1 + size + 2 > buffer.Length) break;
                    at = lf + 1 + size + 2;
                    messages++;
                    MessagesSeen++;
                    continue;
                }
                _seen.Append(line);
                at = lf + 1;
            }
            _pending = buffer[at..];
            return messages;
        }

        public void Dispose()
        {
            _stream.Dispose();
            _tcp.Dispose();
        }
    }
}
