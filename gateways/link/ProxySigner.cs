using System.Text;
using NATS.NKeys;

namespace NatsBroker.Gateways.Link;

/// <summary>
/// The gateway's proxy identity (ADR-55): an nkey whose public key the core lists in <c>proxies.trusted</c> (or
/// trusts for this run when it started the gateway itself). Signs the core's INFO nonce for <c>proxy_sig</c>.
/// </summary>
public sealed class ProxySigner : IDisposable
{
    private readonly KeyPair _key;

    public ProxySigner(string seed)
    {
        _key = KeyPair.FromSeed(seed.Trim());
        PublicKey = _key.GetPublicKey();
    }

    public string PublicKey { get; }

    /// <summary>ed25519 signature of the nonce's bytes, base64url without padding (server/auth.go proxyCheck decodes RawURLEncoding).</summary>
    public string SignNonce(string nonce)
    {
        var data = Encoding.ASCII.GetBytes(nonce);
        var sig = new byte[64];
        _key.Sign(data, sig);
        return Convert.ToBase64String(sig).TrimEnd('=').Replace('+', '-').Replace('/', '_');
    }

    public void Dispose() => _key.Dispose();
}
