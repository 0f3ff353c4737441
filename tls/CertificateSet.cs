using System.Net.Security;
using System.Security.Cryptography.X509Certificates;

namespace NatsBroker.Tls;

/// <summary>
/// The server certificate (cert_file + key_file, PEM) and the client CA bundle (ca_file). <see cref="Reload"/>
/// (SIGHUP) reads them again and swaps them in one step; handshakes already under way keep the old pair. A reload
/// that fails keeps the current certificates and reports why.
/// </summary>
public sealed class CertificateSet
{
    /// <summary>Context null: a tls {} block without cert_file and key_file (see <see cref="HasCertificate"/>).</summary>
    private sealed record Loaded(Lazy<Task<SslStreamCertificateContext>>? Context, X509Certificate2Collection? Authorities);

    private readonly TlsOptions _options;
    private volatile Loaded _current;

    public CertificateSet(TlsOptions options)
    {
        _options = options;
        _current = Load(buildChainLater: true);
    }

    /// <summary>
    /// The server certificate with its chain. After start-up the first handshake starts building the chain (see
    /// <see cref="Load"/>) and the handshakes that arrive meanwhile wait for it; afterwards this completes synchronously.
    /// </summary>
    public ValueTask<SslStreamCertificateContext> GetServerContextAsync()
    {
        var context = (_current.Context ?? throw NoCertificate()).Value;
        return context.IsCompletedSuccessfully ? new(context.Result) : new(context);
    }

    /// <summary>
    /// False for a <c>tls {}</c> block with neither cert_file nor key_file. nats-server accepts that config (server/opts.go
    /// GenTLSConfig only refuses one of the two without the other) and listens; every handshake then fails with Go's
    /// "tls: no certificates configured", and with <c>allow_non_tls</c> plaintext clients are served as usual.
    /// </summary>
    public bool HasCertificate => _current.Context is not null;

    private static System.Security.Authentication.AuthenticationException NoCertificate() => new("tls: no certificates configured");

    /// <summary>Client certificate authorities from ca_file; null = the system's trust store.</summary>
    public X509Certificate2Collection? Authorities => _current.Authorities;

    /// <summary>
    /// The server side of a handshake as every TLS gateway does it (the terminator, wss, MQTT over TLS): this set's
    /// certificate, <c>verify</c> against ca_file (<see cref="ClientCertificateCheck"/>), <c>min_version</c>,
    /// <c>cipher_suites</c>. One place, so the gateways cannot drift apart (the websocket and MQTT gateways once
    /// checked client certificates differently). <paramref name="refused"/> hears why a client certificate was
    /// refused, in Go's words, for the "TLS handshake error" log line.
    /// </summary>
    public async ValueTask<SslServerAuthenticationOptions> ServerAuthenticationAsync(Action<ClientCertificateCheck.Refused>? refused = null) => new()
    {
        // Without a certificate the handshake fails once the client's hello arrived, as Go's does (the caller logs it).
        ServerCertificateContext = HasCertificate ? await GetServerContextAsync().ConfigureAwait(false) : null,
        ServerCertificateSelectionCallback = HasCertificate ? null : (_, _) => throw NoCertificate(),
        ClientCertificateRequired = _options.RequireClientCertificate,
        EnabledSslProtocols = _options.MinVersion == System.Security.Authentication.SslProtocols.Tls13
            ? System.Security.Authentication.SslProtocols.Tls13
            : System.Security.Authentication.SslProtocols.Tls12 | System.Security.Authentication.SslProtocols.Tls13,
        CertificateRevocationCheckMode = X509RevocationMode.NoCheck,
        // The chain SslStream builds (and the alert it sends when the callback refuses) is against ca_file, not the
        // system store: a refused certificate gets Go's alert (bad_certificate for the EKU, certificate_expired,
        // unknown_ca) rather than unknown_ca for everything.
        CertificateChainPolicy = _options.RequireClientCertificate ? ClientCertificateCheck.ChainPolicy(Authorities) : null,
        RemoteCertificateValidationCallback = ClientCertificateCheck.Callback(_options.RequireClientCertificate, refused),
        CipherSuitesPolicy = _options.CipherPolicy,
    };

    /// <summary>Builds the chain before swapping, so a reload that fails keeps the current certificates.</summary>
    public void Reload() => _current = Load(buildChainLater: false);

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

    /// <summary>
    /// Reads the PEM files now (a missing or bad file fails the start, as in nats-server). Building the chain
    /// (<see cref="SslStreamCertificateContext.Create(X509Certificate2, X509Certificate2Collection?, bool, SslCertificateTrust?)"/>)
    /// makes .NET load the whole system trust store on Linux (every file in /etc/ssl/certs): about 80 ms of CPU,
    /// a third of what a core with tls {} and its terminator spend to start. At start-up it is left to the first
    /// handshake (on the thread pool, not the socket's thread), so the port opens and the ports file appears
    /// sooner, and servers started in bursts by test harnesses do not compete for it before a client comes.
    /// </summary>
    private Loaded Load(bool buildChainLater)
    {
        X509Certificate2Collection? cas = null;
        if (_options.CaFile is { Length: > 0 } ca)
        {
            cas = [];
            cas.ImportFromPemFile(ca);
        }
        if (_options.CertFile.Length == 0 && _options.KeyFile.Length == 0) return new Loaded(null, cas);
        var cert = X509Certificate2.CreateFromPemFile(_options.CertFile, _options.KeyFile);
        // The chain after the leaf in cert_file is sent as intermediates.
        var chain = new X509Certificate2Collection();
        chain.ImportFromPemFile(_options.CertFile);
        var intermediates = new X509Certificate2Collection();
        foreach (var c in chain)
        {
            if (c.Thumbprint != cert.Thumbprint) intermediates.Add(c);
        }
        var context = buildChainLater
            ? new Lazy<Task<SslStreamCertificateContext>>(() => Task.Run(() => SslStreamCertificateContext.Create(cert, intermediates, offline: true)))
            : new Lazy<Task<SslStreamCertificateContext>>(Task.FromResult(SslStreamCertificateContext.Create(cert, intermediates, offline: true)));
        return new Loaded(context, cas);
    }
}
