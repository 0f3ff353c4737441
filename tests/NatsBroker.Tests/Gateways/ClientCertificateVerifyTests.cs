using System.Net;
using System.Net.Security;
using System.Net.Sockets;
using System.Security.Authentication;
using System.Security.Cryptography;
using System.Security.Cryptography.X509Certificates;
using System.Text;
using System.Text.Json;
using System.Text.RegularExpressions;
using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Gateways;

/// <summary>
/// <c>tls { verify: true }</c> / <c>verify_and_map</c>: which client certificates are accepted, against nats-server
/// 2.9.10 (Debian) and 2.14.5 with the same config and the same certificates, made here. What Go does
/// (crypto/tls handshake_server.go processCertsFromClient, crypto/x509 verify.go): a chain to ca_file, every
/// certificate within its dates, the clientAuth EKU through the whole chain (checkChainForKeyUsage: no EKU extension
/// or anyExtendedKeyUsage allows it). A refusal fails the handshake: the client's connection ends without a byte of
/// NATS after INFO (nats-server sends a TLS alert first, ours closes: gateways/README.md), the server logs
/// "TLS handshake error" with Go's reason, and the client never reaches the core.
/// </summary>
[Collection("Gateways")]
public sealed class ClientCertificateVerifyTests(ITestOutputHelper output) : IDisposable
{
    private const string ServerAuth = "1.3.6.1.5.5.7.3.1";
    private const string ClientAuth = "1.3.6.1.5.5.7.3.2";
    private const string AnyEku = "2.5.29.37.0";

    private readonly Pki _pki = new();

    public void Dispose() => _pki.Dispose();

    /// <summary>ours; "go": Debian's nats-server (2.9.10); "go-2.14.5": ../shared/oracle/nats-server-2.14.5.</summary>
    public static TheoryData<string> Targets => new() { "ours", "go", "go-2.14.5" };

    private sealed record Case(string Name, X509Certificate2? Cert, X509Certificate2[] Chain, bool Accepted, string? Reason);

    private List<Case> Cases()
    {
        var now = DateTimeOffset.UtcNow;
        var (good, goodKey) = (_pki.Ca, _pki.CaKey);
        var (ok1, ok2) = (now.AddDays(-1), now.AddDays(1));
        const string incompatible = "x509: certificate specifies an incompatible key usage";
        const string dates = "x509: certificate has expired or is not yet valid";
        const string unknown = "x509: certificate signed by unknown authority";
        var (plainIntermediate, plainKey) = _pki.IntermediateCa("CN=Plain Intermediate", eku: null);
        var (serverIntermediate, serverKey) = _pki.IntermediateCa("CN=ServerAuth Intermediate", eku: [ServerAuth]);
        return
        [
            new("EKU clientAuth", _pki.Leaf("CN=alice", good, goodKey, [ClientAuth], ok1, ok2), [], true, null),
            new("no EKU extension", _pki.Leaf("CN=noeku", good, goodKey, null, ok1, ok2), [], true, null),
            new("EKU anyExtendedKeyUsage", _pki.Leaf("CN=any", good, goodKey, [AnyEku], ok1, ok2), [], true, null),
            new("EKU serverAuth and clientAuth", _pki.Leaf("CN=both", good, goodKey, [ServerAuth, ClientAuth], ok1, ok2), [], true, null),
            new("EKU serverAuth only", _pki.Leaf("CN=server-only", good, goodKey, [ServerAuth], ok1, ok2), [], false, incompatible),
            new("expired", _pki.Leaf("CN=expired", good, goodKey, [ClientAuth], now.AddDays(-5), now.AddDays(-1)), [], false, dates),
            new("not yet valid", _pki.Leaf("CN=future", good, goodKey, [ClientAuth], now.AddDays(1), now.AddDays(5)), [], false, dates),
            new("another CA", _pki.Leaf("CN=mallory", _pki.OtherCa, _pki.OtherCaKey, [ClientAuth], ok1, ok2), [], false, unknown),
            new("intermediate without EKU", _pki.Leaf("CN=via-plain", plainIntermediate, plainKey, [ClientAuth], ok1, ok2), [plainIntermediate], true, null),
            new("intermediate serverAuth only", _pki.Leaf("CN=via-server", serverIntermediate, serverKey, [ClientAuth], ok1, ok2), [serverIntermediate], false, incompatible),
            new("no certificate", null, [], false, null),
        ];
    }

