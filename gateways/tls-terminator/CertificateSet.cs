using System.Security.Cryptography.X509Certificates;

namespace NatsBroker.TlsTerminator;

/// <summary>
/// The server certificate (cert_file + key_file, PEM) and the client CA bundle (ca_file). <see cref="Reload"/>
/// (SIGHUP) reads them again and swaps them in one step; handshakes already under way keep the old pair. A reload
/// that fails keeps the current certificates and reports why.
/// </summary>
public sealed class CertificateSet
{
    private sealed record Loaded(System.Net.Security.SslStreamCertificateContext Context, X509Certificate2Collection? Authorities);

    private readonly TerminatorOptions _options;
    private volatile Loaded _current;

    public CertificateSet(TerminatorOptions options)
    {
        _options = options;
        _current = Load();
    }

    public System.Net.Security.SslStreamCertificateContext ServerContext => _current.Context;
    /// <summary>Client certificate authorities from ca_file; null = the system's trust store.</summary>
    public X509Certificate2Collection? Authorities => _current.Authorities;

    public void Reload() => _current = Load();

    /// <summary>
    /// SIGHUP: reloads the files and logs the outcome; a file that no longer loads keeps the current certificates
    /// (new clients are still served) rather than failing every handshake.
    /// </summary>
    public void ReloadAndLog(Microsoft.Extensions.Logging.ILogger log)
    {
        try
        {
            Reload();
            Microsoft.Extensions.Logging.LoggerExtensions.LogInformation(log, "Reloaded TLS certificates");
        }
        catch (Exception ex) when (ex is IOException or UnauthorizedAccessException or System.Security.Cryptography.CryptographicException)
        {
            Microsoft.Extensions.Logging.LoggerExtensions.LogError(log, "Failed to reload TLS certificates, keeping the current ones: {Error}", ex.Message);
        }
    }

    private Loaded Load()
    {
        var cert = X509Certificate2.CreateFromPemFile(_options.CertFile, _options.KeyFile);
        // The chain after the leaf in cert_file is sent as intermediates.
        var chain = new X509Certificate2Collection();
        chain.ImportFromPemFile(_options.CertFile);
        var intermediates = new X509Certificate2Collection();
        foreach (var c in chain)
        {
            if (c.Thumbprint != cert.Thumbprint) intermediates.Add(c);
        }
        X509Certificate2Collection? cas = null;
        if (_options.CaFile is { Length: > 0 } ca)
        {
            cas = [];
            cas.ImportFromPemFile(ca);
        }
        var context = System.Net.Security.SslStreamCertificateContext.Create(cert, intermediates, offline: true);
        return new Loaded(context, cas);
    }
}
