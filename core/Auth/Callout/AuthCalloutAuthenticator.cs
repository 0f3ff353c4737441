using NatsBroker.Accounts;
using NatsBroker.Configuration;
using NatsBroker.Protocol;

namespace NatsBroker.Auth.Callout;

/// <summary>
/// Auth callout in config mode (ADR-26; server/auth.go processClientOrLeafAuthentication's deferred callout and
/// server/auth_callout.go processClientOrLeafCallout). The configured users are checked as usual
/// (<see cref="OptionsAuthenticator"/>); then every client whose user (nkey, name or token) is not in
/// <c>auth_users</c> is decided by the service instead, whether or not its credentials matched a configured user
/// (with <c>allowed_accounts</c>, only those whose configured user is in <c>$G</c> or one of those accounts):
/// <list type="number">
/// <item>a fresh user nkey is made; the answer must be about it (no replays);</item>
/// <item>an authorization request JWT signed by the server nkey (<see cref="AuthorizationRequest"/>) is published to
/// <c>$SYS.REQ.USER.AUTH</c> in the callout account with a one-off reply subject, sealed for the service's xkey when
/// one is configured (header <c>Nats-Server-Xkey</c>);</item>
/// <item>the answer is checked (<see cref="AuthorizationResponse"/>): the user JWT's permissions, name and expiry
/// apply, and its <c>aud</c> is the account the user is placed in. A refusal, a bad answer or no answer within the
/// auth timeout is <c>Authorization Violation</c>; the reason goes to the log.</item>
/// </list>
/// Users that end up in the callout account may not publish to <c>$SYS.REQ.USER.AUTH</c> (a publish deny is merged
/// into their permissions). Nothing here blocks a thread: the connection parks its read loop on the request's task
/// (<see cref="Begin"/>), which completes from the reply subscription or the timeout.
/// </summary>
public sealed class AuthCalloutAuthenticator : IAuthenticator
{
    private readonly AuthCalloutOptions _callout;
    private readonly OptionsAuthenticator _inner;
    private readonly AccountRegistry _accounts;
    private readonly ServerIdentity _identity;
    private readonly CalloutServerInfo _server;
    private readonly TimeSpan _timeout;
    private readonly Action<string> _warn;
    private readonly TimeProvider _time;
    private readonly HashSet<string> _authUsers;
    private readonly HashSet<string> _allowedAccounts;

    public AuthCalloutAuthenticator(AuthCalloutOptions callout, OptionsAuthenticator inner, AccountRegistry accounts, ServerIdentity identity,
        CalloutServerInfo server, TimeSpan timeout, Action<string> warn, TimeProvider? time = null)
    {
        ArgumentNullException.ThrowIfNull(callout);
        _callout = callout;
        _inner = inner;
        _accounts = accounts;
        _identity = identity;
        _server = server;
        _timeout = timeout;
        _warn = warn;
        _time = time ?? TimeProvider.System;
        _authUsers = new HashSet<string>(callout.AuthUsers, StringComparer.Ordinal);
        _allowedAccounts = new HashSet<string>(callout.AllowedAccounts, StringComparer.Ordinal);
    }

    /// <summary>Clients must authenticate: through auth_users or the service.</summary>
    public bool AuthRequired => true;
    public bool NonceRequired => _inner.NonceRequired;

    /// <summary>auth_users are decided by the configuration (bcrypt on the hashing worker); nobody else gets here.</summary>
    public AuthResult Authenticate(ConnectOptions connect, ClientAuthContext ctx) =>
        IsAuthUser(connect) ? InCalloutAccount(_inner.Authenticate(connect, ctx)) : AuthResult.Denied;

    public AuthResult? TryAuthenticateWithoutHashing(ConnectOptions connect, ClientAuthContext ctx)
    {
        if (IsAuthUser(connect)) return _inner.TryAuthenticateWithoutHashing(connect, ctx) is { } r ? InCalloutAccount(r) : null;
        if (_allowedAccounts.Count > 0 && _inner.TryAuthenticateWithoutHashing(connect, ctx) is { } local && !Delegated(local))
            return InCalloutAccount(local);
        return null; // the service decides: Begin
    }

    /// <summary>No CONNECT, nothing to describe to the service: only a no_auth_user listed in auth_users gets in.</summary>
    public AuthResult AuthenticateWithoutConnect(ClientAuthContext ctx) =>
        _inner.NoAuthUser is { } u && _authUsers.Contains(u) ? InCalloutAccount(_inner.AuthenticateWithoutConnect(ctx)) : AuthResult.Denied;