    private string Config(string tlsExtra, string rest = "") =>
        $$"""
        tls {
          cert_file: "{{_pki.ServerCert}}"
          key_file: "{{_pki.ServerKey}}"
          ca_file: "{{_pki.CaFile}}"
          timeout: 2
          {{tlsExtra}}
        }
        {{rest}}
        """;

    private Task<ServerProcess> Start(string target, string config)
    {
        var options = new ServerStartOptions { Config = config, Port = TestPorts.Next(), Monitoring = true };
        switch (target)
        {
            case "ours":
                Prerequisites.RequireServer(ServerKind.Ours, output);
                return ServerProcess.StartAsync(ServerKind.Ours, options, output);
            case "go":
                Prerequisites.RequireGoServer(output);
                return ServerProcess.StartAsync(ServerKind.Go, options, output);
            default:
                return ServerProcess.StartAsync(ServerKind.Go, options with { GoBinary = Prerequisites.RequireOracle214(output) }, output);
        }
    }

    [SkippableTheory]
    [MemberData(nameof(Targets))]
    public async Task Verify_accepts_and_refuses_client_certificates_as_nats_server_does(string target)
    {
        var cases = Cases();
        await using var server = await Start(target, Config("verify: true"));
        var failures = new List<string>();
        foreach (var c in cases)
        {
            var (accepted, detail) = await Probe(server.Port, c.Cert, c.Chain);
            output.WriteLine($"{target}: {c.Name}: {(accepted ? "accepted" : "refused")} {detail}");
            if (accepted != c.Accepted) failures.Add($"{c.Name}: expected {(c.Accepted ? "accepted" : "refused")}, got {(accepted ? "accepted" : "refused")} {detail}");
            // A refused client gets not one byte of NATS after INFO (no PONG, no -ERR): it never reached the core.
            if (!accepted && detail.StartsWith("closed after ", StringComparison.Ordinal) && detail.Length > "closed after ".Length)
                failures.Add($"{c.Name}: the refused client received {detail}");
        }

        // The server logs each refusal as "TLS handshake error: ..." with Go's x509 reason.
        await WaitForLog(server, cases.Where(c => c.Reason is not null).Select(c => c.Reason!));
        foreach (var c in cases.Where(c => c.Reason is not null))
        {
            if (!Regex.IsMatch(server.Output, "TLS handshake error: tls: failed to verify (client )?certificate: " + Regex.Escape(c.Reason!)))
                failures.Add($"{c.Name}: the log has no \"TLS handshake error: ... {c.Reason}\"");
        }

        // Observation only: nats-server lists a refused client in /connz?state=closed as "TLS Handshake Failure";
        // our core sees the terminator's link to it close before any CONNECT ("Client Closed").
        output.WriteLine($"{target}: /connz (open + closed): {string.Join(", ", await ConnectionsEver(server))}");
        Assert.True(failures.Count == 0, string.Join("\n", failures));
    }

