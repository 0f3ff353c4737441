using System.Text;
using NATS.NKeys;
using NatsBroker.Auth.Jwt;
using NatsBroker.Configuration;

namespace NatsBroker.Auth.Callout;

/// <summary>
/// A callout answer that authorizes: the user JWT, the account it places the user in, when it stops being valid, and
/// the permissions the user gets (the user JWT's own, or in operator mode a scoped signing key's template or the
/// account's default permissions).
/// </summary>
public sealed record CalloutGrant(UserClaims User, string Account, DateTimeOffset? Expires, Permissions? Permissions);

/// <summary>
/// Checks a callout service's answer (config mode here; operator mode's differences in <see cref="VerifyOperator"/>),
/// in server/auth_callout.go's order (decodeResponse, then
/// processReply), with its error texts (they go to the server log; the client only sees
/// <c>Authorization Violation</c>):
/// <list type="number">
/// <item>an empty answer is a refusal without reason; a sealed answer (not starting <c>eyJ</c>) is opened with the
/// server's curve key when the request was sealed;</item>
/// <item>the authorization response JWT must verify, be of type <c>authorization_response</c>, be issued by an
/// account key, have a user key as <c>sub</c>, a server key as <c>aud</c>, exactly one of <c>jwt</c>/<c>error</c>, not
/// be expired; its <c>sub</c> must be the request's user_nkey and its <c>aud</c> this server's id;</item>
/// <item>an <c>error</c> is a refusal;</item>
/// <item>the user JWT must verify, be a valid current user JWT about the same user_nkey, inside its time windows,
/// allow STANDARD connections, have no issuer_account, be issued by the configured issuer, and its <c>aud</c> must
/// name an existing account (where the user is placed).</item>
/// </list>
/// </summary>
public static class AuthorizationResponse
{
    public const string ClaimType = "authorization_response";

    /// <summary>The grant, or null with <paramref name="error"/> (nats-server's text, title-cased as it logs it).</summary>
    public static CalloutGrant? Verify(ReadOnlySpan<byte> message, string userNkey, string serverId, string issuer, string calloutAccount,
        Func<string, bool> accountExists, Func<byte[], byte[]>? open, DateTimeOffset now, out string error)
    {
        ArgumentNullException.ThrowIfNull(accountExists);
        var grant = Check(message, userNkey, serverId, issuer, calloutAccount, accountExists, open, now, out error);
        if (grant is null) error = TitleCase(error);
        return grant;
    }

    /// <summary>
    /// Operator mode (the callout account's JWT has <c>authorization.auth_users</c>): the same checks up to the user JWT's
    /// connection types, plus, for an answer that was not sealed, a response issued by the callout account or one of
    /// its signing keys; then the user is placed in the account that issued the user JWT (issuer_account, else the
    /// issuer): the callout account or one of its <c>allowed_accounts</c>, which must vouch for the signing key (auth_callout.go
    /// getIssuerAccount / assignAccountAndPermissions).
    /// </summary>
    public static CalloutGrant? VerifyOperator(ReadOnlySpan<byte> message, string userNkey, string serverId, AccountClaims callout,
        Func<string, AccountClaims?> findAccount, Func<byte[], byte[]>? open, DateTimeOffset now, out string error)
    {
        ArgumentNullException.ThrowIfNull(callout);
        ArgumentNullException.ThrowIfNull(findAccount);
        var grant = Check(message, userNkey, serverId, callout.Subject, callout.Subject, _ => false, open, now, out error, (callout, findAccount));
        if (grant is null) error = TitleCase(error);
        return grant;
    }

