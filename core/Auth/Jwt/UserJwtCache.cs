using System.Collections.Concurrent;

namespace NatsBroker.Auth.Jwt;

/// <summary>
/// User JWTs already decoded and signature-checked, by token text. A client reconnecting with its .creds file sends
/// the same JWT every time; decoding it (two JSON documents) and verifying the account's Ed25519 signature again is
/// pure cost, since both depend on the token text alone. What depends on time or on the account (expiry, revocation,
/// the issuer being vouched for, the nonce signature) is still decided on every CONNECT by the caller. Only tokens
/// that verified are kept, so a bad token costs what it did before; the cache is bounded (cleared when full).
/// </summary>
internal sealed class UserJwtCache(int capacity = 1024)
{
    private readonly ConcurrentDictionary<string, UserClaims> _verified = new(StringComparer.Ordinal);

    /// <summary>Entries now (tests: what was kept).</summary>
    public int Count => _verified.Count;

    /// <summary>The claims of a well-formed, correctly signed JWT; null when it is malformed or badly signed.</summary>
    public UserClaims? Decode(string? token)
    {
        if (string.IsNullOrEmpty(token)) return null;
        if (_verified.TryGetValue(token, out var cached)) return cached;
        if (Jwt.TryDecode(token, out _) is not { } payload) return null;
        var claims = new UserClaims(payload, token);
        if (_verified.Count >= capacity) _verified.Clear();
        _verified[token] = claims;
        return claims;
    }
}
