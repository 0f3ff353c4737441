using System.Net;
using System.Net.Sockets;
using System.Text;
using System.Text.Json;
using NATS.Client.Core;
using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Gateways.WebSocket;

/// <summary>The websocket block's options through the gateway, with nats-server 2.9.10 as the oracle where it applies.</summary>
[Collection("Gateways")]
public sealed class WebSocketOptionsTests(ITestOutputHelper output) : IDisposable
{
    private readonly TestPki _pki = new();

    public void Dispose() => _pki.Dispose();

    private async Task<(ServerProcess Server, int WsPort)> Start(ServerKind kind, string ws, string rest = "", bool monitoring = false)
    {
        Prerequisites.RequireServer(kind, output);
        int wsPort = TestPorts.Next();
        var server = await ServerProcess.StartAsync(kind, new ServerStartOptions
        {
            Config = $$"""
                websocket {
                  port: {{wsPort}}
                  {{ws}}
                }
                {{rest}}
                """,
            Port = TestPorts.Next(),
            Monitoring = monitoring,
        }, output);
        await GatewayTestHelpers.WaitListeningAsync(wsPort);
        return (server, wsPort);
    }

    [SkippableTheory]
    [InlineData(ServerKind.Ours)]
    [InlineData(ServerKind.Go)]
    public Task NatsNet_over_wss(ServerKind kind)
        => WssRoundTrip(kind, extraTls: "", new NatsTlsOpts { CaFile = _pki.CaFile }, "over wss");

    /// <summary>wss with verify: a client certificate from ca_file's CA is accepted (a private CA, not the system's).</summary>
    [SkippableTheory]
    [InlineData(ServerKind.Ours)]
    [InlineData(ServerKind.Go)]
    public Task NatsNet_over_wss_with_a_client_certificate_under_verify(ServerKind kind)
    {
        var cert = _pki.Issue("ws-client", "CN=ws-client");
        return WssRoundTrip(kind, extraTls: $$"""
            ca_file: "{{_pki.CaFile}}"
            verify: true
            """, new NatsTlsOpts { CaFile = _pki.CaFile, CertFile = cert.Cert, KeyFile = cert.Key }, "verified");
    }

    /// <summary>A NATS.Net client over wss (the gateway's tls block plus <paramref name="extraTls"/>) publishes to its own subscription.</summary>
    private async Task WssRoundTrip(ServerKind kind, string extraTls, NatsTlsOpts clientTls, string text)
    {
        var (server, port) = await Start(kind, $$"""
            tls {
              cert_file: "{{_pki.ServerCert}}"
              key_file: "{{_pki.ServerKey}}"
              {{extraTls}}
            }
            """);
        await using var _ = server;
        await using var nc = new NatsConnection(new NatsOpts
        {
            Url = $"wss://localhost:{port}",
            TlsOpts = clientTls,
            ConnectTimeout = TimeSpan.FromSeconds(10),
        });
        await nc.ConnectAsync();
        await using var sub = await nc.SubscribeCoreAsync<string>("secure");
        await nc.PublishAsync("secure", text);
        using var cts = new CancellationTokenSource(TimeSpan.FromSeconds(10));
        Assert.Equal(text, (await sub.Msgs.ReadAsync(cts.Token)).Data);
    }

