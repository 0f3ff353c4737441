using System.Globalization;
using System.Net.Security;
using System.Security.Cryptography;
using System.Security.Cryptography.X509Certificates;
using System.Text;

namespace NatsBroker.Tls;

/// <summary>
/// <c>verify</c> / <c>verify_and_map</c>: a client certificate is checked as nats-server has Go check it.
/// server/opts.go GenTLSConfig sets <c>ClientAuth = tls.RequireAndVerifyClientCert</c> and <c>ClientCAs</c> from
/// ca_file; crypto/tls (handshake_server.go processCertsFromClient) then calls <c>certs[0].Verify</c> with
/// <c>KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}</c>, the rest of what the client sent as
/// intermediates, and the current time. So: a chain to a CA in ca_file (the system roots without one), every
/// certificate in it within its validity dates, intermediates marked as CAs, and the EKU constraint across the whole
/// chain (<see cref="ChainPermitsClientAuth"/>). Go ignores the KeyUsage bits (crypto/x509 verify.go isValid).
/// </summary>
public static class ClientCertificateCheck
{
    private const string ClientAuthOid = "1.3.6.1.5.5.7.3.2";
    private const string AnyExtendedKeyUsageOid = "2.5.29.37.0";

    /// <summary>
    /// The policy SslStream builds the client's chain with (SslServerAuthenticationOptions.CertificateChainPolicy):
    /// ca_file as the only roots. One per handshake: SslStream adds the client's intermediates to its ExtraStore.
    /// SslStream adds the clientAuth application policy itself when none is set, so its SslPolicyErrors (and the TLS
    /// alert it sends on refusal) reflect the EKU too. Null = the system roots (nats-server without ca_file).
    /// </summary>
    public static X509ChainPolicy? ChainPolicy(X509Certificate2Collection? authorities)
    {
        if (authorities is null) return null;
        var policy = new X509ChainPolicy
        {
            TrustMode = X509ChainTrustMode.CustomRootTrust,
            RevocationMode = X509RevocationMode.NoCheck,
        };
        policy.CustomTrustStore.AddRange(authorities);
        return policy;
    }

    /// <summary>
    /// A refused client certificate: <see cref="Reason"/> in Go's words (crypto/tls's error, which nats-server logs
    /// after "TLS handshake error: "), and <see cref="Detail"/>, what nats-server 2.11+ appends for a client
    /// connection (server/client.go doTLSHandshake: " (subject SHA-256: hex; ...)" for each certificate sent).
    /// </summary>
    public sealed record Refused(string Reason, string Detail)
    {
        public override string ToString() => Reason + Detail;
    }

    /// <summary>
    /// Null when the client's certificate is accepted; otherwise why not. <paramref name="chain"/> is the one SslStream
    /// built under <see cref="ChainPolicy"/>.
    /// </summary>
    public static Refused? Refusal(X509Certificate? certificate, X509Chain? chain, DateTime utcNow)
    {
        // crypto/tls handshake_server.go: RequireAndVerifyClientCert and an empty Certificate message.
        if (certificate is null) return new Refused("tls: client didn't provide a certificate", "");
        if (chain is null || chain.ChainElements.Count == 0) return Failed("x509: certificate signed by unknown authority", certificate, chain);

        var flags = X509ChainStatusFlags.NoError;
        foreach (var element in chain.ChainElements)
        {
            foreach (var status in element.ChainElementStatus) flags |= status.Status;
        }
        foreach (var status in chain.ChainStatus) flags |= status.Status;
        // .NET's own EKU verdict (NotValidForUsage) is replaced by Go's rule below, which differs in details
        // (anyExtendedKeyUsage, roots): Go decides what is accepted.
        flags &= ~X509ChainStatusFlags.NotValidForUsage;

        if ((flags & (X509ChainStatusFlags.NotTimeValid | X509ChainStatusFlags.NotTimeNested)) != 0)
            return Failed(Expired(chain, utcNow), certificate, chain);
        if ((flags & (X509ChainStatusFlags.UntrustedRoot | X509ChainStatusFlags.PartialChain | X509ChainStatusFlags.Cyclic)) != 0)
            return Failed("x509: certificate signed by unknown authority", certificate, chain);
        if ((flags & X509ChainStatusFlags.InvalidBasicConstraints) != 0)
            return Failed("x509: certificate is not authorized to sign other certificates", certificate, chain); // isValid: NotAuthorizedToSign
        if (flags != X509ChainStatusFlags.NoError)
            return Failed("x509: " + Describe(chain), certificate, chain);
        if (!ChainPermitsClientAuth(chain))
            return Failed("x509: certificate specifies an incompatible key usage", certificate, chain);
        return null;
    }

