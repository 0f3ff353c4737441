using System.Net;
using System.Security.Cryptography;
using System.Security.Cryptography.X509Certificates;

namespace NatsBroker.Tests.Gateways;

/// <summary>
/// A throw-away PKI made at test time (no private key is ever committed): a CA, a server certificate for
/// localhost/127.0.0.1, and client certificates. PEM files in a temp directory, deleted on dispose.
/// </summary>
public sealed class TestPki : IDisposable
{
    private readonly X509Certificate2 _ca;
    private readonly RSA _caKey;

    public TestPki()
    {
        Dir = Path.Combine(Path.GetTempPath(), "natsbroker-pki-" + Guid.NewGuid().ToString("N")[..12]);
        Directory.CreateDirectory(Dir);
        _caKey = RSA.Create(2048);
        var req = new CertificateRequest("CN=NatsBroker Test CA", _caKey, HashAlgorithmName.SHA256, RSASignaturePadding.Pkcs1);
        req.CertificateExtensions.Add(new X509BasicConstraintsExtension(true, false, 0, true));
        req.CertificateExtensions.Add(new X509KeyUsageExtension(X509KeyUsageFlags.KeyCertSign | X509KeyUsageFlags.CrlSign, true));
        _ca = req.CreateSelfSigned(DateTimeOffset.UtcNow.AddDays(-1), DateTimeOffset.UtcNow.AddDays(2));
        CaFile = Path.Combine(Dir, "ca.pem");
        File.WriteAllText(CaFile, _ca.ExportCertificatePem());
        (ServerCert, ServerKey) = Issue("server", "CN=localhost", server: true, dns: ["localhost"], ip: IPAddress.Loopback);
    }

    public string Dir { get; }
    public string CaFile { get; }
    public string ServerCert { get; }
    public string ServerKey { get; }

    /// <summary>Issues a certificate signed by the CA; returns the PEM certificate and key paths.</summary>
    public (string Cert, string Key) Issue(string name, string subject, bool server = false, string[]? dns = null,
        IPAddress? ip = null, string? email = null, string? uri = null, bool serverAndClient = false)
    {
        using var key = RSA.Create(2048);
        var req = new CertificateRequest(subject, key, HashAlgorithmName.SHA256, RSASignaturePadding.Pkcs1);
        req.CertificateExtensions.Add(new X509BasicConstraintsExtension(false, false, 0, false));
        // A route certificate serves and dials (serverAuth and clientAuth), as nats-server uses one for both.
        req.CertificateExtensions.Add(new X509EnhancedKeyUsageExtension(serverAndClient
            ? new OidCollection { new Oid("1.3.6.1.5.5.7.3.1"), new Oid("1.3.6.1.5.5.7.3.2") }
            : [server ? new Oid("1.3.6.1.5.5.7.3.1") : new Oid("1.3.6.1.5.5.7.3.2")], false));
        var san = new SubjectAlternativeNameBuilder();
        bool any = false;
        foreach (var d in dns ?? []) { san.AddDnsName(d); any = true; }
        if (ip is not null) { san.AddIpAddress(ip); any = true; }
        if (email is not null) { san.AddEmailAddress(email); any = true; }
        if (uri is not null) { san.AddUri(new Uri(uri)); any = true; }
        if (any) req.CertificateExtensions.Add(san.Build());
        var serial = RandomNumberGenerator.GetBytes(12);
        serial[0] &= 0x7F;
        using var cert = req.Create(_ca, DateTimeOffset.UtcNow.AddDays(-1), DateTimeOffset.UtcNow.AddDays(1), serial);
        var certPath = Path.Combine(Dir, name + ".pem");
        var keyPath = Path.Combine(Dir, name + "-key.pem");
        File.WriteAllText(certPath, cert.ExportCertificatePem());
        File.WriteAllText(keyPath, key.ExportPkcs8PrivateKeyPem());
        return (certPath, keyPath);
    }

    public void Dispose()
    {
        _ca.Dispose();
        _caKey.Dispose();
        try { Directory.Delete(Dir, recursive: true); }
        catch (IOException) { }
    }
}