    /// <summary>same_origin: the Origin must match the request's Host (scheme default ports), as nats-server checks.</summary>
    [SkippableTheory]
    [InlineData(ServerKind.Ours)]
    [InlineData(ServerKind.Go)]
    public async Task Same_origin(ServerKind kind)
    {
        var (server, port) = await Start(kind, "no_tls: true\nsame_origin: true");
        await using var _ = server;
        Assert.StartsWith("HTTP/1.1 101", await Upgrade(port, "Host: example.com:8080\r\nOrigin: http://example.com:8080\r\n"), StringComparison.Ordinal);
        Assert.StartsWith("HTTP/1.1 101", await Upgrade(port, "Host: example.com\r\nOrigin: http://EXAMPLE.com:80\r\n"), StringComparison.Ordinal);
        Assert.StartsWith("HTTP/1.1 101", await Upgrade(port, "Host: example.com\r\n"), StringComparison.Ordinal);
        Assert.StartsWith("HTTP/1.1 403 Forbidden", await Upgrade(port, "Host: example.com\r\nOrigin: http://other.com\r\n"), StringComparison.Ordinal);
        Assert.StartsWith("HTTP/1.1 403 Forbidden", await Upgrade(port, "Host: example.com\r\nOrigin: https://example.com\r\n"), StringComparison.Ordinal);
    }

    private static async Task<string> Upgrade(int port, string headers)
    {
        using var c = new TcpClient();
        await c.ConnectAsync(IPAddress.Loopback, port);
        var s = c.GetStream();
        await s.WriteAsync(Encoding.ASCII.GetBytes("GET / HTTP/1.1\r\n" + headers
            + "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"));
        var buffer = new byte[4096];
        using var cts = new CancellationTokenSource(TimeSpan.FromSeconds(5));
        int n = await s.ReadAsync(buffer, cts.Token);
        return Encoding.ASCII.GetString(buffer, 0, n);
    }

    /// <summary>handshake_timeout: a client that never finishes its request is disconnected.</summary>
    [SkippableTheory]
    [InlineData(ServerKind.Ours)]
    [InlineData(ServerKind.Go)]
    public async Task Handshake_timeout_closes_a_silent_client(ServerKind kind)
    {
        var (server, port) = await Start(kind, "no_tls: true\nhandshake_timeout: \"300ms\"");
        await using var _ = server;
        using var c = new TcpClient();
        await c.ConnectAsync(IPAddress.Loopback, port);
        var s = c.GetStream();
        await s.WriteAsync("GET / HTTP/1.1\r\nHost: x\r\n"u8.ToArray());
        using var cts = new CancellationTokenSource(TimeSpan.FromSeconds(10));
        var buffer = new byte[1024];
        int total = 0, n;
        while ((n = await s.ReadAsync(buffer.AsMemory(total), cts.Token)) > 0) total += n;
        // Closed well before the 10 s guard; neither server answers a request it never got in full with a 101.
        Assert.False(cts.IsCancellationRequested);
        Assert.DoesNotContain("101", Encoding.ASCII.GetString(buffer, 0, total), StringComparison.Ordinal);
    }

    /// <summary>websocket { no_auth_user }: a WebSocket client without credentials is that user; TCP clients are not.</summary>
    [SkippableTheory]
    [InlineData(ServerKind.Ours)]
    [InlineData(ServerKind.Go)]
    public async Task No_auth_user_applies_to_websocket_clients(ServerKind kind)
    {
        var (server, port) = await Start(kind, "no_tls: true\nno_auth_user: ws", """
            authorization {
              users = [
                {user: ws, password: wspw, permissions: {publish: "allowed.>", subscribe: "allowed.>"}}
                {user: admin, password: adminpw}
              ]
            }
            """, monitoring: kind == ServerKind.Ours);
        await using var _ = server;
        await using var nc = new NatsConnection(new NatsOpts { Url = $"ws://127.0.0.1:{port}", ConnectTimeout = TimeSpan.FromSeconds(10) });
        await nc.ConnectAsync();
        await using var sub = await nc.SubscribeCoreAsync<string>("allowed.x");
        await nc.PublishAsync("allowed.x", "ok");
        using var cts = new CancellationTokenSource(TimeSpan.FromSeconds(10));
        Assert.Equal("ok", (await sub.Msgs.ReadAsync(cts.Token)).Data);
        // The TCP port has no no_auth_user: a client without credentials is refused.
        await using var tcp = new NatsConnection(new NatsOpts { Url = server.Url, MaxReconnectRetry = 0, ConnectTimeout = TimeSpan.FromSeconds(5) });
        await Assert.ThrowsAnyAsync<NatsException>(async () => await tcp.ConnectAsync());
        if (kind == ServerKind.Ours)
        {
            using var http = new HttpClient();
            var connz = JsonDocument.Parse(await http.GetStringAsync(new Uri(
                (await GatewayTestHelpers.ConnzUri(server)).ToString() + "?auth=1")));
            var conn = Assert.Single(connz.RootElement.GetProperty("connections").EnumerateArray());
            Assert.Equal("ws", conn.GetProperty("authorized_user").GetString());
        }
    }

