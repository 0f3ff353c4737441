namespace NatsBroker.Auth;

/// <summary>
/// bcrypt as nats-server uses it (golang.org/x/crypto/bcrypt through server/auth.go comparePasswords), computed by
/// BCrypt.Net-Next. The library matches x/crypto on the libxcrypt vectors (tests/.../Auth/BcryptTests.cs); this
/// type only adds what nats-server decides around the hash:
/// <list type="bullet">
/// <item>Which configured secrets are hashes: <see cref="IsBcryptHash"/>, nats' <c>^\$2[abxy]\$\d{2}\$</c>.</item>
/// <item>Every malformed hash is a failed login (x/crypto returns an error, which nats-server treats as a
/// mismatch); the library throws instead, so its parse errors become <c>false</c> here.</item>
/// <item>The 22nd salt character carries 2 bits; x/crypto decodes it leniently (Go's non-strict base64) and compares
/// only the hash part, while the library re-encodes the salt and compares the whole string. The unused bits are
/// cleared before verifying so a hand-edited salt verifies exactly as on nats-server.</item>
/// </list>
/// All minor versions ($2a$ $2b$ $2x$ $2y$) are verified alike, as x/crypto does; bytes past the 72nd are ignored.
/// Verification is CPU-heavy by design (cost 11 ≈ 0.1 s): callers run it on <see cref="PasswordHashingQueue"/>.
/// </summary>
public static class Bcrypt
{
    /// <summary>Cost used by <c>nats server passwd</c>.</summary>
    public const int DefaultCost = 11;

    private const int SaltStart = 7;
    private const int SaltChars = 22;
    private const string Alphabet = "./ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

    /// <summary>
    /// nats-server's rule (server/auth.go isBcrypt): a configured password or token is a bcrypt hash when it
    /// matches <c>^\$2[abxy]\$\d{2}\$</c>; anything else is compared as plain text.
    /// </summary>
    public static bool IsBcryptHash(string? value) =>
        value is { Length: >= 7 }
        && value[0] == '$' && value[1] == '2' && value[2] is 'a' or 'b' or 'x' or 'y' && value[3] == '$'
        && char.IsAsciiDigit(value[4]) && char.IsAsciiDigit(value[5]) && value[6] == '$';

    /// <summary>Does <paramref name="password"/> (UTF-8) match <paramref name="hash"/>? False for any malformed hash.</summary>
    public static bool Verify(string password, string hash)
    {
        ArgumentNullException.ThrowIfNull(password);
        if (!IsBcryptHash(hash) || hash.Length <= SaltStart + SaltChars) return false;
        try
        {
            return BCrypt.Net.BCrypt.Verify(password, CanonicalSalt(hash));
        }
        catch (Exception ex) when (ex is BCrypt.Net.SaltParseException or ArgumentException)
        {
            return false;
        }
    }

    /// <summary>A new <c>$2a$</c> hash with a random salt (what <c>nats server passwd</c> writes).</summary>
    public static string Hash(string password, int cost = DefaultCost) => BCrypt.Net.BCrypt.HashPassword(password, cost);

    /// <summary>The hash with the unused low 4 bits of its last salt character cleared.</summary>
    private static string CanonicalSalt(string hash)
    {
        int last = SaltStart + SaltChars - 1;
        int v = Alphabet.IndexOf(hash[last], StringComparison.Ordinal);
        if (v < 0 || (v & 0x0F) == 0) return hash;
        return string.Create(hash.Length, hash, static (dst, src) =>
        {
            src.CopyTo(dst);
            int i = SaltStart + SaltChars - 1;
            dst[i] = Alphabet[Alphabet.IndexOf(src[i], StringComparison.Ordinal) & 0x30];
        });
    }
}
