using System.Net.Security;
using System.Security.Authentication;
using System.Security.Cryptography.X509Certificates;
using NatsBroker.Tls;

namespace NatsBroker.Cluster;

/// <summary>
/// Route TLS (<c>cluster { tls {} }</c>; route.go createRoute: the handshake right after TCP, before any INFO, on
/// both sides). Runs in the core, not in the TLS terminator: the route listener and dialler are the core's, and a
/// route must also dial out (gateways/README.md, "Where TLS runs"). Verification is always on: an accepted peer must
/// present a certificate signed by <c>ca_file</c> (as a client certificate), and a peer we dial must present one
/// valid for the host we dialled, unless <c>insecure</c>. One certificate serves both directions, as in nats-server.
/// </summary>
internal sealed class RouteTls
{
    private readonly TlsOptions _options;
    private readonly bool _insecure;
    private readonly CertificateSet _certificates;

    public RouteTls(TlsOptions options, bool insecure)
    {
        _options = options;
        _insecure = insecure;
        _certificates = new CertificateSet(options);
    }

    public TimeSpan Timeout => _options.Timeout;

    /// <summary>The accepting side: serve our certificate, require and verify the peer's.</summary>
    public async Task<Stream> AcceptAsync(Stream inner, CancellationToken cancellationToken)
    {
        var ssl = new SslStream(inner, leaveInnerStreamOpen: false);
        try
        {
            using var timeout = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken);
            timeout.CancelAfter(_options.Timeout);
            var options = await _certificates.ServerAuthenticationAsync().ConfigureAwait(false);
            await ssl.AuthenticateAsServerAsync(options, timeout.Token).ConfigureAwait(false);
            return ssl;
        }
        catch
        {
            await ssl.DisposeAsync().ConfigureAwait(false);
            throw;
        }
    }

    /// <summary>The dialling side: present our certificate, verify the peer's against <c>ca_file</c> for <paramref name="host"/>.</summary>
    public async Task<Stream> ConnectAsync(Stream inner, string host, CancellationToken cancellationToken)
    {
        var ssl = new SslStream(inner, leaveInnerStreamOpen: false);
        try
        {
            using var timeout = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken);
            timeout.CancelAfter(_options.Timeout);
            var authorities = _certificates.Authorities;
            X509ChainPolicy? policy = null;
            if (authorities is { Count: > 0 })
            {
                policy = new X509ChainPolicy { TrustMode = X509ChainTrustMode.CustomRootTrust, RevocationMode = X509RevocationMode.NoCheck };
                policy.CustomTrustStore.AddRange(authorities);
            }
            var options = new SslClientAuthenticationOptions
            {
                TargetHost = host,
                ClientCertificateContext = _certificates.HasCertificate ? await _certificates.GetServerContextAsync().ConfigureAwait(false) : null,
                EnabledSslProtocols = _options.MinVersion == SslProtocols.Tls13 ? SslProtocols.Tls13 : SslProtocols.Tls12 | SslProtocols.Tls13,
                CertificateRevocationCheckMode = X509RevocationMode.NoCheck,
                CertificateChainPolicy = policy,
                RemoteCertificateValidationCallback = (_, _, _, errors) => _insecure || errors == SslPolicyErrors.None,
                CipherSuitesPolicy = _options.CipherPolicy,
            };
            await ssl.AuthenticateAsClientAsync(options, timeout.Token).ConfigureAwait(false);
            return ssl;
        }
        catch
        {
            await ssl.DisposeAsync().ConfigureAwait(false);
            throw;
        }
    }
}
