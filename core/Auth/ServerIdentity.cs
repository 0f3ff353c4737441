using NATS.NKeys;

namespace NatsBroker.Auth;

/// <summary>
/// The server's own keys, made at start-up as nats-server makes them (server.go NewServer: nkeys.CreateServer,
/// nkeys.CreateCurveKeys): the server nkey whose public key is the server id (INFO server_id) and which signs auth
/// callout requests (ADR-26), and the curve (x25519) key that seals requests for a callout service with an xkey and
/// opens its sealed answers.
/// </summary>
public sealed class ServerIdentity : IDisposable
{
    private readonly KeyPair _signing = KeyPair.CreatePair(PrefixByte.Server);
    private readonly KeyPair _curve = KeyPair.CreatePair(PrefixByte.Curve);

    public ServerIdentity()
    {
        PublicKey = _signing.GetPublicKey();
        CurvePublicKey = _curve.GetPublicKey();
    }

    /// <summary>The server nkey's public key ('N...'): the server id.</summary>
    public string PublicKey { get; }

    /// <summary>The curve key's public key ('X...'): INFO/ServerID xkey.</summary>
    public string CurvePublicKey { get; }

    /// <summary>Signs a JWT payload as this server (the JWT's <c>iss</c> must be <see cref="PublicKey"/>).</summary>
    public string SignJwt(ReadOnlySpan<byte> payloadJson) => Jwt.Jwt.Encode(_signing, payloadJson);

    /// <summary>Seals <paramref name="data"/> for <paramref name="receiver"/>'s public curve key (NaCl box, nkeys xkv1 format).</summary>
    public byte[] Seal(byte[] data, string receiver) => _curve.Seal(data, receiver);

    /// <summary>Opens a box <paramref name="sender"/> sealed for this server.</summary>
    public byte[] Open(byte[] box, string sender) => _curve.Open(box, sender);

    public void Dispose()
    {
        _signing.Dispose();
        _curve.Dispose();
    }
}
