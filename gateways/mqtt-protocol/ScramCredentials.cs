using System.Collections.Concurrent;
using System.Security.Cryptography;
using System.Text;

namespace NatsBroker.MqttGateway;

/// <summary>
/// The users SCRAM-SHA-256 can authenticate: those whose configured password is plaintext (the
/// <c>mqtt { authorization }</c> user when the block has one, since it is then the only user MQTT clients may be;
/// otherwise the top-level <c>authorization</c> and <c>accounts</c> users). Their SCRAM keys (RFC 5802 section 3:
/// SaltedPassword, StoredKey, ServerKey) are derived on first use with a salt drawn for this process and kept, one
/// entry per configured user, so a reconnect storm does not run PBKDF2 per CONNECT.
/// A bcrypt-hashed password cannot give SCRAM keys (SCRAM needs the password or keys derived from it with its own
/// salt): such users are reported as <see cref="Lookup.Hashed"/>.
/// </summary>
internal sealed class ScramCredentials
{
    /// <summary>A user's SCRAM keys and the password its link logs in to the core with.</summary>
    internal sealed record Keys(string User, string Password, byte[] Salt, int Iterations, byte[] StoredKey, byte[] ServerKey);

    internal enum Lookup
    {
        Found,
        Unknown,
        Hashed,
    }

    private readonly IReadOnlyDictionary<string, string> _passwords;
    private readonly int _iterations;
    private readonly ConcurrentDictionary<string, Keys> _keys = new(StringComparer.Ordinal);
    /// <summary>Keys the made-up salt of unknown users, so the same name always gets the same one (RFC 5802 section 9).</summary>
    private readonly byte[] _unknownSaltKey = RandomNumberGenerator.GetBytes(32);

    public ScramCredentials(MqttOptions options)
    {
        ArgumentNullException.ThrowIfNull(options);
        _iterations = options.EnhancedAuth.ScramIterations;
        // A token has no user name for SCRAM to name; the block's user is then the only one MQTT clients may be.
        if (options.AuthToken is not null) _passwords = new Dictionary<string, string>();
        else if (options.AuthUser is { } user) _passwords = new Dictionary<string, string> { [user] = options.AuthPassword ?? "" };
        else _passwords = options.Users;
    }

    public int Iterations => _iterations;

    public Lookup Find(string user, out Keys? keys)
    {
        keys = null;
        if (!_passwords.TryGetValue(user, out var password)) return Lookup.Unknown;
        if (IsBcryptHash(password)) return Lookup.Hashed;
        keys = _keys.GetOrAdd(user, static (name, state) => Derive(name, state.password, state.iterations), (password, iterations: _iterations));
        return Lookup.Found;
    }

    /// <summary>The salt an unknown user is shown: stable per name, so a probe cannot tell unknown names from known ones by it.</summary>
    public byte[] UnknownUserSalt(string user) => HMACSHA256.HashData(_unknownSaltKey, Encoding.UTF8.GetBytes(user))[..16];

    private static Keys Derive(string user, string password, int iterations)
    {
        var salt = RandomNumberGenerator.GetBytes(16);
        // RFC 5802 section 3: SaltedPassword := Hi(Normalize(password), salt, i), Hi being PBKDF2 with HMAC (RFC 7677: SHA-256).
        var salted = Rfc2898DeriveBytes.Pbkdf2(Encoding.UTF8.GetBytes(Normalize(password)), salt, iterations, HashAlgorithmName.SHA256, 32);
        var clientKey = HMACSHA256.HashData(salted, "Client Key"u8);
        var serverKey = HMACSHA256.HashData(salted, "Server Key"u8);
        return new Keys(user, password, salt, iterations, SHA256.HashData(clientKey), serverKey);
    }

    /// <summary>
    /// RFC 5802 section 2.2 Normalize (SASLprep, RFC 4013): ASCII is left as is; otherwise Unicode NFKC, the
    /// normalization SASLprep applies (its mapping and prohibited-character steps are not done).
    /// </summary>
    public static string Normalize(string s) => Ascii.IsValid(s) ? s : s.Normalize(NormalizationForm.FormKC);

    /// <summary>The core's test (core/Auth/Bcrypt.cs, server/auth.go): "$2a$", "$2b$", "$2x$" or "$2y$", two digits and "$".</summary>
    internal static bool IsBcryptHash(string? value) =>
        value is { Length: >= 7 }
        && value[0] == '$' && value[1] == '2' && value[2] is 'a' or 'b' or 'x' or 'y' && value[3] == '$'
        && char.IsAsciiDigit(value[4]) && char.IsAsciiDigit(value[5]) && value[6] == '$';
}