    private static CalloutGrant? Check(ReadOnlySpan<byte> message, string userNkey, string serverId, string issuer, string account,
        Func<string, bool> accountExists, Func<byte[], byte[]>? open, DateTimeOffset now, out string error,
        (AccountClaims Callout, Func<string, AccountClaims?> Find)? operatorMode = null)
    {
        if (message.IsEmpty)
        {
            error = $"auth callout violation: \"no reason supplied\" on account \"{account}\"";
            return null;
        }
        byte[] body = message.ToArray();
        bool wasSealed = false;
        if (open is not null && !message.StartsWith("eyJ"u8))
        {
            wasSealed = true;
            try
            {
                body = open(body);
            }
            catch (Exception ex) when (ex is NKeysException or ArgumentException or FormatException or System.Security.Cryptography.CryptographicException)
            {
                error = $"error decrypting auth callout response on account \"{account}\": {ex.Message}";
                return null;
            }
        }
        string token = Encoding.UTF8.GetString(body).Trim();
        if (Jwt.Jwt.TryDecode(token, out error) is not { } payload) return null;
        var response = new ResponseClaims(payload, token);
        if (response.Type != ClaimType)
        {
            error = "not an authorization request claim";
            return null;
        }
        if (!Jwt.Jwt.IsPublicKey(response.Issuer, PrefixByte.Account))
        {
            error = "unable to validate expected prefixes - [account]";
            return null;
        }
        if (ResponseIssue(response, now) is { } issue)
        {
            error = "authorization response had validation errors: " + issue;
            return null;
        }
        if (response.Subject != userNkey)
        {
            error = "auth callout violation: auth callout response is not for expected user";
            return null;
        }
        if (response.Audience != serverId)
        {
            error = "auth callout violation: auth callout response is not for server";
            return null;
        }
        if (response.Error.Length > 0)
        {
            error = "auth callout service returned an error: " + response.Error;
            return null;
        }
        // Operator mode: an answer that was not sealed must come from the callout account (a sealed one is
        // authenticated by the xkey exchange).
        if (operatorMode is { } om && !wasSealed)
        {
            string signer = response.IssuerAccount.Length > 0 ? response.IssuerAccount : response.Issuer;
            if (signer != account && !om.Callout.SigningKeys.ContainsKey(signer))
            {
                error = "auth callout signing key is unknown";
                return null;
            }
        }
        if (Jwt.Jwt.TryDecode(response.UserJwt, out error) is not { } userPayload) return null;
        var user = new UserClaims(userPayload, response.UserJwt);
        if (user.Type != "user")
        {
            error = "not user claim";
            return null;
        }
        if (UserIssue(user, now) is { } userIssue)
        {
            // processReply: not title-cased by nats-server, but starts with a capital already.
            error = "Error validating user JWT: " + userIssue;
            return null;
        }
        if (user.Subject != userNkey)
        {
            error = $"Expected authorized user of \"{userNkey}\" but got \"{user.Subject}\" on account \"{account}\"";
            return null;
        }
        if (!TimeWindows.Contains(user.Times, user.TimesLocation, now, out var windowEnd))
        {
            error = $"authorized user on account \"{account}\" outside of valid connect times";
            return null;
        }
        if (user.AllowedConnectionTypes.Count > 0 && !user.AllowedConnectionTypes.Contains("STANDARD", StringComparer.Ordinal))
        {
            error = $"authorized user on account \"{account}\" using invalid connection type";
            return null;
        }
        DateTimeOffset? expires = user.Expires > 0 ? DateTimeOffset.FromUnixTimeSeconds(user.Expires) : null;
        if (windowEnd is { } end && (expires is null || end < expires)) expires = end;
        if (operatorMode is { } mode) return PlaceInOperatorMode(user, mode.Callout, mode.Find, expires, out error);
        if (!string.IsNullOrEmpty(user.IssuerAccount))
        {
            error = $"error non operator mode account \"{account}\": attempted to use issuer_account";
            return null;
        }
        if (user.Issuer != issuer)
        {
            error = $"wrong issuer for auth callout response on account \"{account}\", expected \"{issuer}\" got \"{user.Issuer}\"";
            return null;
        }
        // Config mode: the user JWT's audience names the account to place the user in.
        if (!accountExists(user.Audience))
        {
            error = $"no valid account \"{user.Audience}\" for auth callout response on account \"{account}\": account missing";
            return null;
        }
        error = "";
        return new CalloutGrant(user, user.Audience, expires, user.Permissions);
    }

