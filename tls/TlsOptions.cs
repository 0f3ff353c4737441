using System.Net.Security;
using System.Security.Authentication;

namespace NatsBroker.Tls;

/// <summary>
/// A <c>tls {}</c> block of the shared nats-server config (server/opts.go parseTLS, TLSConfigOpts), read by
/// <see cref="TlsConfig.ReadTls"/>: the top-level one (the tls-terminator's) and those in <c>websocket {}</c> and
/// <c>mqtt {}</c>. Every protocol gateway serves TLS from it, so it lives in the library they all reference.
/// </summary>
public class TlsOptions
{
    public string CertFile { get; set; } = "";
    public string KeyFile { get; set; } = "";
    public string? CaFile { get; set; }
    /// <summary><c>verify</c>: clients must present a certificate signed by ca_file.</summary>
    public bool Verify { get; set; }
    /// <summary><c>verify_and_map</c>: verify, and the certificate's identity becomes the user.</summary>
    public bool VerifyAndMap { get; set; }
    /// <summary>TLS handshake timeout (nats-server <c>tls { timeout }</c>, default 2 s: server/const.go TLS_TIMEOUT).</summary>
    public TimeSpan Timeout { get; set; } = TimeSpan.FromSeconds(2);
    /// <summary><c>handshake_first</c>: TLS before INFO.</summary>
    public bool HandshakeFirst { get; set; }
    /// <summary>With handshake_first as a duration (or "auto"): wait this long for a ClientHello, else INFO first.</summary>
    public TimeSpan? HandshakeFirstFallback { get; set; }
    public SslProtocols MinVersion { get; set; } = SslProtocols.Tls12;
    /// <summary><c>cipher_suites</c> (TLS 1.2); null = nats-server's defaults (<see cref="GoCipherSuites.Defaults"/>).</summary>
    public List<TlsCipherSuite>? CipherSuites { get; set; }

    private CipherSuitesPolicy? _cipherPolicy;

    /// <summary>The handshake's policy for <see cref="CipherSuites"/> (<see cref="GoCipherSuites.Policy"/>), built on first use.</summary>
    public CipherSuitesPolicy? CipherPolicy => _cipherPolicy ??= GoCipherSuites.Policy(CipherSuites);
    /// <summary>Bind with SO_REUSEPORT so several instances share the port (ours: <c>tls { reuse_port: true }</c>).</summary>
    public bool ReusePort { get; set; }

    public bool RequireClientCertificate => Verify || VerifyAndMap;
}
