using System.Net.Security;
using System.Security.Cryptography.X509Certificates;
using NatsBroker.Configuration;
using NatsBroker.Tls;
using NatsBroker.TlsTerminator;

namespace NatsBroker.Tests.Gateways;

public sealed class TerminatorUnitTests
{
    [Fact]
    public void Map_candidates_follow_nats_servers_order_email_dns_uri_subject()
    {
        using var pki = new TestPki();
        var (certPath, _) = pki.Issue("multi", "CN=carol,OU=dev,O=Acme", dns: ["carol.example.com"], email: "carol@example.com", uri: "spiffe://acme/carol");
        using var cert = X509Certificate2.CreateFromPem(File.ReadAllText(certPath));
        var ids = CertificateIdentity.MapCandidates(cert);
        Assert.Equal(["carol@example.com", "carol.example.com", "spiffe://acme/carol", "CN=carol,OU=dev,O=Acme"], ids);
    }

    [Fact]
    public void Subject_is_printed_as_Go_prints_it()
    {
        var name = new X500DistinguishedName("CN=\"a,b\", O=Acme, C=US");
        Assert.Equal("CN=a\\,b,O=Acme,C=US", CertificateIdentity.GoSubject(name));
    }

    [Fact]
    public void Tls_block_options_and_errors()
    {
        var o = TerminatorConfig.Load(ConfigParser.Parse("""
            listen: "127.0.0.1:4443"
            tls { cert_file: "c.pem", key_file: "k.pem", verify_and_map: true, timeout: 0.25, handshake_first: "300ms",
                  min_version: "1.3", cipher_suites: ["TLS_AES_128_GCM_SHA256", "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305"] }
            authorization { user: a, password: b }
            """));
        Assert.Equal(("127.0.0.1", 4443), (o.Host, o.Port));
        Assert.True(o.VerifyAndMap && o.RequireClientCertificate);
        Assert.Equal(TimeSpan.FromMilliseconds(250), o.Timeout);
        Assert.True(o.HandshakeFirst);
        Assert.Equal(TimeSpan.FromMilliseconds(300), o.HandshakeFirstFallback);
        Assert.Equal(System.Security.Authentication.SslProtocols.Tls13, o.MinVersion);
        Assert.Equal(2, o.CipherSuites!.Count);

        var e = Assert.Throws<ConfigException>(() => TerminatorConfig.Load(ConfigParser.Parse("tls { verify: true, cert_file: c.pem, bogus: 1, cipher_suites: [\"NOPE\"] }")));
        Assert.Contains("missing 'key_file' in TLS configuration", e.Message, StringComparison.Ordinal);
        Assert.DoesNotContain("missing 'cert_file'", e.Message, StringComparison.Ordinal);
        Assert.Contains("unknown field \"bogus\"", e.Message, StringComparison.Ordinal);
        Assert.Contains("unrecognized cipher NOPE", e.Message, StringComparison.Ordinal);
        e = Assert.Throws<ConfigException>(() => TerminatorConfig.Load(ConfigParser.Parse("tls { key_file: k.pem }")));
        Assert.Contains("missing 'cert_file' in TLS configuration", e.Message, StringComparison.Ordinal);
        // server/opts.go GenTLSConfig: neither file is a valid block (nats-server listens; every handshake fails).
        Assert.Equal("", TerminatorConfig.Load(ConfigParser.Parse("tls {}")).CertFile);
    }

    /// <summary>
    /// server/opts.go parseTLS(isClientCtx: true), as for every tls {} the gateways read (top level, websocket,
    /// mqtt): verify_cert_and_check_known_urls is for routes, gateways and leaf nodes; true is an error, false is
    /// accepted and does nothing, anything else is not a boolean.
    /// </summary>
    [Fact]
    public void Verify_cert_and_check_known_urls_is_refused_in_a_client_tls_block_only_when_true()
    {
        var o = TerminatorConfig.Load(ConfigParser.Parse("tls { cert_file: c.pem, key_file: k.pem, verify: true, verify_cert_and_check_known_urls: false }"));
        Assert.True(o.RequireClientCertificate);
        var e = Assert.Throws<ConfigException>(() => TerminatorConfig.Load(ConfigParser.Parse(
            "tls { cert_file: c.pem, key_file: k.pem, verify_cert_and_check_known_urls: true }")));
        Assert.Contains("verify_cert_and_check_known_urls not supported in this context", e.Message, StringComparison.Ordinal);
        e = Assert.Throws<ConfigException>(() => TerminatorConfig.Load(ConfigParser.Parse(
            "tls { cert_file: c.pem, key_file: k.pem, verify_cert_and_check_known_urls: \"yes\" }")));
        Assert.Contains("expected a boolean", e.Message, StringComparison.Ordinal);
    }

    /// <summary>
    /// nats-server 2.9.10's parseTLS (checked with <c>nats-server -t</c>): Go's names only, so the IANA spelling
    /// of a ChaCha20 suite and suites outside Go's list are refused; an empty list is an error.
    /// </summary>
    [Theory]
    [InlineData("\"TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256\"", "unrecognized cipher TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256")]
    [InlineData("\"TLS_DHE_RSA_WITH_AES_128_GCM_SHA256\"", "unrecognized cipher TLS_DHE_RSA_WITH_AES_128_GCM_SHA256")]
    [InlineData("", "error parsing tls config, 'cipher_suites' cannot be empty")]
    public void Cipher_suites_takes_nats_servers_names_only(string list, string error)
    {
        var e = Assert.Throws<ConfigException>(() => TerminatorConfig.Load(ConfigParser.Parse(
            $"tls {{ cert_file: c.pem, key_file: k.pem, cipher_suites: [{list}] }}")));
        Assert.Contains(error, e.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void Connz_names_suites_as_nats_server_does()
    {
        Assert.Equal("TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305", GoCipherSuites.Name(TlsCipherSuite.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256));
        Assert.Equal("TLS_AES_128_GCM_SHA256", GoCipherSuites.Name(TlsCipherSuite.TLS_AES_128_GCM_SHA256));
        Assert.Equal("Unknown [0x9e]", GoCipherSuites.Name(TlsCipherSuite.TLS_DHE_RSA_WITH_AES_128_GCM_SHA256));
    }

    /// <summary>
    /// The policy handed to OpenSSL: the configured TLS 1.2 suites (nats-server's defaults when none are) plus
    /// every TLS 1.3 suite, which Go's crypto/tls never restricts.
    /// </summary>
    [SkippableFact]
    [System.Runtime.Versioning.UnsupportedOSPlatform("windows")]
    public void Policy_is_the_configured_tls12_suites_and_every_tls13_suite()
    {
        Skip.If(OperatingSystem.IsWindows(), "SslStream takes no cipher policy on Windows");
        TlsCipherSuite[] tls13 = [TlsCipherSuite.TLS_AES_128_GCM_SHA256, TlsCipherSuite.TLS_AES_256_GCM_SHA384, TlsCipherSuite.TLS_CHACHA20_POLY1305_SHA256];
        var one = GoCipherSuites.Policy([TlsCipherSuite.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384, TlsCipherSuite.TLS_AES_128_GCM_SHA256])!;
        Assert.Equal([TlsCipherSuite.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384, .. tls13], one.AllowedCipherSuites);
        var defaults = GoCipherSuites.Policy(null)!;
        Assert.Equal([.. GoCipherSuites.Defaults, .. tls13], defaults.AllowedCipherSuites);
    }
}