    /// <summary>
    /// websocket { authorization { user, password } }: WebSocket clients need those credentials even though the
    /// top level requires none (nats-server's auth override); TCP clients are not affected; users of the top-level
    /// list still log in over WebSocket.
    /// </summary>
    [SkippableTheory]
    [InlineData(ServerKind.Ours)]
    [InlineData(ServerKind.Go)]
    public async Task Websocket_authorization_applies_to_websocket_clients_only(ServerKind kind)
    {
        var (server, port) = await Start(kind, "no_tls: true\nauthorization { user: wsuser, password: wspass }");
        await using var _ = server;
        string ws = $"ws://127.0.0.1:{port}";
        await using (var ok = new NatsConnection(new NatsOpts { Url = ws, AuthOpts = new NatsAuthOpts { Username = "wsuser", Password = "wspass" }, ConnectTimeout = TimeSpan.FromSeconds(10) }))
        {
            await ok.ConnectAsync();
            Assert.True(ok.ServerInfo!.AuthRequired);
            await ok.PingAsync();
        }
        foreach (var (user, pass) in new[] { ("wsuser", "wrong"), ((string?)null, (string?)null) })
        {
            await using var bad = new NatsConnection(new NatsOpts { Url = ws, AuthOpts = new NatsAuthOpts { Username = user, Password = pass }, MaxReconnectRetry = 0, ConnectTimeout = TimeSpan.FromSeconds(10) });
            var ex = await Assert.ThrowsAnyAsync<NatsException>(async () => await bad.ConnectAsync());
            Assert.Contains("Authorization Violation", ex.ToString(), StringComparison.OrdinalIgnoreCase);
        }
        // The TCP port has no auth at all.
        await using var tcp = new NatsConnection(new NatsOpts { Url = server.Url, ConnectTimeout = TimeSpan.FromSeconds(10) });
        await tcp.ConnectAsync();
        Assert.False(tcp.ServerInfo!.AuthRequired);
    }

    /// <summary>websocket { authorization { token } } beside a top-level user: the token over WebSocket, the user over TCP.</summary>
    [SkippableTheory]
    [InlineData(ServerKind.Ours)]
    [InlineData(ServerKind.Go)]
    public async Task Websocket_token_overrides_the_top_level_user(ServerKind kind)
    {
        var (server, port) = await Start(kind, "no_tls: true\nauthorization { token: wstoken }", """
            authorization { user: admin, password: adminpw }
            """);
        await using var _ = server;
        string ws = $"ws://127.0.0.1:{port}";
        await using (var byToken = new NatsConnection(new NatsOpts { Url = ws, AuthOpts = new NatsAuthOpts { Token = "wstoken" }, ConnectTimeout = TimeSpan.FromSeconds(10) }))
            await byToken.ConnectAsync();
        await using (var userOverWs = new NatsConnection(new NatsOpts { Url = ws, AuthOpts = new NatsAuthOpts { Username = "admin", Password = "adminpw" }, MaxReconnectRetry = 0, ConnectTimeout = TimeSpan.FromSeconds(10) }))
            await Assert.ThrowsAnyAsync<NatsException>(async () => await userOverWs.ConnectAsync());
        await using (var userOverTcp = new NatsConnection(new NatsOpts { Url = server.Url, AuthOpts = new NatsAuthOpts { Username = "admin", Password = "adminpw" }, ConnectTimeout = TimeSpan.FromSeconds(10) }))
            await userOverTcp.ConnectAsync();
        await using var tokenOverTcp = new NatsConnection(new NatsOpts { Url = server.Url, AuthOpts = new NatsAuthOpts { Token = "wstoken" }, MaxReconnectRetry = 0, ConnectTimeout = TimeSpan.FromSeconds(10) });
        await Assert.ThrowsAnyAsync<NatsException>(async () => await tokenOverTcp.ConnectAsync());
    }

