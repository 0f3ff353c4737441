using System.Net;
using NATS.NKeys;
using NatsBroker.Configuration;
using NatsBroker.Protocol;

namespace NatsBroker.Auth.Jwt;

/// <summary>
/// Operator mode (server/auth.go processClientOrLeafAuthentication, the trusted-keys branch): every client sends a
/// user JWT in CONNECT and, unless it is a bearer token, the INFO nonce signed with the user's nkey (what clients do
/// with a .creds file). The decision, in nats-server's order:
/// <list type="number">
/// <item>no JWT → refused; JWT malformed, badly signed, not a user JWT, expired or not yet valid → refused;</item>
/// <item>allowed_connection_types that exclude STANDARD → refused;</item>
/// <item>the account (issuer_account, else the issuer) must be known to the resolver, not expired, and vouch for the
/// issuer (itself or one of its signing keys);</item>
/// <item>bearer tokens the account disallows → refused; otherwise the nonce signature must verify with the user key;</item>
/// <item>a user revoked by the account (its key or "*", at or after the JWT's iat) → refused;</item>
/// <item>src CIDRs must contain the client address; times must contain now (in times_location).</item>
/// </list>
/// Every refusal is nats-server's <c>Authorization Violation</c>. Permissions: the scoped signing key's template, else
/// the user's own, else the account's default_permissions. The connection expires at the earliest of the user JWT's
/// exp, the account JWT's exp and the end of the current time window. A user of an account that delegates
/// authentication (<c>authorization.auth_users</c> in its JWT) and is not one of its auth_users is then decided by the
/// account's callout service (<see cref="Callout.OperatorAuthCallout"/>), when the server has one wired.
/// </summary>
public sealed class JwtAuthenticator(AccountResolver resolver, TimeProvider? time = null, Callout.OperatorAuthCallout? callout = null) : IAuthenticator
{
    private readonly TimeProvider _time = time ?? TimeProvider.System;
    private readonly UserJwtCache _userJwts = new();

    public bool AuthRequired => true;
    public bool NonceRequired => true;
    public AccountResolver Resolver => resolver;

    /// <summary>Only reached without a callout to make (<see cref="Begin"/> starts the callouts).</summary>
    public AuthResult Authenticate(ConnectOptions connect, ClientAuthContext ctx) =>
        Decide(connect, ctx, out var delegateTo) is var r && delegateTo is null ? r : AuthResult.Denied;

    /// <summary>The verdict, or null when the account's callout service decides (<see cref="Begin"/>).</summary>
    public AuthResult? TryAuthenticateWithoutHashing(ConnectOptions connect, ClientAuthContext ctx) =>
        Decide(connect, ctx, out var delegateTo) is var r && delegateTo is null ? r : null;

    public PasswordHashingRequest Begin(PasswordHashingQueue hashing, ConnectOptions connect, ClientAuthContext ctx)
    {
        var r = Decide(connect, ctx, out var delegateTo);
        if (delegateTo is not null && callout is not null) return callout.Begin(this, connect, ctx, delegateTo);
        var done = PasswordHashingRequest.External(this, connect, ctx);
        done.Complete(delegateTo is null ? r : AuthResult.Denied);
        return done;
    }

    /// <summary>Without a CONNECT there is no JWT: refused (nats-server has no no_auth_user in operator mode).</summary>
    public AuthResult AuthenticateWithoutConnect(ClientAuthContext ctx) => AuthResult.Denied;

    /// <param name="delegateTo">Set when the user is verified but its account's callout service decides (the result is then not final).</param>
    private AuthResult Decide(ConnectOptions connect, ClientAuthContext ctx, out AccountClaims? delegateTo)
    {
        delegateTo = null;
        ArgumentNullException.ThrowIfNull(connect);
        ArgumentNullException.ThrowIfNull(ctx);
        if (_userJwts.Decode(connect.Jwt) is not { } user) return AuthResult.Denied;
        var now = _time.GetUtcNow();
        if (user.Type != "user" || !Jwt.IsPublicKey(user.Subject, PrefixByte.User)) return AuthResult.Denied;
        if (user.IsExpired(now) || user.IsNotYetValid(now)) return AuthResult.Denied;
        if (user.AllowedConnectionTypes.Count > 0 && !user.AllowedConnectionTypes.Contains("STANDARD", StringComparer.Ordinal)) return AuthResult.Denied;
        if (!string.IsNullOrEmpty(user.IssuerAccount) && !Jwt.IsPublicKey(user.IssuerAccount, PrefixByte.Account)) return AuthResult.Denied;

        var account = resolver.Find(user.AccountKey);
        if (account is null || account.IsExpired(now) || !account.Vouches(user.Issuer)) return AuthResult.Denied;

        if (user.BearerToken)
        {
            if (account.DisallowBearer) return AuthResult.Denied;
        }
        else if (!NkeyVerifier.Verify(user.Subject, ctx.Nonce, connect.Sig))
        {
            return AuthResult.Denied;
        }
        if (account.IsRevoked(user.Subject, user.IssuedAt)) return AuthResult.Denied;
        if (!SourceAllowed(user.Src, ctx.RemoteEndPoint)) return AuthResult.Denied;
        if (!TimeWindows.Contains(user.Times, user.TimesLocation, now, out var windowEnd)) return AuthResult.Denied;

        var permissions = account.SigningKeys.TryGetValue(user.Issuer, out var scope) && scope is not null
            ? scope.Permissions
            : user.Permissions ?? account.DefaultPermissions;
        DateTimeOffset? expires = Earliest(Earliest(user.Expires > 0 ? DateTimeOffset.FromUnixTimeSeconds(user.Expires) : null,
            account.Expires > 0 ? DateTimeOffset.FromUnixTimeSeconds(account.Expires) : null), windowEnd);
        var clientPermissions = permissions is null ? null : new ClientPermissions(new PermissionRules(permissions), _time);
        if (account.ExternalAuth is not null)
        {
            // auth.go: every user of a delegating account but its auth_users goes to the callout service; the
            // auth_users themselves may not publish authorization requests.
            if (Callout.OperatorAuthCallout.Delegates(account, user))
            {
                delegateTo = account;
                return AuthResult.Denied;
            }
            clientPermissions = ClientPermissions.DenyPublish(clientPermissions, Callout.AuthorizationRequest.Subject, _time);
        }
        return AuthResult.Allowed(string.IsNullOrEmpty(user.Name) ? user.Subject : user.Name, clientPermissions, account.Subject, expires);
    }

    private static DateTimeOffset? Earliest(DateTimeOffset? a, DateTimeOffset? b) =>
        a is null ? b : b is null ? a : a < b ? a : b;

    /// <summary>server/auth.go validateSrc: no list = anywhere; else the client IP must be inside one CIDR (bad entries never match).</summary>
    private static bool SourceAllowed(List<string> cidrs, EndPoint? remote)
    {
        if (cidrs.Count == 0) return true;
        if (remote is not IPEndPoint ip) return false;
        var addr = ip.Address.IsIPv4MappedToIPv6 ? ip.Address.MapToIPv4() : ip.Address;
        foreach (var c in cidrs)
            if (IPNetwork.TryParse(c.Trim(), out var net) && net.Contains(addr)) return true;
        return false;
    }
}