    [SkippableTheory]
    [MemberData(nameof(Targets))]
    public async Task Verify_and_map_refuses_a_serverAuth_only_certificate_even_when_it_names_a_user(string target)
    {
        const string users = """authorization { users = [ { user: "CN=alice" } ] }""";
        var now = DateTimeOffset.UtcNow;
        var good = _pki.Leaf("CN=alice", _pki.Ca, _pki.CaKey, [ClientAuth], now.AddDays(-1), now.AddDays(1));
        var serverOnly = _pki.Leaf("CN=alice", _pki.Ca, _pki.CaKey, [ServerAuth], now.AddDays(-1), now.AddDays(1));
        var expired = _pki.Leaf("CN=alice", _pki.Ca, _pki.CaKey, [ClientAuth], now.AddDays(-5), now.AddDays(-1));
        await using var server = await Start(target, Config("verify_and_map: true", users));

        var (accepted, detail) = await Probe(server.Port, good, []);
        Assert.True(accepted, "CN=alice with clientAuth maps to the user: " + detail);
        (accepted, detail) = await Probe(server.Port, serverOnly, []);
        output.WriteLine($"{target}: serverAuth only: {detail}");
        Assert.False(accepted, "a serverAuth-only certificate must be refused before mapping: " + detail);
        (accepted, detail) = await Probe(server.Port, expired, []);
        output.WriteLine($"{target}: expired: {detail}");
        Assert.False(accepted, "an expired certificate must be refused before mapping: " + detail);
        await WaitForLog(server, ["x509: certificate specifies an incompatible key usage", "x509: certificate has expired or is not yet valid"]);
        Assert.Contains("x509: certificate specifies an incompatible key usage", server.Output, StringComparison.Ordinal);
        Assert.Contains("x509: certificate has expired or is not yet valid", server.Output, StringComparison.Ordinal);
    }

    /// <summary>
    /// wss with <c>verify</c> (the websocket gateway shares the terminator's check): a serverAuth-only certificate
    /// gets no WebSocket upgrade, a clientAuth one does; nats-server's websocket listener (server/websocket.go, Go's
    /// http server over the same tls.Config) refuses it in its TLS handshake too.
    /// </summary>
    [SkippableTheory]
    [MemberData(nameof(Targets))]
    public async Task Wss_with_verify_refuses_a_serverAuth_only_certificate(string target)
    {
        var now = DateTimeOffset.UtcNow;
        var good = _pki.Leaf("CN=ws-alice", _pki.Ca, _pki.CaKey, [ClientAuth], now.AddDays(-1), now.AddDays(1));
        var serverOnly = _pki.Leaf("CN=ws-server-only", _pki.Ca, _pki.CaKey, [ServerAuth], now.AddDays(-1), now.AddDays(1));
        int wsPort = TestPorts.Next();
        await using var server = await Start(target, $$"""
            websocket {
              port: {{wsPort}}
              tls {
                cert_file: "{{_pki.ServerCert}}"
                key_file: "{{_pki.ServerKey}}"
                ca_file: "{{_pki.CaFile}}"
                verify: true
              }
            }
            """);
        await GatewayTestHelpers.WaitListeningAsync(wsPort);

        var (accepted, detail) = await WssUpgrade(wsPort, good);
        Assert.True(accepted, "clientAuth: " + detail);
        (accepted, detail) = await WssUpgrade(wsPort, serverOnly);
        output.WriteLine($"{target}: wss serverAuth only: {detail}");
        Assert.False(accepted, "serverAuth only must be refused: " + detail);
        // nats-server: Go's http server's "TLS handshake error from ip:port: ...", under the "websocket: " prefix.
        await WaitForLog(server, ["x509: certificate specifies an incompatible key usage"]);
        Assert.Matches(@"websocket: TLS handshake error from 127\.0\.0\.1:\d+: tls: failed to verify (client )?certificate: x509: certificate specifies an incompatible key usage", server.Output);
    }

