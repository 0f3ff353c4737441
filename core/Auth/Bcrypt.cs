using System.Buffers.Binary;
using System.Security.Cryptography;
using System.Text;

namespace NatsBroker.Auth;

/// <summary>
/// bcrypt (Provos &amp; Mazières 1999), as nats-server uses it through golang.org/x/crypto/bcrypt:
/// hashes look like <c>$2a$11$&lt;22 chars salt&gt;&lt;31 chars hash&gt;</c> in bcrypt's own base64 alphabet.
/// <list type="bullet">
/// <item>Verification accepts the minor versions nats-server routes to bcrypt (<c>$2a$ $2b$ $2x$ $2y$</c>, see
/// <see cref="IsBcryptHash"/>) and treats them all alike, as x/crypto does (no emulation of crypt_blowfish's
/// 8-bit <c>$2x$</c> bug nor of OpenBSD's old <c>$2a$</c> length wrap).</item>
/// <item>The key is the UTF-8 password plus a NUL, cycled over 72 bytes: bytes past the 72nd are ignored.</item>
/// <item>Cost is two decimal digits, 4..31. Any malformed hash verifies as false (x/crypto returns an error,
/// which nats-server treats as a failed login).</item>
/// </list>
/// </summary>
public static class Bcrypt
{
    public const int MinCost = 4;
    public const int MaxCost = 31;
    /// <summary>Cost used by <c>nats server passwd</c>.</summary>
    public const int DefaultCost = 11;
    /// <summary>bcrypt only reads this many key bytes.</summary>
    public const int MaxPasswordBytes = 72;

    internal const int SaltBytes = 16;
    internal const int HashBytes = 23;
    internal const int EncodedSaltChars = 22;
    internal const int EncodedHashChars = 31;
    /// <summary>"$2a$" + "NN$" + salt + hash.</summary>
    internal const int EncodedLength = 7 + EncodedSaltChars + EncodedHashChars;

    private const string Alphabet = "./ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

    /// <summary>
    /// nats-server's rule (server/auth.go isBcrypt): a configured password or token is a bcrypt hash when it
    /// matches <c>^\$2[abxy]\$\d{2}\$</c>; anything else is compared as plain text.
    /// </summary>
    public static bool IsBcryptHash(string? value) =>
        value is { Length: >= 7 }
        && value[0] == '$' && value[1] == '2' && value[2] is 'a' or 'b' or 'x' or 'y' && value[3] == '$'
        && char.IsAsciiDigit(value[4]) && char.IsAsciiDigit(value[5]) && value[6] == '$';

    /// <summary>Does <paramref name="password"/> (UTF-8 encoded) match <paramref name="hash"/>? Constant-time compare.</summary>
    public static bool Verify(string password, string hash)
    {
        ArgumentNullException.ThrowIfNull(password);
        int max = Encoding.UTF8.GetMaxByteCount(password.Length);
        Span<byte> buf = max <= 256 ? stackalloc byte[256] : new byte[max];
        try
        {
            int n = Encoding.UTF8.GetBytes(password, buf);
            return Verify(buf[..n], hash);
        }
        finally
        {
            CryptographicOperations.ZeroMemory(buf);
        }
    }

    /// <summary>Does the raw password match <paramref name="hash"/>? Constant-time compare.</summary>
    public static bool Verify(ReadOnlySpan<byte> password, string hash)
    {
        if (!TryParse(hash, out int cost, out var salt)) return false;
        Span<byte> raw = stackalloc byte[HashBytes];
        Span<byte> encoded = stackalloc byte[EncodedHashChars];
        Compute(password, cost, salt, raw);
        Encode(raw, encoded);
        Span<byte> expected = stackalloc byte[EncodedHashChars];
        for (int i = 0; i < EncodedHashChars; i++)
        {
            char c = hash[EncodedLength - EncodedHashChars + i];
            expected[i] = c < 128 ? (byte)c : (byte)0;
        }
        return CryptographicOperations.FixedTimeEquals(encoded, expected);
    }

    /// <summary>A new <c>$2a$</c> hash with a random salt (what x/crypto's GenerateFromPassword emits).</summary>
    public static string Hash(string password, int cost = DefaultCost)
    {
        ArgumentNullException.ThrowIfNull(password);
        Span<byte> salt = stackalloc byte[SaltBytes];
        RandomNumberGenerator.Fill(salt);
        byte[] pw = Encoding.UTF8.GetBytes(password);
        try
        {
            return Hash(pw, cost, salt);
        }
        finally
        {
            CryptographicOperations.ZeroMemory(pw);
        }
    }

