using System.Security.Cryptography;
using System.Text;
using NATS.NKeys;
using NatsBroker.Accounts;
using NatsBroker.Configuration;
using NatsBroker.Protocol;
using NatsBroker.Routing;
using NatsBroker.Subscriptions;

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

    /// <summary>One exchange with the service: subscribe the reply, publish the request, wait for the answer or the timeout.</summary>
    private async Task<AuthResult> DecideAsync(PasswordHashingRequest request, ConnectOptions connect, ClientAuthContext ctx)
    {
        var account = _accounts.Find(_callout.Account);
        if (account is null)
        {
            _warn($"No valid account \"{_callout.Account}\" for auth callout request: account missing");
            return AuthResult.Denied;
        }
        using var userKey = KeyPair.CreatePair(PrefixByte.User);
        string userNkey = userKey.GetPublicKey();
        string reply = "$SYS._INBOX." + RandomNumberGenerator.GetString(InboxAlphabet, 22);
        var answer = new TaskCompletionSource<byte[]>(TaskCreationOptions.RunContinuationsAsynchronously);
        // Runs on the service's publishing thread: copy the body and let the continuation do the checking.
        var sub = account.Router.SubscribeInternal(reply, null, (Subscription _, in InternalMessage m) =>
            answer.TrySetResult(System.Buffers.BuffersExtensions.ToArray(m.Body)));
        try
        {
            var now = _time.GetUtcNow();
            bool seal = _callout.XKey is not null;
            var claims = AuthorizationRequest.Claims(_server, _identity.PublicKey, _callout.Issuer, userNkey, now, _timeout, connect, ctx,
                seal ? _identity.CurvePublicKey : null);
            byte[] payload = Encoding.ASCII.GetBytes(_identity.SignJwt(claims));
            byte[] headers = [];
            if (seal)
            {
                payload = _identity.Seal(payload, _callout.XKey!);
                headers = Encoding.ASCII.GetBytes($"NATS/1.0\r\n{AuthorizationRequest.XKeyHeader}: {_identity.CurvePublicKey}\r\n\r\n");
            }
            account.Router.PublishInternal(Encoding.UTF8.GetBytes(AuthorizationRequest.Subject), Encoding.ASCII.GetBytes(reply), headers, payload);

            // The connection closing abandons the request: stop waiting then too.
            using var timer = new CancellationTokenSource();
            var timeout = Task.Delay(_timeout, _time, timer.Token);
            var first = await Task.WhenAny(answer.Task, request.Result, timeout).ConfigureAwait(false);
            await timer.CancelAsync().ConfigureAwait(false);
            if (first != answer.Task)
            {
                if (first == timeout)
                    _warn($"Authorization callout response not received in time on account \"{account.Name}\"");
                return AuthResult.Denied;
            }
            byte[] body = await answer.Task.ConfigureAwait(false);
            var grant = AuthorizationResponse.Verify(body, userNkey, _identity.PublicKey, _callout.Issuer, account.Name,
                name => _accounts.Find(name) is not null, seal ? box => _identity.Open(box, _callout.XKey!) : null, _time.GetUtcNow(), out string error);
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
        finally
        {
            account.Router.Unsubscribe(sub);
        }
    }

    private const string InboxAlphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

    private static string? NullIfEmpty(string s) => s.Length == 0 ? null : s;
}
