using System.Security.Cryptography.X509Certificates;
using NatsBroker.Configuration;
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

        var e = Assert.Throws<ConfigException>(() => TerminatorConfig.Load(ConfigParser.Parse("tls { verify: true, bogus: 1, cipher_suites: [\"NOPE\"] }")));
        Assert.Contains("missing 'cert_file' in TLS configuration", e.Message, StringComparison.Ordinal);
        Assert.Contains("missing 'key_file' in TLS configuration", e.Message, StringComparison.Ordinal);
        Assert.Contains("unknown field \"bogus\"", e.Message, StringComparison.Ordinal);
        Assert.Contains("unrecognized cipher suite: \"NOPE\"", e.Message, StringComparison.Ordinal);
    }
}
