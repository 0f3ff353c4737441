using System.Text;
using System.Text.Json;
using NATS.NKeys;

namespace NatsBroker.Auth.Jwt;

/// <summary>
/// The NATS JWT wire format (nats-io/jwt v2, header.go and claims.go): three base64url (no padding) parts,
/// <c>header.payload.signature</c>; the header is <c>{"typ":"JWT","alg":"ed25519-nkey"}</c>; the signature is the
/// Ed25519 signature of the ASCII text <c>header.payload</c> by the nkey named in the payload's <c>iss</c>.
/// <see cref="TryDecode"/> checks the shape, the header and the signature; what the claims say (type, expiry,
/// who may issue them) is checked by the callers, as nats-server does after jwt.Decode.
/// </summary>
public static class Jwt
{
    /// <summary>The v2 algorithm name.</summary>
    public const string AlgorithmV2 = "ed25519-nkey";

    /// <summary>
    /// The v1 algorithm name. nats-server 2.x still accepts v1 tokens (jwt v2 header.go accepts both names;
    /// decoder.go loadClaims migrates v1 claims): nats.node's auth tests and older deployments use them.
    /// </summary>
    public const string AlgorithmV1 = "ed25519";

    /// <summary>Decodes and verifies a JWT; null with <paramref name="error"/> set when it is malformed or its signature is wrong.</summary>
    public static JsonElement? TryDecode(string? token, out string error)
    {
        error = "";
        if (string.IsNullOrEmpty(token))
        {
            error = "empty token";
            return null;
        }
        var parts = token.Split('.');
        if (parts.Length != 3)
        {
            error = "expected 3 chunks";
            return null;
        }
        var header = ParseJson(parts[0]);
        if (header is not { ValueKind: JsonValueKind.Object } h)
        {
            error = "invalid header";
            return null;
        }
        if (!h.TryGetProperty("typ", out var typ) || !string.Equals(typ.GetString(), "JWT", StringComparison.OrdinalIgnoreCase))
        {
            error = "not supported type";
            return null;
        }
        if (!h.TryGetProperty("alg", out var alg) || alg.GetString() is not { } algName
            || !(string.Equals(algName, AlgorithmV2, StringComparison.OrdinalIgnoreCase) || string.Equals(algName, AlgorithmV1, StringComparison.OrdinalIgnoreCase)))
        {
            error = "unexpected algorithm";
            return null;
        }
        var payload = ParseJson(parts[1]);
        if (payload is not { ValueKind: JsonValueKind.Object } p)
        {
            error = "invalid payload";
            return null;
        }
        string? issuer = p.TryGetProperty("iss", out var iss) && iss.ValueKind == JsonValueKind.String ? iss.GetString() : null;
        var sig = Base64UrlDecode(parts[2]);
        // decoder.go: a v1 claim (its type at the top level, not in "nats") is signed over the payload part only,
        // a v2 claim over "header.payload"; which one is decided by the claims, not by the header's algorithm.
        bool v1 = IsV1(p);
        string signed = v1 ? parts[1] : parts[0] + "." + parts[1];
        if (issuer is null || sig is null || !VerifySignature(issuer, Encoding.ASCII.GetBytes(signed), sig))
        {
            error = v1 ? "claim failed V1 signature verification" : "claim failed V2 signature verification";
            return null;
        }
        return p;
    }

    /// <summary>decoder.go identifier.Version: a top-level <c>type</c> marks a v1 claim.</summary>
    internal static bool IsV1(JsonElement payload) =>
        payload.TryGetProperty("type", out var t) && t.ValueKind == JsonValueKind.String && t.GetString() is { Length: > 0 };

    private static readonly string EncodedHeader = Base64UrlEncode("{\"typ\":\"JWT\",\"alg\":\"ed25519-nkey\"}"u8);

    /// <summary>
    /// Encodes and signs a JWT (jwt v2 ClaimsData.doEncode): <paramref name="payloadJson"/> must already carry
    /// <c>iss</c> = <paramref name="issuer"/>'s public key.
    /// </summary>
    public static string Encode(KeyPair issuer, ReadOnlySpan<byte> payloadJson)
    {
        ArgumentNullException.ThrowIfNull(issuer);
        string toSign = EncodedHeader + "." + Base64UrlEncode(payloadJson);
        var sig = new byte[64];
        issuer.Sign(Encoding.ASCII.GetBytes(toSign), sig);
        return toSign + "." + Base64UrlEncode(sig);
    }

    private static bool VerifySignature(string publicKey, byte[] data, byte[] sig)
    {
        return sig.Length == 64 && NkeySignature.Verify(publicKey, data, sig);
    }

    private static JsonElement? ParseJson(string part)
    {
        var bytes = Base64UrlDecode(part);
        if (bytes is null) return null;
        try
        {
            using var doc = JsonDocument.Parse(bytes);
            return doc.RootElement.Clone();
        }
        catch (JsonException)
        {
            return null;
        }
    }

    /// <summary>Raw URL base64; standard alphabet and padding are tolerated (Go's jwt decoder tries both).</summary>
    public static byte[]? Base64UrlDecode(string s)
    {
        string std = s.TrimEnd('=').Replace('-', '+').Replace('_', '/');
        switch (std.Length % 4)
        {
            case 2: std += "=="; break;
            case 3: std += "="; break;
            case 1: return null;
        }
        try
        {
            return Convert.FromBase64String(std);
        }
        catch (FormatException)
        {
            return null;
        }
    }

    public static string Base64UrlEncode(ReadOnlySpan<byte> data) =>
        Convert.ToBase64String(data).TrimEnd('=').Replace('+', '-').Replace('/', '_');

    /// <summary>Whether <paramref name="key"/> is a valid public nkey of the given kind.</summary>
    public static bool IsPublicKey(string? key, PrefixByte kind)
    {
        if (string.IsNullOrEmpty(key)) return false;
        try
        {
            return KeyPair.IsValidPublicKey(kind, key);
        }
        catch (Exception ex) when (ex is NKeysException or ArgumentException or FormatException or IndexOutOfRangeException)
        {
            return false;
        }
    }
}
