using System.Net;
using System.Security.Cryptography;
using System.Security.Cryptography.X509Certificates;

namespace NatsBroker.Bench.Scenarios.NatsNet;

/// <summary>
/// TLS material made at run time for the TLS rows: a CA, a server certificate for 127.0.0.1/localhost, and a
/// nats-server config with a <c>tls {}</c> block. Both servers get the same file: nats-server serves TLS in-process,
/// ours starts its tls-terminator gateway as a supervised child (gateways/README.md), so our rows include the hop.
/// </summary>
internal static class BenchTls
{
    private static readonly Lazy<(string Config, string CaFile)> s_files = new(Create);

    public static string ConfigPath => s_files.Value.Config;

    public static string CaFile => s_files.Value.CaFile;

    private static (string, string) Create()
    {
        var dir = BenchTemp.Dir("tls");
        using var caKey = ECDsa.Create(ECCurve.NamedCurves.nistP256);
        var caReq = new CertificateRequest("CN=NatsBroker bench CA", caKey, HashAlgorithmName.SHA256);
        caReq.CertificateExtensions.Add(new X509BasicConstraintsExtension(true, false, 0, true));
        caReq.CertificateExtensions.Add(new X509KeyUsageExtension(X509KeyUsageFlags.KeyCertSign, true));
        using var ca = caReq.CreateSelfSigned(DateTimeOffset.UtcNow.AddDays(-1), DateTimeOffset.UtcNow.AddDays(7));

        using var key = ECDsa.Create(ECCurve.NamedCurves.nistP256);
        var req = new CertificateRequest("CN=localhost", key, HashAlgorithmName.SHA256);
        var san = new SubjectAlternativeNameBuilder();
        san.AddDnsName("localhost");
        san.AddIpAddress(IPAddress.Loopback);
        req.CertificateExtensions.Add(san.Build());
        req.CertificateExtensions.Add(new X509EnhancedKeyUsageExtension([new Oid("1.3.6.1.5.5.7.3.1")], false));
        using var cert = req.Create(ca, DateTimeOffset.UtcNow.AddDays(-1), DateTimeOffset.UtcNow.AddDays(6), [1, 2, 3, 4, 5, 6, 7, 8]);

        string caFile = Path.Combine(dir, "ca.pem"), certFile = Path.Combine(dir, "server.pem"), keyFile = Path.Combine(dir, "server-key.pem");
        File.WriteAllText(caFile, ca.ExportCertificatePem());
        File.WriteAllText(certFile, cert.ExportCertificatePem());
        File.WriteAllText(keyFile, key.ExportPkcs8PrivateKeyPem());
        string config = Path.Combine(dir, "tls.conf");
        File.WriteAllText(config, $"tls {{\n  cert_file: \"{certFile}\"\n  key_file: \"{keyFile}\"\n}}\n");
        return (config, caFile);
    }
}
