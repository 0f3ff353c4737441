using System.Security.Cryptography;
using System.Text;

namespace NatsBroker.Auth;

/// <summary>
/// NKey challenge-response (server/auth.go): INFO carries a random nonce; CONNECT carries the user's public nkey
/// and the Ed25519 signature of the nonce, base64 (raw URL encoding, or standard as some clients send it).
/// Verification: <see cref="NkeySignature"/> (libcrypto, else NATS.NKeys).
/// </summary>
public static class NkeyVerifier
{
    /// <summary>11 random bytes, base64 raw-URL encoded (nats-server's nonceRawLen and encoding).</summary>
    public static string NewNonce()
    {
        Span<byte> raw = stackalloc byte[11];
        RandomNumberGenerator.Fill(raw);
        return Base64UrlNoPadding(raw);
    }

    /// <summary>True when <paramref name="signature"/> is <paramref name="publicKey"/>'s signature of <paramref name="nonce"/>.</summary>
    public static bool Verify(string publicKey, string? nonce, string? signature)
    {
        if (nonce is null || string.IsNullOrEmpty(signature)) return false;
        byte[]? sig = DecodeSignature(signature);
        if (sig is null) return false;
        return NkeySignature.Verify(publicKey, Encoding.ASCII.GetBytes(nonce), sig);
    }

    private static byte[]? DecodeSignature(string s)
    {
        string std = s.Replace('-', '+').Replace('_', '/');
        switch (std.Length % 4)
        {
            case 2: std += "=="; break;
            case 3: std += "="; break;
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

    private static string Base64UrlNoPadding(ReadOnlySpan<byte> data) =>
        Convert.ToBase64String(data).TrimEnd('=').Replace('+', '-').Replace('/', '_');
}
