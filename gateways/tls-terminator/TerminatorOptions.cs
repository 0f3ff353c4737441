using System.Net.Security;
using System.Security.Authentication;

namespace NatsBroker.TlsTerminator;

/// <summary>What the terminator serves, read from the shared nats-server config file (<see cref="TerminatorConfig"/>).</summary>
public sealed class TerminatorOptions : NatsBroker.Gateways.Link.IGatewayListenOptions
{
    public string Host { get; set; } = "0.0.0.0";
    /// <summary>Client port (nats-server's top-level port); -1 = random.</summary>
    public int Port { get; set; } = 4222;
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
    /// <summary>
    /// Top-level <c>allow_non_tls</c>: TLS offered, not required. INFO says <c>tls_available</c> instead of
    /// <c>tls_required</c>, and the client's first byte after it decides: a TLS handshake record, or plain NATS.
    /// </summary>
    public bool AllowNonTls { get; set; }
    /// <summary>With handshake_first as a duration (or "auto"): wait this long for a ClientHello, else INFO first.</summary>
    public TimeSpan? HandshakeFirstFallback { get; set; }
    public SslProtocols MinVersion { get; set; } = SslProtocols.Tls12;
    /// <summary><c>cipher_suites</c> (TLS 1.2); null = nats-server's defaults (<see cref="GoCipherSuites.Defaults"/>).</summary>
    public List<TlsCipherSuite>? CipherSuites { get; set; }

    private CipherSuitesPolicy? _cipherPolicy;

    /// <summary>The handshake's policy for <see cref="CipherSuites"/> (<see cref="GoCipherSuites.Policy"/>), built on first use.</summary>
    public CipherSuitesPolicy? CipherPolicy => _cipherPolicy ??= GoCipherSuites.Policy(CipherSuites);
    /// <summary>Longest CONNECT line looked at (max_control_line); longer ones are passed on for the core to refuse.</summary>
    public int MaxControlLine { get; set; } = 4096;
    /// <summary>Bind with SO_REUSEPORT so several instances share the port (ours: <c>tls { reuse_port: true }</c>).</summary>
    public bool ReusePort { get; set; }
    /// <summary>How long a stop waits for clients to drain.</summary>
    public TimeSpan DrainTimeout { get; set; } = TimeSpan.FromSeconds(10);

    /// <summary>
    /// <c>--relay-only</c> on the command line: serve plain NATS (no TLS) and only relay, to measure the gateway hop
    /// against a direct connection (bench/README.md). Not for production: the client's traffic is not encrypted.
    /// </summary>
    public bool RelayOnly { get; set; }

    public bool RequireClientCertificate => Verify || VerifyAndMap;
}