    /// <summary>TLS, then the WebSocket upgrade request: accepted = "HTTP/1.1 101".</summary>
    private async Task<(bool Accepted, string Detail)> WssUpgrade(int port, X509Certificate2 cert)
    {
        using var socket = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
        await socket.ConnectAsync(IPAddress.Loopback, port);
        await using var ssl = new SslStream(new NetworkStream(socket, ownsSocket: false), leaveInnerStreamOpen: false);
        using var cts = new CancellationTokenSource(TimeSpan.FromSeconds(10));
        try
        {
            await ssl.AuthenticateAsClientAsync(new SslClientAuthenticationOptions
            {
                TargetHost = "localhost",
                RemoteCertificateValidationCallback = TrustTestCa,
                ClientCertificateContext = SslStreamCertificateContext.Create(cert, [], offline: true),
            }, cts.Token);
            await ssl.WriteAsync(Encoding.ASCII.GetBytes("GET / HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"), cts.Token);
            var buf = new byte[4096];
            int n = await ssl.ReadAsync(buf, cts.Token);
            var text = Encoding.ASCII.GetString(buf, 0, n);
            return (text.StartsWith("HTTP/1.1 101", StringComparison.Ordinal), n == 0 ? "closed" : Escape(text.Split("\r\n")[0]));
        }
        catch (Exception ex) when (ex is AuthenticationException or IOException)
        {
            return (false, ex.GetType().Name + ": " + ex.Message + (ex.InnerException is { } inner ? " | " + inner.Message : ""));
        }
    }

    /// <summary>
    /// INFO-first TLS as a NATS client does it, then CONNECT + PING. Accepted = PONG came back. Under TLS 1.3 the
    /// client's handshake completes before the server has checked its certificate, so a refusal shows on the first
    /// read or write (nats-server: its alert, or a reset; ours: the close).
    /// </summary>
    private async Task<(bool Accepted, string Detail)> Probe(int port, X509Certificate2? cert, X509Certificate2[] chain)
    {
        using var socket = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
        await socket.ConnectAsync(IPAddress.Loopback, port);
        var info = await ReadLine(socket);
        Assert.StartsWith("INFO ", info, StringComparison.Ordinal);
        await using var ssl = new SslStream(new NetworkStream(socket, ownsSocket: false), leaveInnerStreamOpen: false);
        var options = new SslClientAuthenticationOptions
        {
            TargetHost = "localhost",
            RemoteCertificateValidationCallback = TrustTestCa,
        };
        if (cert is not null) options.ClientCertificateContext = SslStreamCertificateContext.Create(cert, [.. chain], offline: true);
        using var cts = new CancellationTokenSource(TimeSpan.FromSeconds(10));
        try
        {
            await ssl.AuthenticateAsClientAsync(options, cts.Token);
            await ssl.WriteAsync("CONNECT {\"verbose\":false,\"pedantic\":false}\r\nPING\r\n"u8.ToArray(), cts.Token);
            var got = new StringBuilder();
            var buf = new byte[1024];
            while (!got.ToString().Contains("PONG\r\n", StringComparison.Ordinal))
            {
                int n = await ssl.ReadAsync(buf, cts.Token);
                if (n == 0) return (false, $"closed after {Escape(got.ToString())}");
                got.Append(Encoding.ASCII.GetString(buf, 0, n));
            }
            return (true, Escape(got.ToString()));
        }
        catch (Exception ex) when (ex is AuthenticationException or IOException)
        {
            var sb = new StringBuilder();
            for (Exception? e = ex; e is not null; e = e.InnerException) sb.Append(e.GetType().Name).Append(": ").Append(e.Message).Append(" | ");
            return (false, sb.ToString());
        }
    }

    /// <summary>The server's certificate must chain to the test CA.</summary>
    private bool TrustTestCa(object sender, X509Certificate? certificate, X509Chain? chain, SslPolicyErrors errors)
    {
        if (certificate is null) return false;
        using var custom = new X509Chain();
        custom.ChainPolicy.TrustMode = X509ChainTrustMode.CustomRootTrust;
        custom.ChainPolicy.CustomTrustStore.Add(_pki.Ca);
        custom.ChainPolicy.RevocationMode = X509RevocationMode.NoCheck;
        using var leaf = new X509Certificate2(certificate);
        return custom.Build(leaf);
    }

    private static string Escape(string s) => s.Replace("\r", "\\r", StringComparison.Ordinal).Replace("\n", "\\n", StringComparison.Ordinal);

