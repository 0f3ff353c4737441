using System.Globalization;
using System.Net.Security;

namespace NatsBroker.Tls;

/// <summary>
/// <c>tls { cipher_suites }</c> with nats-server's meaning (server/ciphersuites.go, opts.go parseTLS and GenTLSConfig,
/// checked against nats-server 2.9.10): the names it accepts, its defaults when the option is absent, its names in
/// /connz, and the policy that gives a client what Go's crypto/tls would give it.
/// </summary>
public static class GoCipherSuites
{
    /// <summary>nats-server's cipherMap: the names <c>cipher_suites</c> accepts, Go's spelling (no <c>_SHA256</c> after CHACHA20_POLY1305).</summary>
    private static readonly Dictionary<string, TlsCipherSuite> ByName = new(StringComparer.Ordinal)
    {
        ["TLS_RSA_WITH_RC4_128_SHA"] = TlsCipherSuite.TLS_RSA_WITH_RC4_128_SHA,
        ["TLS_RSA_WITH_3DES_EDE_CBC_SHA"] = TlsCipherSuite.TLS_RSA_WITH_3DES_EDE_CBC_SHA,
        ["TLS_RSA_WITH_AES_128_CBC_SHA"] = TlsCipherSuite.TLS_RSA_WITH_AES_128_CBC_SHA,
        ["TLS_RSA_WITH_AES_128_CBC_SHA256"] = TlsCipherSuite.TLS_RSA_WITH_AES_128_CBC_SHA256,
        ["TLS_RSA_WITH_AES_256_CBC_SHA"] = TlsCipherSuite.TLS_RSA_WITH_AES_256_CBC_SHA,
        ["TLS_RSA_WITH_AES_256_GCM_SHA384"] = TlsCipherSuite.TLS_RSA_WITH_AES_256_GCM_SHA384,
        ["TLS_ECDHE_ECDSA_WITH_RC4_128_SHA"] = TlsCipherSuite.TLS_ECDHE_ECDSA_WITH_RC4_128_SHA,
        ["TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA"] = TlsCipherSuite.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA,
        ["TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA"] = TlsCipherSuite.TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA,
        ["TLS_ECDHE_RSA_WITH_RC4_128_SHA"] = TlsCipherSuite.TLS_ECDHE_RSA_WITH_RC4_128_SHA,
        ["TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA"] = TlsCipherSuite.TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA,
        ["TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA"] = TlsCipherSuite.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA,
        ["TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256"] = TlsCipherSuite.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256,
        ["TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256"] = TlsCipherSuite.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256,
        ["TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA"] = TlsCipherSuite.TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA,
        ["TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"] = TlsCipherSuite.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
        ["TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"] = TlsCipherSuite.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
        ["TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"] = TlsCipherSuite.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
        ["TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"] = TlsCipherSuite.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
        ["TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305"] = TlsCipherSuite.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
        ["TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305"] = TlsCipherSuite.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
        ["TLS_AES_128_GCM_SHA256"] = TlsCipherSuite.TLS_AES_128_GCM_SHA256,
        ["TLS_AES_256_GCM_SHA384"] = TlsCipherSuite.TLS_AES_256_GCM_SHA384,
        ["TLS_CHACHA20_POLY1305_SHA256"] = TlsCipherSuite.TLS_CHACHA20_POLY1305_SHA256,
    };

    private static readonly Dictionary<TlsCipherSuite, string> NameById = ByName.ToDictionary(p => p.Value, p => p.Key);

    /// <summary>nats-server's defaultCipherSuites(): the TLS 1.2 suites served when <c>cipher_suites</c> is absent.</summary>
    public static IReadOnlyList<TlsCipherSuite> Defaults { get; } =
    [
        TlsCipherSuite.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
        TlsCipherSuite.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
        TlsCipherSuite.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
        TlsCipherSuite.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
        TlsCipherSuite.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
        TlsCipherSuite.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
    ];

    /// <summary>Go's TLS 1.3 suites (crypto/tls defaultCipherSuitesTLS13), all always enabled: Go has no knob for them.</summary>
    private static readonly TlsCipherSuite[] Tls13 =
    [
        TlsCipherSuite.TLS_AES_128_GCM_SHA256,
        TlsCipherSuite.TLS_AES_256_GCM_SHA384,
        TlsCipherSuite.TLS_CHACHA20_POLY1305_SHA256,
    ];

    /// <summary>A name as nats-server's parseCipher takes it (Go's names, case-sensitive).</summary>
    public static bool TryParse(string name, out TlsCipherSuite suite) => ByName.TryGetValue(name, out suite);

    /// <summary>The suite's name in /connz <c>tls_cipher_suite</c>, as nats-server's tlsCipher writes it.</summary>
    public static string Name(TlsCipherSuite suite) =>
        NameById.TryGetValue(suite, out var name) ? name : string.Create(CultureInfo.InvariantCulture, $"Unknown [0x{(ushort)suite:x}]");

    /// <summary>
    /// What the handshake may negotiate: the configured suites (or nats-server's defaults) for TLS 1.2, and all of
    /// Go's TLS 1.3 suites whatever is configured. Go's crypto/tls applies Config.CipherSuites to TLS 1.2 and below
    /// only, so on nats-server a TLS 1.3 client connects whatever cipher_suites says (2.9.10 checked: cipher_suites
    /// of one TLS 1.2 suite, a TLS 1.3 client is served). .NET hands one policy to OpenSSL for both versions, and a
    /// policy of TLS 1.2 suites alone leaves OpenSSL no TLS 1.3 suite, so TLS 1.3 clients would be refused: the TLS
    /// 1.3 suites are always added. Without them a TLS 1.3 name in cipher_suites would also enable only itself,
    /// where Go ignores it. Null on Windows, where SslStream takes no policy (the system's settings apply).
    /// </summary>
    public static CipherSuitesPolicy? Policy(IReadOnlyList<TlsCipherSuite>? configured)
    {
        if (OperatingSystem.IsWindows()) return null;
        var tls12 = (configured ?? Defaults).Where(s => Array.IndexOf(Tls13, s) < 0);
        return new CipherSuitesPolicy(tls12.Concat(Tls13).Distinct());
    }
}
