using System.Security.Cryptography;
using System.Text;
using System.Text.Json.Nodes;
using NATS.NKeys;

namespace NatsBroker.Tests.Accounts;

/// <summary>
/// Makes NATS JWTs in tests, as nsc would (nats-io/jwt v2 encoding): header {"typ":"JWT","alg":"ed25519-nkey"},
/// payload with jti/iat/iss/sub/name and a "nats" object carrying the type and version 2, Ed25519-signed by the
/// issuer's nkey, all base64url without padding.
/// </summary>
internal static class JwtFactory
{
    private static readonly string Header = B64(Encoding.UTF8.GetBytes("""{"typ":"JWT","alg":"ed25519-nkey"}"""));

    public static string B64(ReadOnlySpan<byte> data) => Convert.ToBase64String(data).TrimEnd('=').Replace('+', '-').Replace('/', '_');

    /// <summary>Signs <paramref name="nats"/> (the type-specific claims) as a JWT about <paramref name="subject"/>.</summary>
    public static string Encode(KeyPair issuer, string subject, string type, JsonObject? nats = null, long? iat = null, long? exp = null, string? name = null, string? aud = null)
    {
        nats ??= [];
        nats["type"] = type;
        nats["version"] = 2;
        var payload = new JsonObject
        {
            ["jti"] = Convert.ToHexString(RandomNumberGenerator.GetBytes(16)),
            ["iat"] = iat ?? DateTimeOffset.UtcNow.ToUnixTimeSeconds(),
            ["iss"] = issuer.GetPublicKey(),
            ["name"] = name ?? type,
            ["sub"] = subject,
            ["nats"] = nats,
        };
        if (exp is { } e) payload["exp"] = e;
        if (aud is not null) payload["aud"] = aud;
        string body = Header + "." + B64(Encoding.UTF8.GetBytes(payload.ToJsonString()));
        var sig = new byte[64];
        issuer.Sign(Encoding.ASCII.GetBytes(body), sig);
        return body + "." + B64(sig);
    }

    public static string Operator(KeyPair op, string? systemAccount = null, params string[] signingKeys)
    {
        var nats = new JsonObject();
        if (systemAccount is not null) nats["system_account"] = systemAccount;
        if (signingKeys.Length > 0) nats["signing_keys"] = new JsonArray([.. signingKeys.Select(k => (JsonNode)k)]);
        return Encode(op, op.GetPublicKey(), "operator", nats);
    }

    /// <summary>An account JWT; <paramref name="extra"/> may add limits, exports, imports, revocations, signing_keys.</summary>
    public static string Account(KeyPair signer, KeyPair account, JsonObject? extra = null, long? iat = null, string? name = null)
    {
        var nats = extra ?? [];
        if (!nats.ContainsKey("limits"))
            nats["limits"] = new JsonObject { ["subs"] = -1, ["data"] = -1, ["payload"] = -1, ["imports"] = -1, ["exports"] = -1, ["wildcards"] = true, ["conn"] = -1, ["leaf"] = -1 };
        return Encode(signer, account.GetPublicKey(), "account", nats, iat, name: name);
    }

    public static string User(KeyPair signer, KeyPair user, JsonObject? extra = null, long? exp = null, long? iat = null, string? issuerAccount = null)
    {
        var nats = extra ?? [];
        if (!nats.ContainsKey("subs")) nats["subs"] = -1;
        if (!nats.ContainsKey("data")) nats["data"] = -1;
        if (!nats.ContainsKey("payload")) nats["payload"] = -1;
        if (issuerAccount is not null) nats["issuer_account"] = issuerAccount;
        return Encode(signer, user.GetPublicKey(), "user", nats, iat, exp);
    }

    /// <summary>
    /// A v1 JWT (nats-io/jwt v1, still accepted by nats-server 2.x): header alg "ed25519", the type (and a user's
    /// issuer_account) at the top level, "nats" without type/version, and the signature over the payload part only.
    /// </summary>
    public static string EncodeV1(KeyPair issuer, string subject, string type, JsonObject? nats = null, string? issuerAccount = null)
    {
        var payload = new JsonObject
        {
            ["jti"] = Convert.ToHexString(RandomNumberGenerator.GetBytes(16)),
            ["iat"] = DateTimeOffset.UtcNow.ToUnixTimeSeconds(),
            ["iss"] = issuer.GetPublicKey(),
            ["sub"] = subject,
            ["type"] = type,
            ["nats"] = nats ?? [],
        };
        if (issuerAccount is not null) payload["issuer_account"] = issuerAccount;
        string body = B64(Encoding.UTF8.GetBytes(payload.ToJsonString()));
        var sig = new byte[64];
        issuer.Sign(Encoding.ASCII.GetBytes(body), sig);
        return B64(Encoding.UTF8.GetBytes("""{"typ":"jwt","alg":"ed25519"}""")) + "." + body + "." + B64(sig);
    }

    /// <summary>A .creds file as nsc writes it (the decorated JWT, then the decorated seed).</summary>
    public static string Creds(string jwt, KeyPair user) => $"""
        -----BEGIN NATS USER JWT-----
        {jwt}
        ------END NATS USER JWT------

        ************************* IMPORTANT *************************
        NKEY Seed printed below can be used to sign and prove identity.
        NKEYs are sensitive and should be treated as secrets.

        -----BEGIN USER NKEY SEED-----
        {user.GetSeed()}
        ------END USER NKEY SEED------

        *************************************************************
        """;

    /// <summary>The nonce signed as CONNECT's "sig".</summary>
    public static string SignNonce(KeyPair kp, string nonce)
    {
        var sig = new byte[64];
        kp.Sign(Encoding.ASCII.GetBytes(nonce), sig);
        return B64(sig);
    }
}
