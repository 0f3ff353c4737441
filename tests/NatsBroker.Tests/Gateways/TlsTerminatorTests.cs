using System.Net;
using System.Net.Security;
using System.Net.Sockets;
using System.Security.Authentication;
using System.Text;
using System.Text.Json;
using NATS.Client.Core;
using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Gateways;

/// <summary>
/// TLS through the tls-terminator gateway, started by the core as a supervised child from a nats-server config
/// with a <c>tls {}</c> block; Go nats-server with the same config is the oracle where 2.9.10 has the feature.
/// </summary>
[Collection("Gateways")]
public sealed class TlsTerminatorTests(ITestOutputHelper output) : IDisposable
{
    private readonly TestPki _pki = new();

    public void Dispose() => _pki.Dispose();

    private string Config(string tlsExtra = "", string rest = "") =>
        $$"""
        tls {
          cert_file: "{{_pki.ServerCert}}"
          key_file: "{{_pki.ServerKey}}"
          {{tlsExtra}}
        }
        {{rest}}
        """;

    private Task<ServerProcess> Start(ServerKind kind, string config, bool monitoring = false) =>
        ServerProcess.StartAsync(kind, new ServerStartOptions { Config = config, Port = TestPorts.Next(), Monitoring = monitoring }, output);

    private NatsOpts ClientOpts(ServerProcess s, TlsMode mode = TlsMode.Require, (string Cert, string Key)? cert = null) => new()
    {
        Url = $"tls://127.0.0.1:{s.Port}",
        TlsOpts = new NatsTlsOpts { Mode = mode, CaFile = _pki.CaFile, CertFile = cert?.Cert, KeyFile = cert?.Key },
        ConnectTimeout = TimeSpan.FromSeconds(10),
        MaxReconnectRetry = 0,
    };

    private static async Task RoundTrip(NatsConnection nc)
    {
        await using var sub = await nc.SubscribeCoreAsync<string>("greet.*");
        await nc.PublishAsync("greet.joe", "hello");
        using var cts = new CancellationTokenSource(TimeSpan.FromSeconds(10));
        var msg = await sub.Msgs.ReadAsync(cts.Token);
        Assert.Equal("greet.joe", msg.Subject);
        Assert.Equal("hello", msg.Data);
    }

    [Fact]
    public async Task InfoFirst_NatsNet_PubSub_and_connz_shows_the_end_user_through_the_gateway()
    {
        await using var server = await Start(ServerKind.Ours, Config(), monitoring: true);
        await using var nc = new NatsConnection(ClientOpts(server));
        await nc.ConnectAsync();
        Assert.True(nc.ServerInfo!.TlsRequired);
        await RoundTrip(nc);

        using var http = new HttpClient();
        var connz = JsonDocument.Parse(await http.GetStringAsync(await GatewayTestHelpers.ConnzUri(server)));
        var conn = Assert.Single(connz.RootElement.GetProperty("connections").EnumerateArray());
        Assert.Equal("127.0.0.1", conn.GetProperty("ip").GetString());
        Assert.NotEqual(0, conn.GetProperty("port").GetInt32());
        Assert.StartsWith("1.", conn.GetProperty("tls_version").GetString(), StringComparison.Ordinal);
        Assert.StartsWith("TLS_", conn.GetProperty("tls_cipher_suite").GetString(), StringComparison.Ordinal);
        Assert.Equal("tls-terminator", conn.GetProperty("proxy").GetProperty("gateway").GetString());
        Assert.StartsWith("U", conn.GetProperty("proxy").GetProperty("key").GetString(), StringComparison.Ordinal);
    }

    [Fact]
    public async Task HandshakeFirst_NatsNet_implicit_TLS()
    {
        await using var server = await Start(ServerKind.Ours, Config("handshake_first: true"), monitoring: true);
        await using var nc = new NatsConnection(ClientOpts(server, TlsMode.Implicit));
        await nc.ConnectAsync();
        await RoundTrip(nc);
        using var http = new HttpClient();
        var connz = JsonDocument.Parse(await http.GetStringAsync(await GatewayTestHelpers.ConnzUri(server)));
        var conn = Assert.Single(connz.RootElement.GetProperty("connections").EnumerateArray());
        Assert.True(conn.GetProperty("tls_first").GetBoolean());
    }

