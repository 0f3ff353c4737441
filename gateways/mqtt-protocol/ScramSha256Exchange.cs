using System.Globalization;
using System.Security.Cryptography;
using System.Text;

namespace NatsBroker.MqttGateway;

/// <summary>
/// The server side of SCRAM-SHA-256 (RFC 5802 with RFC 7677's hash) as an MQTT 5 enhanced authentication method
/// (MQTT 5 section 4.12), without channel binding: the client's gs2 header is "n,," (or "y,,": the client could bind
/// but sees the server does not offer "-PLUS"); "p=" is refused.
/// Step 1, the CONNECT's (or AUTH 0x19's) Authentication Data: client-first-message "n,,n=user,r=cnonce" → AUTH 0x18
/// with server-first-message "r=cnonce+snonce,s=salt,i=iterations". Step 2, the client's AUTH 0x18:
/// client-final-message "c=biws,r=nonce,p=proof" → the proof checked → CONNACK (or AUTH 0x00) carrying
/// server-final-message "v=signature", which lets the client verify the server knows the password too.
/// An unknown user gets a made-up salt and fails at the proof like a wrong password (RFC 5802 section 9: the
/// exchange does not tell which names exist); both are 0x87 Not authorized, as a wrong username/password is in
/// a plain CONNECT here. A user whose configured password is a bcrypt hash is refused at step 1 with
/// 0x8C Bad authentication method: the method cannot work for that user, and the client can fall back to
/// a username/password CONNECT, which does (it does tell that the name exists with a hashed password).
/// </summary>
internal sealed class ScramSha256Exchange(ScramCredentials credentials, EnhancedAuthContext context) : IEnhancedAuthExchange
{
    public const string MethodName = "SCRAM-SHA-256";

    private int _step;
    private string _gs2Header = "";
    private string _clientFirstBare = "";
    private string _serverFirst = "";
    private string _nonce = "";
    /// <summary>Null for an unknown user: the exchange runs on and fails at the proof.</summary>
    private ScramCredentials.Keys? _keys;

    public string Method => MethodName;

    /// <summary>Why the last step failed (for the gateway's debug log).</summary>
    public string? Error { get; private set; }

    public ValueTask<EnhancedAuthStep> StepAsync(byte[]? clientData, CancellationToken ct)
    {
        _step++;
        string? text = Decode(clientData);
        var step = text is null ? Refuse("the data is not UTF-8") : _step switch
        {
            1 => ClientFirst(text),
            2 => ClientFinal(text),
            _ => Refuse("more steps than SCRAM has"),
        };
        return ValueTask.FromResult(step);
    }

    private EnhancedAuthStep ClientFirst(string message)
    {
        // gs2-header = gs2-cbind-flag "," [ authzid ] ","  (RFC 5802 section 7)
        if (message.StartsWith("p=", StringComparison.Ordinal)) return Refuse("channel binding is not offered");
        if (!(message.StartsWith("n,", StringComparison.Ordinal) || message.StartsWith("y,", StringComparison.Ordinal))) return Refuse("no gs2 header");
        int authzEnd = message.IndexOf(',', 2);
        if (authzEnd < 0) return Refuse("no gs2 header");
        string authzid = message[2..authzEnd];
        _gs2Header = message[..(authzEnd + 1)];
        _clientFirstBare = message[(authzEnd + 1)..];
        var fields = _clientFirstBare.Split(',');
        // client-first-message-bare = [reserved-mext ","] username "," nonce ["," extensions]
        if (fields.Length < 2 || !fields[0].StartsWith("n=", StringComparison.Ordinal) || !fields[1].StartsWith("r=", StringComparison.Ordinal))
            return Refuse("malformed client-first-message");
        string? user = SaslName(fields[0][2..]);
        string clientNonce = fields[1][2..];
        if (user is not { Length: > 0 } || clientNonce.Length == 0 || !IsPrintable(clientNonce)) return Refuse("malformed client-first-message");
        // An authorization identity other than the user itself would mean acting as someone else: not offered.
        if (authzid.Length > 0 && (!authzid.StartsWith("a=", StringComparison.Ordinal) || SaslName(authzid[2..]) != user))
            return Refuse("an authorization identity other than the user");

        byte[] salt;
        int iterations;
        switch (credentials.Find(user, out var keys))
        {
            case ScramCredentials.Lookup.Hashed:
                Error = $"user \"{user}\" has a bcrypt-hashed password";
                return EnhancedAuthStep.Fail(EnhancedAuthStep.BadAuthenticationMethod);
            case ScramCredentials.Lookup.Found:
                _keys = keys!;
                salt = keys!.Salt;
                iterations = keys.Iterations;
                break;
            default:
                salt = credentials.UnknownUserSalt(user);
                iterations = credentials.Iterations;
                break;
        }
        _nonce = clientNonce + Convert.ToBase64String(RandomNumberGenerator.GetBytes(18));
        _serverFirst = string.Create(CultureInfo.InvariantCulture, $"r={_nonce},s={Convert.ToBase64String(salt)},i={iterations}");
        return EnhancedAuthStep.Continue(Encoding.UTF8.GetBytes(_serverFirst));
    }