    public PasswordHashingRequest Begin(PasswordHashingQueue hashing, ConnectOptions connect, ClientAuthContext ctx)
    {
        ArgumentNullException.ThrowIfNull(hashing);
        if (IsAuthUser(connect)) return hashing.Submit(this, connect, ctx);
        var request = PasswordHashingRequest.External(this, connect, ctx);
        _ = CallOutAsync(hashing, request, connect, ctx);
        return request;
    }

    private bool IsAuthUser(ConnectOptions connect) => _authUsers.Contains(AuthorizationRequest.RawUser(connect));

    /// <summary>auth.go: with allowed_accounts, a configured user bound outside <c>$G</c> and those accounts keeps its own verdict.</summary>
    private bool Delegated(AuthResult local) =>
        _allowedAccounts.Count == 0 || !local.Success || local.Account is null or Account.GlobalName || _allowedAccounts.Contains(local.Account);

    /// <summary>auth.go: an authorized user bound to the callout account may not publish authorization requests.</summary>
    private AuthResult InCalloutAccount(AuthResult r) =>
        r.Success && (r.Account ?? Account.GlobalName) == _callout.Account
            ? AuthResult.Allowed(r.User, ClientPermissions.DenyPublish(r.Permissions, AuthorizationRequest.Subject, _time), r.Account, r.Expires)
            : r;

    private async Task CallOutAsync(PasswordHashingQueue hashing, PasswordHashingRequest request, ConnectOptions connect, ClientAuthContext ctx)
    {
        try
        {
            if (_allowedAccounts.Count > 0)
            {
                var local = _inner.TryAuthenticateWithoutHashing(connect, ctx);
                if (local is null)
                {
                    // The connection's auth timer does not cut this request (BoundsItsOwnWait): bound the hashing too.
                    var hashed = hashing.Submit(_inner, connect, ctx);
                    try
                    {
                        local = await hashed.Result.WaitAsync(_timeout, _time).ConfigureAwait(false);
                    }
                    catch (TimeoutException)
                    {
                        hashed.Abandon();
                        request.Complete(AuthResult.Denied);
                        return;
                    }
                }
                if (local is null)
                {
                    request.Abandon(); // the connection went away, or the server is stopping
                    return;
                }
                if (!Delegated(local))
                {
                    request.Complete(InCalloutAccount(local));
                    return;
                }
            }
            request.Complete(await DecideAsync(request, connect, ctx).ConfigureAwait(false));
        }
        catch (Exception ex)
        {
            // Handed to the connection, which logs it and closes.
            request.Fail(ex);
        }
    }

    /// <summary>One exchange with the service (<see cref="CalloutExchange"/>), then the answer checked as config mode checks it.</summary>
    private async Task<AuthResult> DecideAsync(PasswordHashingRequest request, ConnectOptions connect, ClientAuthContext ctx)
    {
        var account = _accounts.Find(_callout.Account);
        if (account is null)
        {
            _warn($"No valid account \"{_callout.Account}\" for auth callout request: account missing");
            return AuthResult.Denied;
        }
        var answer = await CalloutExchange.AskAsync(account, _identity, _server, _callout.Issuer, _callout.XKey, _timeout, connect, ctx, request, _time, _warn)
            .ConfigureAwait(false);
        if (answer is null) return AuthResult.Denied;
        var grant = AuthorizationResponse.Verify(answer.Body, answer.UserNkey, _identity.PublicKey, _callout.Issuer, account.Name,
            name => _accounts.Find(name) is not null, answer.Sealed ? box => _identity.Open(box, _callout.XKey!) : null, _time.GetUtcNow(), out string error);
        if (grant is null)
        {
            _warn(error);
            return AuthResult.Denied;
        }
        var user = grant.User;
        var permissions = ClientPermissions.Create(user.Permissions, _time);
        // server/auth_callout.go: the answer's name, when given, replaces the user name.
        string? name = user.Name.Length > 0 ? user.Name : NullIfEmpty(AuthorizationRequest.RawUser(connect));
        return InCalloutAccount(AuthResult.Allowed(name, permissions, grant.Account, grant.Expires));
    }

    private static string? NullIfEmpty(string s) => s.Length == 0 ? null : s;
}