    /// <summary>
    /// websocket { authorization { timeout } } (server/websocket.go createWSClient: the block's timeout replaces
    /// auth_timeout for WebSocket clients): a WebSocket client that sends no CONNECT is told
    /// <c>-ERR 'Authentication Timeout'</c> and closed after the block's 1 s, well before the top-level 6 s, with the
    /// close frame nats-server sends (1008, "Authentication Timeout").
    /// </summary>
    [SkippableTheory]
    [InlineData(ServerKind.Ours)]
    [InlineData(ServerKind.Go)]
    public async Task Websocket_authorization_timeout_replaces_auth_timeout(ServerKind kind)
    {
        var (server, port) = await Start(kind, "no_tls: true\nauthorization { user: wsuser, password: wspass, timeout: 1 }", "authorization { timeout: 6 }");
        await using var _ = server;
        using var ws = await RawWs.Connect(port);
        var started = System.Diagnostics.Stopwatch.StartNew();
        var (opcode, info) = await ws.ReadFrame();
        Assert.Equal(2, opcode);
        Assert.StartsWith("INFO ", Encoding.ASCII.GetString(info), StringComparison.Ordinal);
        var text = new StringBuilder();
        while (true)
        {
            var (op, payload) = await ws.ReadFrame();
            if (op == 8)
            {
                Assert.Equal(1008, (payload[0] << 8) | payload[1]);
                Assert.Equal("Authentication Timeout", Encoding.UTF8.GetString(payload, 2, payload.Length - 2));
                break;
            }
            text.Append(Encoding.ASCII.GetString(payload));
        }
        var elapsed = started.Elapsed;
        output.WriteLine($"{kind}: closed after {elapsed.TotalMilliseconds:0} ms: {text}");
        Assert.Contains("-ERR 'Authentication Timeout'", text.ToString(), StringComparison.Ordinal);
        Assert.InRange(elapsed, TimeSpan.FromMilliseconds(500), TimeSpan.FromSeconds(4));
    }

    /// <summary>
    /// A websocket user or token beside a users list is refused with nats-server's text (validateWebsocketOptions).
    /// nats-server refuses it when it starts (its <c>-t</c> does not run that check); ours already at <c>-t</c>, with
    /// the block's file:line.
    /// </summary>
    [SkippableTheory]
    [InlineData("token: t", "websocket authentication token not compatible with presence of users/nkeys")]
    [InlineData("user: u, password: p", "websocket authentication username not compatible with presence of users/nkeys")]
    public void Websocket_user_or_token_beside_users_is_refused(string auth, string message)
    {
        string go = Prerequisites.RequireGoServer(output);
        string file = Path.Combine(Path.GetTempPath(), $"ws-auth-{Guid.NewGuid():N}.conf");
        File.WriteAllText(file, $"websocket {{ port: {TestPorts.Next()}, no_tls: true, authorization {{ {auth} }} }}\nauthorization {{ users: [ {{user: a, password: b}} ] }}\n");
        try
        {
            var ours = Assert.Throws<NatsBroker.Configuration.ConfigException>(() => NatsBroker.Configuration.CommandLine.Parse(["-t", "-c", file]));
            Assert.Contains(file + ":1:1: " + message, ours.Message, StringComparison.Ordinal);
            using var p = System.Diagnostics.Process.Start(new System.Diagnostics.ProcessStartInfo(go, ["-c", file, "-p", TestPorts.Next().ToString(System.Globalization.CultureInfo.InvariantCulture)])
            {
                RedirectStandardError = true,
                RedirectStandardOutput = true,
            })!;
            // nats-server refuses at start-up; one that started anyway is killed and fails the test.
            bool exited = p.WaitForExit(10_000);
            if (!exited) p.Kill();
            string err = p.StandardError.ReadToEnd() + p.StandardOutput.ReadToEnd();
            Assert.True(exited, "nats-server started: " + err);
            Assert.NotEqual(0, p.ExitCode);
            Assert.Contains(message, err, StringComparison.Ordinal);
        }
        finally
        {
            File.Delete(file);
        }
    }