    private EnhancedAuthStep ClientFinal(string message)
    {
        // client-final-message = channel-binding "," nonce ["," extensions] "," proof
        int p = message.LastIndexOf(",p=", StringComparison.Ordinal);
        if (p < 0) return Refuse("no proof");
        string withoutProof = message[..p];
        var fields = withoutProof.Split(',');
        if (fields.Length < 2 || fields[0] != "c=" + Convert.ToBase64String(Encoding.UTF8.GetBytes(_gs2Header)))
            return Refuse("the channel binding does not repeat the gs2 header");
        if (fields[1] != "r=" + _nonce) return Refuse("the nonce does not match");
        byte[] proof;
        try
        {
            proof = Convert.FromBase64String(message[(p + 3)..]);
        }
        catch (FormatException)
        {
            return Refuse("the proof is not base64");
        }
        if (_keys is not { } keys) return Refuse($"unknown user (client {context.ClientId})");
        if (proof.Length != SHA256.HashSizeInBytes) return Refuse("wrong proof length");
        // RFC 5802 section 3: ClientKey = ClientProof XOR HMAC(StoredKey, AuthMessage); H(ClientKey) must be StoredKey.
        var authMessage = Encoding.UTF8.GetBytes(_clientFirstBare + "," + _serverFirst + "," + withoutProof);
        var clientSignature = HMACSHA256.HashData(keys.StoredKey, authMessage);
        for (int i = 0; i < proof.Length; i++) proof[i] ^= clientSignature[i];
        if (!CryptographicOperations.FixedTimeEquals(SHA256.HashData(proof), keys.StoredKey)) return Refuse("wrong proof");
        var serverSignature = HMACSHA256.HashData(keys.ServerKey, authMessage);
        return EnhancedAuthStep.Success(Encoding.UTF8.GetBytes("v=" + Convert.ToBase64String(serverSignature)),
            new EnhancedAuthIdentity(keys.User, keys.Password, null));
    }

    private EnhancedAuthStep Refuse(string why)
    {
        Error = why;
        return EnhancedAuthStep.Fail(EnhancedAuthStep.NotAuthorized);
    }

    private static string? Decode(byte[]? data)
    {
        if (data is null) return null;
        try
        {
            return new UTF8Encoding(false, throwOnInvalidBytes: true).GetString(data);
        }
        catch (DecoderFallbackException)
        {
            return null;
        }
    }

    /// <summary>RFC 5802 section 5.1: in a saslname "," is "=2C" and "=" is "=3D"; any other "=" is invalid.</summary>
    private static string? SaslName(string s)
    {
        if (!s.Contains('=', StringComparison.Ordinal)) return s;
        var sb = new StringBuilder(s.Length);
        for (int i = 0; i < s.Length; i++)
        {
            if (s[i] != '=')
            {
                sb.Append(s[i]);
                continue;
            }
            if (i + 2 >= s.Length) return null;
            string code = s.Substring(i + 1, 2);
            if (code == "2C") sb.Append(',');
            else if (code == "3D") sb.Append('=');
            else return null;
            i += 2;
        }
        return sb.ToString();
    }

    /// <summary>RFC 5802 section 7: printable = %x21-2B / %x2D-7E (no comma).</summary>
    private static bool IsPrintable(string s)
    {
        foreach (char c in s)
        {
            if (c is < (char)0x21 or > (char)0x7E or ',') return false;
        }
        return true;
    }
}