    /// <summary>
    /// crypto/x509 verify.go checkChainForKeyUsage with <c>[clientAuth]</c>: from the root down to the leaf, a
    /// certificate without an EKU extension allows every usage, one listing anyExtendedKeyUsage too; any other EKU
    /// list must contain clientAuth. So a leaf that is serverAuth only fails, and so does a leaf with clientAuth under
    /// an intermediate (or root) restricted to serverAuth.
    /// </summary>
    public static bool ChainPermitsClientAuth(X509Chain chain)
    {
        for (int i = chain.ChainElements.Count - 1; i >= 0; i--)
        {
            if (!PermitsClientAuth(chain.ChainElements[i].Certificate)) return false;
        }
        return true;
    }

    private static bool PermitsClientAuth(X509Certificate2 cert)
    {
        var eku = cert.Extensions.OfType<X509EnhancedKeyUsageExtension>().FirstOrDefault();
        if (eku is null) return true;
        var usages = eku.EnhancedKeyUsages;
        // Go: `len(cert.ExtKeyUsage) == 0 && len(cert.UnknownExtKeyUsage) == 0` counts as unrestricted.
        if (usages.Count == 0) return true;
        foreach (var usage in usages)
        {
            if (usage.Value is ClientAuthOid or AnyExtendedKeyUsageOid) return true;
        }
        return false;
    }

    /// <summary>verify.go isValid: "x509: certificate has expired or is not yet valid: current time … is after …".</summary>
    private static string Expired(X509Chain chain, DateTime utcNow)
    {
        foreach (var element in chain.ChainElements)
        {
            var c = element.Certificate;
            var notBefore = c.NotBefore.ToUniversalTime();
            var notAfter = c.NotAfter.ToUniversalTime();
            if (utcNow < notBefore)
                return $"x509: certificate has expired or is not yet valid: current time {Rfc3339(utcNow)} is before {Rfc3339(notBefore)}";
            if (utcNow > notAfter)
                return $"x509: certificate has expired or is not yet valid: current time {Rfc3339(utcNow)} is after {Rfc3339(notAfter)}";
        }
        return "x509: certificate has expired or is not yet valid";
    }

    private static string Rfc3339(DateTime utc) => utc.ToString("yyyy-MM-dd'T'HH:mm:ss'Z'", CultureInfo.InvariantCulture);

    private static string Describe(X509Chain chain) =>
        string.Join("; ", chain.ChainStatus.Where(s => s.Status != X509ChainStatusFlags.NotValidForUsage)
            .Select(s => s.StatusInformation.Trim()).Where(s => s.Length > 0).Distinct());

    /// <summary>crypto/tls CertificateVerificationError ("tls: failed to verify certificate: …") and its certificates.</summary>
    private static Refused Failed(string reason, X509Certificate certificate, X509Chain? chain)
    {
        using var leaf = new X509Certificate2(certificate);
        var sent = new List<X509Certificate2> { leaf };
        if (chain is not null)
        {
            foreach (var extra in chain.ChainPolicy.ExtraStore)
            {
                if (!extra.RawDataMemory.Span.SequenceEqual(leaf.RawDataMemory.Span)) sent.Add(extra);
            }
        }
        var sb = new StringBuilder(" (");
        for (int i = 0; i < sent.Count; i++)
        {
            if (i > 0) sb.Append("; ");
            sb.Append(CertificateIdentity.GoSubject(sent[i].SubjectName)).Append(" SHA-256: ")
                .Append(Convert.ToHexStringLower(SHA256.HashData(sent[i].RawDataMemory.Span)));
        }
        return new Refused("tls: failed to verify certificate: " + reason, sb.Append(')').ToString());
    }

    /// <summary>The RemoteCertificateValidationCallback every TLS gateway uses; <paramref name="refused"/> hears why.</summary>
    public static RemoteCertificateValidationCallback Callback(bool required, Action<Refused>? refused) =>
        (_, certificate, chain, _) =>
        {
            if (!required) return true;
            if (Refusal(certificate, chain, DateTime.UtcNow) is not { } why) return true;
            refused?.Invoke(why);
            return false;
        };
}