    /// <summary>The upgrade's Origin reaches the core: /connz shows it under proxy.</summary>
    [SkippableFact]
    public async Task Connz_shows_the_websocket_origin()
    {
        var (server, port) = await Start(ServerKind.Ours, "no_tls: true", monitoring: true);
        await using var _ = server;
        using var c = new TcpClient();
        await c.ConnectAsync(IPAddress.Loopback, port);
        var s = c.GetStream();
        await s.WriteAsync(Encoding.ASCII.GetBytes("GET / HTTP/1.1\r\nHost: x\r\nOrigin: http://app.example\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"));
        var buffer = new byte[8192];
        int total = 0;
        using var cts = new CancellationTokenSource(TimeSpan.FromSeconds(10));
        // Frames only after the 101 (data sent with the request is refused, as by nats-server).
        while (!Encoding.ASCII.GetString(buffer, 0, total).Contains("\r\n\r\n", StringComparison.Ordinal))
            total += await s.ReadAsync(buffer.AsMemory(total), cts.Token);
        var connect = "CONNECT {}\r\nPING\r\n"u8.ToArray();
        var frame = new byte[6 + connect.Length];
        frame[0] = 0x82;
        frame[1] = (byte)(0x80 | connect.Length);
        // A zero mask key leaves the payload as it is.
        connect.CopyTo(frame, 6);
        await s.WriteAsync(frame);
        while (!Encoding.ASCII.GetString(buffer, 0, total).Contains("PONG", StringComparison.Ordinal))
            total += await s.ReadAsync(buffer.AsMemory(total), cts.Token);
        using var http = new HttpClient();
        var connz = JsonDocument.Parse(await http.GetStringAsync(await GatewayTestHelpers.ConnzUri(server)));
        var conn = Assert.Single(connz.RootElement.GetProperty("connections").EnumerateArray());
        Assert.Equal("http://app.example", conn.GetProperty("proxy").GetProperty("ws_origin").GetString());
    }

    /// <summary>/mqtt is refused before the upgrade (501) when the config has no mqtt {} block; the NATS path still works.</summary>
    [SkippableFact]
    public async Task Mqtt_over_websocket_is_refused_cleanly_without_an_mqtt_block()
    {
        var (server, port) = await Start(ServerKind.Ours, "no_tls: true");
        await using var _ = server;
        using var c = new TcpClient();
        await c.ConnectAsync(IPAddress.Loopback, port);
        var s = c.GetStream();
        await s.WriteAsync(Encoding.ASCII.GetBytes("GET /mqtt HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: mqtt\r\n\r\n"));
        var buffer = new byte[4096];
        int total = 0, n;
        using var cts = new CancellationTokenSource(TimeSpan.FromSeconds(10));
        while ((n = await s.ReadAsync(buffer.AsMemory(total), cts.Token)) > 0) total += n;
        Assert.StartsWith("HTTP/1.1 501 Not Implemented\r\n", Encoding.ASCII.GetString(buffer, 0, total), StringComparison.Ordinal);
        Assert.StartsWith("HTTP/1.1 101", await Upgrade(port, "Host: x\r\n"), StringComparison.Ordinal);
    }
}