    private static async Task WaitForLog(ServerProcess server, IEnumerable<string> needles)
    {
        var all = needles.ToList();
        for (int i = 0; i < 100 && !all.All(n => server.Output.Contains(n, StringComparison.Ordinal)); i++) await Task.Delay(50);
    }

    /// <summary>Every client connection the server's /connz knows of, open and closed, by TLS subject (or "-").</summary>
    private static async Task<List<string>> ConnectionsEver(ServerProcess server)
    {
        using var http = new HttpClient();
        var result = new List<string>();
        var connz = await GatewayTestHelpers.ConnzUri(server);
        foreach (var state in new[] { "open", "closed" })
        {
            using var doc = JsonDocument.Parse(await http.GetStringAsync(new Uri(connz + "?state=" + state)));
            if (doc.RootElement.TryGetProperty("connections", out var conns) && conns.ValueKind == JsonValueKind.Array)
            {
                foreach (var c in conns.EnumerateArray())
                    result.Add($"{state}:{(c.TryGetProperty("tls_peer_cert_subject", out var s) ? s.GetString() : "-")}:{(c.TryGetProperty("reason", out var r) ? r.GetString() : "-")}:in_msgs={(c.TryGetProperty("in_msgs", out var m) ? m.GetInt64() : -1)}");
            }
        }
        return result;
    }

    private static Task<string> ReadLine(Socket socket) => SocketLines.ReadLineAsync(socket);

    /// <summary>
    /// A throw-away PKI (ECDSA P-256, nothing committed): the CA in ca_file, another CA nobody trusts, intermediates
    /// and leaves with the EKU and dates each case needs. The CAs are valid for ±10 days (an issued certificate's dates
    /// must lie within its issuer's).
    /// </summary>
    private sealed class Pki : IDisposable
    {
        private readonly List<IDisposable> _owned = [];

        public Pki()
        {
            Dir = Path.Combine(Path.GetTempPath(), "natsbroker-eku-" + Guid.NewGuid().ToString("N")[..12]);
            Directory.CreateDirectory(Dir);
            (Ca, CaKey) = SelfSignedCa("CN=NatsBroker EKU Test CA");
            (OtherCa, OtherCaKey) = SelfSignedCa("CN=Untrusted CA");
            CaFile = Path.Combine(Dir, "ca.pem");
            File.WriteAllText(CaFile, Ca.ExportCertificatePem());
            using var serverKey = ECDsa.Create(ECCurve.NamedCurves.nistP256);
            var req = new CertificateRequest("CN=localhost", serverKey, HashAlgorithmName.SHA256);
            req.CertificateExtensions.Add(new X509BasicConstraintsExtension(false, false, 0, true));
            req.CertificateExtensions.Add(new X509EnhancedKeyUsageExtension([new Oid(ServerAuth)], false));
            var san = new SubjectAlternativeNameBuilder();
            san.AddDnsName("localhost");
            san.AddIpAddress(IPAddress.Loopback);
            req.CertificateExtensions.Add(san.Build());
            req.CertificateExtensions.Add(X509AuthorityKeyIdentifierExtension.CreateFromCertificate(Ca, true, false));
            using var server = req.Create(Ca, DateTimeOffset.UtcNow.AddDays(-1), DateTimeOffset.UtcNow.AddDays(1), Serial());
            ServerCert = Path.Combine(Dir, "server.pem");
            ServerKey = Path.Combine(Dir, "server-key.pem");
            File.WriteAllText(ServerCert, server.ExportCertificatePem());
            File.WriteAllText(ServerKey, serverKey.ExportPkcs8PrivateKeyPem());
        }

        public string Dir { get; }
        public string CaFile { get; }
        public string ServerCert { get; }
        public string ServerKey { get; }
        public X509Certificate2 Ca { get; }
        public ECDsa CaKey { get; }
        public X509Certificate2 OtherCa { get; }
        public ECDsa OtherCaKey { get; }