    /// <summary>Deterministic form for tests and tools: explicit 16-byte salt and minor version.</summary>
    public static string Hash(ReadOnlySpan<byte> password, int cost, ReadOnlySpan<byte> salt, char minor = 'a')
    {
        ArgumentOutOfRangeException.ThrowIfLessThan(cost, MinCost);
        ArgumentOutOfRangeException.ThrowIfGreaterThan(cost, MaxCost);
        if (salt.Length != SaltBytes) throw new ArgumentException("bcrypt salt must be 16 bytes", nameof(salt));
        if (minor is not ('a' or 'b' or 'x' or 'y')) throw new ArgumentOutOfRangeException(nameof(minor));
        // x/crypto's GenerateFromPassword refuses what bcrypt would silently truncate.
        if (password.Length > MaxPasswordBytes)
            throw new ArgumentException("bcrypt passwords are limited to 72 bytes", nameof(password));

        Span<byte> raw = stackalloc byte[HashBytes];
        Compute(password, cost, salt, raw);
        Span<byte> text = stackalloc byte[EncodedLength];
        text[0] = (byte)'$';
        text[1] = (byte)'2';
        text[2] = (byte)minor;
        text[3] = (byte)'$';
        text[4] = (byte)('0' + cost / 10);
        text[5] = (byte)('0' + cost % 10);
        text[6] = (byte)'$';
        Encode(salt, text.Slice(7, EncodedSaltChars));
        Encode(raw, text.Slice(7 + EncodedSaltChars, EncodedHashChars));
        return Encoding.ASCII.GetString(text);
    }

    /// <summary>Splits a hash into cost and decoded salt; false when malformed.</summary>
    internal static bool TryParse(string? hash, out int cost, out Salt salt)
    {
        cost = 0;
        salt = default;
        if (hash is null || hash.Length != EncodedLength || !IsBcryptHash(hash)) return false;
        cost = (hash[4] - '0') * 10 + (hash[5] - '0');
        if (cost is < MinCost or > MaxCost) return false;
        return TryDecode(hash.AsSpan(7, EncodedSaltChars), salt);
    }

    /// <summary>The 16 salt bytes, kept inline so parsing allocates nothing.</summary>
    [System.Runtime.CompilerServices.InlineArray(SaltBytes)]
    internal struct Salt
    {
        private byte _b0;
    }

    /// <summary>EksBlowfishSetup then 64 encryptions of "OrpheanBeholderScryDoubt"; writes 23 bytes.</summary>
    internal static void Compute(ReadOnlySpan<byte> password, int cost, ReadOnlySpan<byte> salt, Span<byte> output)
    {
        var state = new EksBlowfish();
        state.Setup(password, salt, cost);

        Span<uint> ctext = stackalloc uint[6];
        ReadOnlySpan<byte> magic = "OrpheanBeholderScryDoubt"u8;
        for (int i = 0; i < 6; i++) ctext[i] = BinaryPrimitives.ReadUInt32BigEndian(magic[(4 * i)..]);
        for (int round = 0; round < 64; round++)
        {
            for (int i = 0; i < 6; i += 2) state.Encrypt(ref ctext[i], ref ctext[i + 1]);
        }
        Span<byte> full = stackalloc byte[24];
        for (int i = 0; i < 6; i++) BinaryPrimitives.WriteUInt32BigEndian(full[(4 * i)..], ctext[i]);
        full[..HashBytes].CopyTo(output);
        state.Clear();
    }

    /// <summary>bcrypt's base64: its own alphabet, no padding.</summary>
    internal static void Encode(ReadOnlySpan<byte> src, Span<byte> dst)
    {
        int o = 0;
        int i = 0;
        for (; i + 2 < src.Length; i += 3)
        {
            int v = (src[i] << 16) | (src[i + 1] << 8) | src[i + 2];
            dst[o++] = (byte)Alphabet[(v >> 18) & 63];
            dst[o++] = (byte)Alphabet[(v >> 12) & 63];
            dst[o++] = (byte)Alphabet[(v >> 6) & 63];
            dst[o++] = (byte)Alphabet[v & 63];
        }
        int rest = src.Length - i;
        if (rest == 1)
        {
            int v = src[i] << 16;
            dst[o++] = (byte)Alphabet[(v >> 18) & 63];
            dst[o++] = (byte)Alphabet[(v >> 12) & 63];
        }
        else if (rest == 2)
        {
            int v = (src[i] << 16) | (src[i + 1] << 8);
            dst[o++] = (byte)Alphabet[(v >> 18) & 63];
            dst[o++] = (byte)Alphabet[(v >> 12) & 63];
            dst[o++] = (byte)Alphabet[(v >> 6) & 63];
        }
    }

    /// <summary>
    /// Decodes bcrypt base64 into <paramref name="dst"/> (its full length). Like x/crypto (Go's non-strict
    /// base64), unused trailing bits of the last character are ignored.
    /// </summary>
    internal static bool TryDecode(ReadOnlySpan<char> src, Span<byte> dst)
    {
        int acc = 0, bits = 0, o = 0;
        foreach (char c in src)
        {
            int v = c < 128 ? Alphabet.IndexOf(c, StringComparison.Ordinal) : -1;
            if (v < 0) return false;
            acc = (acc << 6) | v;
            bits += 6;
            if (bits >= 8)
            {
                bits -= 8;
                if (o == dst.Length) return false;
                dst[o++] = (byte)(acc >> bits);
                acc &= (1 << bits) - 1;
            }
        }
        return o == dst.Length;
    }
}