    /// <summary>auth_callout.go getIssuerAccount and assignAccountAndPermissions in operator mode.</summary>
    private static CalloutGrant? PlaceInOperatorMode(UserClaims user, AccountClaims callout, Func<string, AccountClaims?> find, DateTimeOffset? expires, out string error)
    {
        string account = callout.Subject;
        string jwtIssuer = string.IsNullOrEmpty(user.IssuerAccount) ? user.Issuer : user.IssuerAccount;
        if (jwtIssuer != account && callout.ExternalAuth?.AllowsAccount(jwtIssuer) != true)
        {
            error = $"account \"{user.Issuer}\" not permitted as valid account option for auth callout for account \"{account}\"";
            return null;
        }
        if (find(jwtIssuer) is not { } target)
        {
            error = $"no valid account \"{jwtIssuer}\" for auth callout response on account \"{account}\": account missing";
            return null;
        }
        if (!target.Vouches(user.Issuer))
        {
            error = $"user JWT issuer \"{user.Issuer}\" is not known";
            return null;
        }
        var permissions = target.SigningKeys.TryGetValue(user.Issuer, out var scope) && scope is not null
            ? scope.Permissions
            : user.Permissions ?? target.DefaultPermissions;
        if (target.Expires > 0)
        {
            var accountEnd = DateTimeOffset.FromUnixTimeSeconds(target.Expires);
            if (expires is null || accountEnd < expires) expires = accountEnd;
        }
        error = "";
        return new CalloutGrant(user, target.Subject, expires, permissions);
    }

    /// <summary>jwt AuthorizationResponseClaims.Validate: the first issue, or null.</summary>
    private static string? ResponseIssue(ResponseClaims r, DateTimeOffset now)
    {
        if (!Jwt.Jwt.IsPublicKey(r.Subject, PrefixByte.User)) return "Subject must be a user public key";
        if (!Jwt.Jwt.IsPublicKey(r.Audience, PrefixByte.Server)) return "Audience must be a server public key";
        if (r.Error.Length == 0 && r.UserJwt.Length == 0) return "Error or Jwt is required";
        if (r.Error.Length > 0 && r.UserJwt.Length > 0) return "Only Error or Jwt can be set";
        if (r.IssuerAccount.Length > 0 && !Jwt.Jwt.IsPublicKey(r.IssuerAccount, PrefixByte.Account)) return "issuer_account is not an account public key";
        return TimeIssue(r, now);
    }

    /// <summary>The blocking parts of jwt UserClaims.Validate.</summary>
    private static string? UserIssue(UserClaims u, DateTimeOffset now)
    {
        if (!Jwt.Jwt.IsPublicKey(u.Subject, PrefixByte.User)) return "subject is not a user public key";
        return TimeIssue(u, now);
    }

    private static string? TimeIssue(JwtClaims c, DateTimeOffset now) =>
        c.IsExpired(now) ? "claim is expired" : c.IsNotYetValid(now) ? "claim is not yet valid" : null;

    /// <summary>auth_callout.go titleCase: the first letter upper-cased.</summary>
    private static string TitleCase(string m) => m.Length == 0 ? m : char.ToUpperInvariant(m[0]) + m[1..];

    /// <summary>jwt v2 AuthorizationResponseClaims: <c>nats.jwt</c>, <c>nats.error</c>, <c>nats.issuer_account</c>.</summary>
    private sealed class ResponseClaims : JwtClaims
    {
        public ResponseClaims(System.Text.Json.JsonElement payload, string token) : base(payload, token)
        {
            UserJwt = Str(Nats, "jwt") ?? "";
            Error = Str(Nats, "error") ?? "";
            IssuerAccount = Str(Nats, "issuer_account") ?? "";
        }

        public string UserJwt { get; }
        public string Error { get; }
        public string IssuerAccount { get; }
    }
}