        private (X509Certificate2, ECDsa) SelfSignedCa(string subject)
        {
            var key = Own(ECDsa.Create(ECCurve.NamedCurves.nistP256));
            var req = new CertificateRequest(subject, key, HashAlgorithmName.SHA256);
            req.CertificateExtensions.Add(new X509BasicConstraintsExtension(true, false, 0, true));
            req.CertificateExtensions.Add(new X509KeyUsageExtension(X509KeyUsageFlags.KeyCertSign | X509KeyUsageFlags.CrlSign, true));
            req.CertificateExtensions.Add(new X509SubjectKeyIdentifierExtension(req.PublicKey, false));
            var now = DateTimeOffset.UtcNow;
            return (Own(req.CreateSelfSigned(now.AddDays(-10), now.AddDays(10))), key);
        }

        /// <summary>A CA under <see cref="Ca"/>; <paramref name="eku"/> null = no EKU extension.</summary>
        public (X509Certificate2 Cert, ECDsa Key) IntermediateCa(string subject, string[]? eku)
        {
            var key = Own(ECDsa.Create(ECCurve.NamedCurves.nistP256));
            var req = new CertificateRequest(subject, key, HashAlgorithmName.SHA256);
            req.CertificateExtensions.Add(new X509BasicConstraintsExtension(true, false, 0, true));
            req.CertificateExtensions.Add(new X509KeyUsageExtension(X509KeyUsageFlags.KeyCertSign | X509KeyUsageFlags.CrlSign, true));
            req.CertificateExtensions.Add(new X509SubjectKeyIdentifierExtension(req.PublicKey, false));
            req.CertificateExtensions.Add(X509AuthorityKeyIdentifierExtension.CreateFromCertificate(Ca, true, false));
            if (eku is not null) req.CertificateExtensions.Add(new X509EnhancedKeyUsageExtension(Oids(eku), false));
            var now = DateTimeOffset.UtcNow;
            return (Own(req.Create(Ca, now.AddDays(-9), now.AddDays(9), Serial())), key);
        }

        /// <summary>A client certificate with its private key; <paramref name="eku"/> null = no EKU extension.</summary>
        public X509Certificate2 Leaf(string subject, X509Certificate2 issuer, ECDsa issuerKey, string[]? eku, DateTimeOffset notBefore, DateTimeOffset notAfter)
        {
            var key = Own(ECDsa.Create(ECCurve.NamedCurves.nistP256));
            var req = new CertificateRequest(subject, key, HashAlgorithmName.SHA256);
            req.CertificateExtensions.Add(new X509BasicConstraintsExtension(false, false, 0, true));
            req.CertificateExtensions.Add(new X509KeyUsageExtension(X509KeyUsageFlags.DigitalSignature, true));
            req.CertificateExtensions.Add(X509AuthorityKeyIdentifierExtension.CreateFromCertificate(issuer, true, false));
            if (eku is not null) req.CertificateExtensions.Add(new X509EnhancedKeyUsageExtension(Oids(eku), false));
            var generator = X509SignatureGenerator.CreateForECDsa(issuerKey);
            using var cert = req.Create(issuer.SubjectName, generator, notBefore, notAfter, Serial());
            return Own(cert.CopyWithPrivateKey(key));
        }

        private static OidCollection Oids(string[] values)
        {
            var oids = new OidCollection();
            foreach (var v in values) oids.Add(new Oid(v));
            return oids;
        }

        private static byte[] Serial()
        {
            var serial = RandomNumberGenerator.GetBytes(12);
            serial[0] &= 0x7F;
            return serial;
        }

        private T Own<T>(T item) where T : IDisposable
        {
            _owned.Add(item);
            return item;
        }

        public void Dispose()
        {
            foreach (var item in _owned) item.Dispose();
            try { Directory.Delete(Dir, recursive: true); }
            catch (IOException) { }
        }
    }
}