    /// <summary>
    /// allow_non_tls: TLS offered, not required. INFO says tls_available (no tls_required) and both a plaintext and
    /// a TLS client get through the same port (nats.node's "available connects with or without").
    /// </summary>
    [SkippableTheory]
    [MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Allow_non_tls_serves_plaintext_and_TLS_clients_on_one_port(ServerKind kind)
    {
        Prerequisites.RequireServer(kind, output);
        await using var server = await Start(kind, Config(rest: "allow_non_tls: true"));

        using (var raw = new System.Net.Sockets.TcpClient())
        {
            await raw.ConnectAsync("127.0.0.1", server.Port);
            var line = await new StreamReader(raw.GetStream()).ReadLineAsync();
            Assert.StartsWith("INFO ", line, StringComparison.Ordinal);
            var info = JsonDocument.Parse(line!["INFO ".Length..]).RootElement;
            Assert.True(info.GetProperty("tls_available").GetBoolean());
            Assert.False(info.TryGetProperty("tls_required", out var required) && required.GetBoolean());
        }

        var plain = ClientOpts(server, TlsMode.Disable) with { Url = $"nats://127.0.0.1:{server.Port}" };
        await using (var nc = new NatsConnection(plain))
        {
            await nc.ConnectAsync();
            await RoundTrip(nc);
        }
        await using (var nc = new NatsConnection(ClientOpts(server)))
        {
            await nc.ConnectAsync();
            await RoundTrip(nc);
        }
    }

    /// <summary>
    /// <c>tls {}</c> with neither cert_file nor key_file: nats-server accepts the config (server/opts.go GenTLSConfig)
    /// and listens. With allow_non_tls a plaintext client is served and a TLS handshake fails; without it the port still
    /// listens and announces tls_required. Ours once refused the block in the terminator ("missing 'cert_file'"), which
    /// the core restarted in a loop while nothing listened on the client port.
    /// </summary>
    [SkippableTheory]
    [MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Tls_block_without_certificate_files_listens_as_nats_server_does(ServerKind kind)
    {
        Prerequisites.RequireServer(kind, output);
        await using (var server = await Start(kind, "tls {}\nallow_non_tls: true\n"))
        {
            var plain = ClientOpts(server, TlsMode.Disable) with { Url = $"nats://127.0.0.1:{server.Port}" };
            await using (var nc = new NatsConnection(plain))
            {
                await nc.ConnectAsync();
                await RoundTrip(nc);
            }
            using var tcp = new TcpClient();
            await tcp.ConnectAsync("127.0.0.1", server.Port);
            var info = JsonDocument.Parse((await new StreamReader(tcp.GetStream()).ReadLineAsync())!["INFO ".Length..]).RootElement;
            Assert.True(info.GetProperty("tls_available").GetBoolean());
            // No callback: the server has no certificate to present, so the handshake fails before any validation.
            await using var ssl = new SslStream(tcp.GetStream(), false);
            await Assert.ThrowsAnyAsync<Exception>(() => ssl.AuthenticateAsClientAsync("localhost"));
        }
        await using (var server = await Start(kind, "tls {}\n"))
        {
            using var tcp = new TcpClient();
            await tcp.ConnectAsync("127.0.0.1", server.Port);
            var info = JsonDocument.Parse((await new StreamReader(tcp.GetStream()).ReadLineAsync())!["INFO ".Length..]).RootElement;
            Assert.True(info.GetProperty("tls_required").GetBoolean());
        }
    }

    [Fact]
    public async Task HandshakeFirst_refuses_an_INFO_first_client()
    {
        await using var server = await Start(ServerKind.Ours, Config("handshake_first: true"));
        await using var nc = new NatsConnection(ClientOpts(server, TlsMode.Require));
        await Assert.ThrowsAnyAsync<Exception>(async () => await nc.ConnectAsync());
    }

    [SkippableTheory]
    [MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Mutual_TLS_client_certificate_required(ServerKind kind)
    {
        Prerequisites.RequireServer(kind, output);
        var alice = _pki.Issue("alice", "CN=alice");
        await using var server = await Start(kind, Config($"ca_file: \"{_pki.CaFile}\"\nverify: true"));
        await using (var without = new NatsConnection(ClientOpts(server)))
        {
            await Assert.ThrowsAnyAsync<Exception>(async () => await without.ConnectAsync());
        }
        await using var with = new NatsConnection(ClientOpts(server, cert: alice));
        await with.ConnectAsync();
        Assert.True(with.ServerInfo!.TlsVerify);
        await RoundTrip(with);
    }

    [SkippableTheory]
    [MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Verify_and_map_makes_the_certificate_the_user_with_its_permissions(ServerKind kind)
    {
        Prerequisites.RequireServer(kind, output);
        var alice = _pki.Issue("alice", "CN=alice", email: "alice@example.com");
        var bob = _pki.Issue("bob", "CN=bob,O=Acme");
        var mallory = _pki.Issue("mallory", "CN=mallory");
        var users = """
            authorization {
              users = [
                { user: "alice@example.com", permissions: { publish: "allowed.>", subscribe: ">" } }
                { user: "CN=bob,O=Acme" }
              ]
            }
            """;
        await using var server = await Start(kind, Config($"ca_file: \"{_pki.CaFile}\"\nverify_and_map: true", users));

        // alice: mapped by her e-mail SAN; publishing outside "allowed.>" is a permissions violation.
        var (_, aliceLines) = await RawTlsSession(server.Port, alice, "CONNECT {\"verbose\":false,\"pedantic\":false}\r\nPUB denied.x 1\r\na\r\nPUB allowed.x 1\r\nb\r\nPING\r\n", "PONG");
        Assert.Contains("-ERR 'Permissions Violation for Publish to \"denied.x\"'", aliceLines);
        Assert.DoesNotContain(aliceLines, l => l.Contains("allowed.x", StringComparison.Ordinal));

        // bob: mapped by the subject in Go's RFC 2253 form.
        await using (var nc = new NatsConnection(ClientOpts(server, cert: bob)))
        {
            await nc.ConnectAsync();
            await RoundTrip(nc);
        }

        // mallory: a valid certificate that names no user.
        var (_, malloryLines) = await RawTlsSession(server.Port, mallory, "CONNECT {\"verbose\":false}\r\nPING\r\n", "-ERR");
        Assert.Contains("-ERR 'Authorization Violation'", malloryLines);
    }

    [SkippableTheory]
    [MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Plaintext_client_gets_INFO_then_the_connection_closes_without_another_byte(ServerKind kind)
    {
        Prerequisites.RequireServer(kind, output);
        await using var server = await Start(kind, Config());
        using var socket = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
        await socket.ConnectAsync(IPAddress.Loopback, server.Port);
        var info = await ReadLine(socket);
        Assert.StartsWith("INFO ", info, StringComparison.Ordinal);
        using (var doc = JsonDocument.Parse(info[5..]))
            Assert.True(doc.RootElement.GetProperty("tls_required").GetBoolean());
        await socket.SendAsync("CONNECT {\"verbose\":false}\r\nPING\r\n"u8.ToArray());
        Assert.Equal("", await ReadToEnd(socket, TimeSpan.FromSeconds(10)));
    }

    [SkippableTheory]
    [MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Handshake_timeout_closes_a_silent_client(ServerKind kind)
    {
        Prerequisites.RequireServer(kind, output);
        await using var server = await Start(kind, Config("timeout: 0.5"));
        using var socket = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
        await socket.ConnectAsync(IPAddress.Loopback, server.Port);
        Assert.StartsWith("INFO ", await ReadLine(socket), StringComparison.Ordinal);
        // Say nothing: the server gives up on the handshake and closes (nats-server: "TLS handshake timeout").
        Assert.Equal("", await ReadToEnd(socket, TimeSpan.FromSeconds(15)));
    }

    [SkippableTheory]
    [MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task A_client_certificate_from_an_unknown_issuer_is_refused(ServerKind kind)
    {
        Prerequisites.RequireServer(kind, output);
        // Self-signed, valid for client authentication, but not issued by the CA the server trusts.
        using var key = System.Security.Cryptography.ECDsa.Create(System.Security.Cryptography.ECCurve.NamedCurves.nistP256);
        var request = new System.Security.Cryptography.X509Certificates.CertificateRequest("CN=mallory", key, System.Security.Cryptography.HashAlgorithmName.SHA256);
        request.CertificateExtensions.Add(new System.Security.Cryptography.X509Certificates.X509EnhancedKeyUsageExtension(
            [new System.Security.Cryptography.Oid("1.3.6.1.5.5.7.3.2")], critical: false));
        using var self = request.CreateSelfSigned(DateTimeOffset.UtcNow.AddDays(-1), DateTimeOffset.UtcNow.AddDays(1));
        string certFile = Path.Combine(_pki.Dir, "mallory-self.pem"), keyFile = Path.Combine(_pki.Dir, "mallory-self-key.pem");
        File.WriteAllText(certFile, self.ExportCertificatePem());
        File.WriteAllText(keyFile, key.ExportPkcs8PrivateKeyPem());

        await using var server = await Start(kind, Config($"ca_file: \"{_pki.CaFile}\"\nverify: true"));
        await using var nc = new NatsConnection(ClientOpts(server, cert: (certFile, keyFile)));
        await Assert.ThrowsAnyAsync<Exception>(async () => await nc.ConnectAsync());
        // The same server takes a certificate from its CA.
        await using var alice = new NatsConnection(ClientOpts(server, cert: _pki.Issue("alice", "CN=alice")));
        await alice.ConnectAsync();
        await RoundTrip(alice);
    }

    [Theory]
    [InlineData(System.Security.Authentication.SslProtocols.Tls12, false)]
    [InlineData(System.Security.Authentication.SslProtocols.Tls13, true)]
    public async Task Min_version_refuses_older_protocols(System.Security.Authentication.SslProtocols client, bool accepted)
    {
        await using var server = await Start(ServerKind.Ours, Config("min_version: \"1.3\""));
        using var socket = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
        await socket.ConnectAsync(IPAddress.Loopback, server.Port);
        Assert.StartsWith("INFO ", await ReadLine(socket), StringComparison.Ordinal);
        await using var ssl = new SslStream(new NetworkStream(socket, ownsSocket: false), false, TrustTestCa);
        var handshake = ssl.AuthenticateAsClientAsync(new SslClientAuthenticationOptions { TargetHost = "localhost", EnabledSslProtocols = client });
        if (!accepted)
        {
            await Assert.ThrowsAnyAsync<Exception>(() => handshake);
            return;
        }
        await handshake;
        Assert.Equal(System.Security.Authentication.SslProtocols.Tls13, ssl.SslProtocol);
        await ssl.WriteAsync("CONNECT {\"verbose\":false}\r\nPING\r\n"u8.ToArray());
        using var reader = new StreamReader(ssl, Encoding.ASCII);
        using var cts = new CancellationTokenSource(TimeSpan.FromSeconds(10));
        Assert.Equal("PONG", await reader.ReadLineAsync(cts.Token));
    }

    /// <summary>
    /// cipher_suites of one TLS 1.2 suite: a TLS 1.2 client offering another suite is refused, one offering it gets
    /// it (and /connz says so), and a TLS 1.3 client is served with any TLS 1.3 suite, because Go's crypto/tls
    /// applies cipher_suites to TLS 1.2 only.
    /// </summary>
    [SkippableTheory]
    [MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Cipher_suites_limit_TLS12_clients_and_leave_TLS13_alone(ServerKind kind)
    {
        Prerequisites.RequireServer(kind, output);
        await using var server = await Start(kind, Config("cipher_suites: [\"TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384\"]"), monitoring: true);

        Assert.Null(await OfferSuites(server.Port, SslProtocols.Tls12, TlsCipherSuite.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256));

        await using (var tls12 = await OfferSuites(server.Port, SslProtocols.Tls12,
            TlsCipherSuite.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, TlsCipherSuite.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384))
        {
            Assert.NotNull(tls12);
            Assert.Equal(TlsCipherSuite.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384, tls12.Ssl.NegotiatedCipherSuite);
            var conn = await Connection(server, tls12.LocalPort);
            Assert.Equal("1.2", conn.GetProperty("tls_version").GetString());
            Assert.Equal("TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", conn.GetProperty("tls_cipher_suite").GetString());
        }

        await using var tls13 = await OfferSuites(server.Port, SslProtocols.Tls13, TlsCipherSuite.TLS_CHACHA20_POLY1305_SHA256);
        Assert.NotNull(tls13);
        Assert.Equal(SslProtocols.Tls13, tls13.Ssl.SslProtocol);
        var conn13 = await Connection(server, tls13.LocalPort);
        Assert.Equal("1.3", conn13.GetProperty("tls_version").GetString());
        Assert.Equal("TLS_CHACHA20_POLY1305_SHA256", conn13.GetProperty("tls_cipher_suite").GetString());
    }

    /// <summary>
    /// Without cipher_suites nats-server serves TLS 1.2 with its six ECDHE AEAD suites (defaultCipherSuites), not the
    /// platform's list: a CBC suite that .NET's own defaults include is refused. /connz names a ChaCha20 suite as
    /// Go does (no _SHA256).
    /// </summary>
    [SkippableTheory]
    [MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Without_cipher_suites_TLS12_clients_get_nats_servers_defaults(ServerKind kind)
    {
        Prerequisites.RequireServer(kind, output);
        await using var server = await Start(kind, Config(), monitoring: true);

        Assert.Null(await OfferSuites(server.Port, SslProtocols.Tls12, TlsCipherSuite.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256));

        await using var chacha = await OfferSuites(server.Port, SslProtocols.Tls12, TlsCipherSuite.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256);
        Assert.NotNull(chacha);
        var conn = await Connection(server, chacha.LocalPort);
        Assert.Equal("TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305", conn.GetProperty("tls_cipher_suite").GetString());
    }

    /// <summary>
    /// cipher_suites naming only a TLS 1.3 suite: Go ignores it for TLS 1.3 (every TLS 1.3 suite stays on) and it
    /// matches no TLS 1.2 suite, so TLS 1.2 clients are refused.
    /// </summary>
    [SkippableTheory]
    [MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Cipher_suites_of_TLS13_names_refuse_TLS12_and_do_not_narrow_TLS13(ServerKind kind)
    {
        Prerequisites.RequireServer(kind, output);
        await using var server = await Start(kind, Config("cipher_suites: [\"TLS_AES_128_GCM_SHA256\"]"));

        Assert.Null(await OfferSuites(server.Port, SslProtocols.Tls12, [.. GoDefaultTls12]));
        await using var tls13 = await OfferSuites(server.Port, SslProtocols.Tls13, TlsCipherSuite.TLS_AES_256_GCM_SHA384);
        Assert.NotNull(tls13);
        Assert.Equal(TlsCipherSuite.TLS_AES_256_GCM_SHA384, tls13.Ssl.NegotiatedCipherSuite);
    }

    /// <summary>nats-server's defaultCipherSuites (server/ciphersuites.go), written out so the test does not take them from the code under test.</summary>
    private static readonly TlsCipherSuite[] GoDefaultTls12 =
    [
        TlsCipherSuite.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, TlsCipherSuite.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
        TlsCipherSuite.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256, TlsCipherSuite.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
        TlsCipherSuite.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384, TlsCipherSuite.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
    ];

    [Fact]
    public async Task Supervisor_restarts_a_killed_terminator_and_clients_reconnect()
    {
        await using var server = await Start(ServerKind.Ours, Config());
        var first = StartedPid(server.Output);
        Assert.NotNull(first);
        await using var nc = new NatsConnection(ClientOpts(server) with { MaxReconnectRetry = -1, ReconnectWaitMin = TimeSpan.FromMilliseconds(200) });
        await nc.ConnectAsync();
        await RoundTrip(nc);

        using (var p = System.Diagnostics.Process.GetProcessById(first!.Value)) p.Kill();
        var deadline = DateTime.UtcNow.AddSeconds(30);
        while (StartedPid(server.Output) == first && DateTime.UtcNow < deadline) await Task.Delay(100);
        Assert.NotEqual(first, StartedPid(server.Output));
        Assert.False(server.HasExited);

        // The client reconnects through the new terminator.
        using var cts = new CancellationTokenSource(TimeSpan.FromSeconds(30));
        while (nc.ConnectionState != NatsConnectionState.Open) await Task.Delay(100, cts.Token);
        await RoundTrip(nc);
    }

    [Fact]
    public async Task SIGHUP_reloads_the_certificate_for_new_clients_and_keeps_existing_ones()
    {
        await using var server = await Start(ServerKind.Ours, Config());
        await using var before = new NatsConnection(ClientOpts(server));
        await before.ConnectAsync();

        // A new CA and server certificate in place of the old files; clients trusting only the new CA.
        using var next = new TestPki();
        File.Copy(next.ServerCert, _pki.ServerCert, overwrite: true);
        File.Copy(next.ServerKey, _pki.ServerKey, overwrite: true);
        var trustNew = ClientOpts(server) with { TlsOpts = new NatsTlsOpts { Mode = TlsMode.Require, CaFile = next.CaFile } };

        await using (var early = new NatsConnection(trustNew))
            await Assert.ThrowsAnyAsync<Exception>(async () => await early.ConnectAsync());

        server.Reload();
        await server.WaitForOutputAsync("Reloaded TLS certificates", TimeSpan.FromSeconds(20));
        Assert.Contains("Reloaded TLS certificates", server.Output, StringComparison.Ordinal);

        await using var after = new NatsConnection(trustNew);
        await after.ConnectAsync();
        await RoundTrip(after);
        await RoundTrip(before); // the connection made with the old certificate is still served
    }

    private static int? StartedPid(string log)
    {
        var matches = System.Text.RegularExpressions.Regex.Matches(log, @"Started the tls-terminator gateway \(pid (\d+)\)");
        return matches.Count == 0 ? null : int.Parse(matches[^1].Groups[1].Value, System.Globalization.CultureInfo.InvariantCulture);
    }

    /// <summary>INFO-first TLS by hand: read INFO, upgrade, send <paramref name="send"/>, read lines until one starts with <paramref name="until"/>.</summary>
    private async Task<(string Info, List<string> Lines)> RawTlsSession(int port, (string Cert, string Key) cert, string send, string until)
    {
        using var socket = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
        await socket.ConnectAsync(IPAddress.Loopback, port);
        var info = await ReadLine(socket);
        await using var ssl = new SslStream(new NetworkStream(socket, ownsSocket: false), false, TrustTestCa);
        using var clientCert = System.Security.Cryptography.X509Certificates.X509Certificate2.CreateFromPemFile(cert.Cert, cert.Key);
        await ssl.AuthenticateAsClientAsync(new SslClientAuthenticationOptions
        {
            TargetHost = "localhost",
            ClientCertificates = [clientCert],
        });
        await ssl.WriteAsync(Encoding.ASCII.GetBytes(send));
        var lines = new List<string>();
        using var reader = new StreamReader(ssl, Encoding.ASCII);
        using var cts = new CancellationTokenSource(TimeSpan.FromSeconds(10));
        while (await reader.ReadLineAsync(cts.Token) is { } line)
        {
            lines.Add(line);
            if (line.StartsWith(until, StringComparison.Ordinal)) break;
        }
        output.WriteLine(string.Join("\n", lines));
        return (info, lines);
    }

    /// <summary>An established client session: the TLS stream (owning its socket) and the client's local port, which /connz shows.</summary>
    private sealed class TlsClient(SslStream ssl, int localPort) : IAsyncDisposable
    {
        public SslStream Ssl { get; } = ssl;
        public int LocalPort { get; } = localPort;
        public ValueTask DisposeAsync() => Ssl.DisposeAsync();
    }

    /// <summary>
    /// INFO-first TLS from a client that offers only <paramref name="suites"/> over <paramref name="protocol"/>.
    /// Null when the server refuses the handshake; otherwise the session after CONNECT and PING got PONG.
    /// </summary>
    private async Task<TlsClient?> OfferSuites(int port, SslProtocols protocol, params TlsCipherSuite[] suites)
    {
        Skip.If(OperatingSystem.IsWindows(), "a client offering chosen suites needs CipherSuitesPolicy, not on Windows");
        var socket = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
        await socket.ConnectAsync(IPAddress.Loopback, port);
        int localPort = ((IPEndPoint)socket.LocalEndPoint!).Port;
        Assert.StartsWith("INFO ", await ReadLine(socket), StringComparison.Ordinal);
        var ssl = new SslStream(new NetworkStream(socket, ownsSocket: true), false, TrustTestCa);
        try
        {
            using var cts = new CancellationTokenSource(TimeSpan.FromSeconds(10));
            await ssl.AuthenticateAsClientAsync(new SslClientAuthenticationOptions
            {
                TargetHost = "localhost",
                EnabledSslProtocols = protocol,
                CipherSuitesPolicy = OperatingSystem.IsWindows() ? null : new CipherSuitesPolicy(suites),
            }, cts.Token);
        }
        catch (Exception ex) when (ex is System.Security.Authentication.AuthenticationException or IOException)
        {
            output.WriteLine($"{protocol} offering {string.Join(", ", suites)}: refused ({ex.Message})");
            await ssl.DisposeAsync();
            return null;
        }
        output.WriteLine($"{protocol} offering {string.Join(", ", suites)}: {ssl.SslProtocol} {ssl.NegotiatedCipherSuite}");
        await ssl.WriteAsync("CONNECT {\"verbose\":false}\r\nPING\r\n"u8.ToArray());
        var pong = new byte[6];
        using (var cts = new CancellationTokenSource(TimeSpan.FromSeconds(10)))
            await ssl.ReadExactlyAsync(pong, cts.Token);
        Assert.Equal("PONG\r\n", Encoding.ASCII.GetString(pong));
        return new TlsClient(ssl, localPort);
    }

    /// <summary>The /connz entry of the client connected from <paramref name="clientPort"/>.</summary>
    private static async Task<JsonElement> Connection(ServerProcess server, int clientPort)
    {
        using var http = new HttpClient();
        var connz = JsonDocument.Parse(await http.GetStringAsync(await GatewayTestHelpers.ConnzUri(server)));
        return Assert.Single(connz.RootElement.GetProperty("connections").EnumerateArray(), c => c.GetProperty("port").GetInt32() == clientPort).Clone();
    }

    /// <summary>The server certificate must chain to the test CA.</summary>
    private bool TrustTestCa(object sender, System.Security.Cryptography.X509Certificates.X509Certificate? certificate,
        System.Security.Cryptography.X509Certificates.X509Chain? chain, SslPolicyErrors errors)
    {
        if (certificate is null) return false;
        using var custom = new System.Security.Cryptography.X509Certificates.X509Chain();
        custom.ChainPolicy.TrustMode = System.Security.Cryptography.X509Certificates.X509ChainTrustMode.CustomRootTrust;
        custom.ChainPolicy.CustomTrustStore.Add(System.Security.Cryptography.X509Certificates.X509Certificate2.CreateFromPem(File.ReadAllText(_pki.CaFile)));
        custom.ChainPolicy.RevocationMode = System.Security.Cryptography.X509Certificates.X509RevocationMode.NoCheck;
        using var leaf = new System.Security.Cryptography.X509Certificates.X509Certificate2(certificate);
        return custom.Build(leaf);
    }

    private static Task<string> ReadLine(Socket socket) => SocketLines.ReadLineAsync(socket);

    /// <summary>Everything the server sends until it closes (must close within <paramref name="bound"/>).</summary>
    private static async Task<string> ReadToEnd(Socket socket, TimeSpan bound)
    {
        var sb = new StringBuilder();
        var buf = new byte[4096];
        using var cts = new CancellationTokenSource(bound);
        while (true)
        {
            int n;
            try
            {
                n = await socket.ReceiveAsync(buf, SocketFlags.None, cts.Token);
            }
            catch (SocketException)
            {
                break; // reset counts as closed
            }
            if (n == 0) break;
            sb.Append(Encoding.ASCII.GetString(buf, 0, n));
        }
        return sb.ToString();
    }
}
