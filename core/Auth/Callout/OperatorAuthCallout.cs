using NatsBroker.Accounts;
using NatsBroker.Auth.Jwt;
using NatsBroker.Protocol;

namespace NatsBroker.Auth.Callout;

/// <summary>
/// Auth callout in operator mode (ADR-26; server/auth.go processClientOrLeafAuthentication with an account that
/// has external authorization, server/auth_callout.go processClientOrLeafCallout with trusted operators). An account
/// JWT whose <c>authorization</c> names <c>auth_users</c> delegates its other users: a client connects with a verified
/// user JWT of that account (a "sentinel", usually a bearer token), and the service subscribed in the account on
/// <c>$SYS.REQ.USER.AUTH</c> decides who it really is. The request goes to the account (subject: the account's key),
/// sealed for the account's <c>xkey</c> when set; the answer is checked by
/// <see cref="AuthorizationResponse.VerifyOperator"/> and places the user in the account that issued the returned
/// user JWT (the callout account or one of its <c>allowed_accounts</c>). A refusal, a bad answer or no answer within
/// the auth timeout is <c>Authorization Violation</c>; the reason goes to the log. Users authorized into the callout
/// account may not publish to <c>$SYS.REQ.USER.AUTH</c>.
/// </summary>
/// <param name="identity">The server nkey, made on first use (it costs start-up time).</param>
/// <param name="server">This server as requests describe it (its id is <paramref name="identity"/>'s key).</param>
public sealed class OperatorAuthCallout(AccountRegistry accounts, AccountResolver resolver, Func<ServerIdentity> identity, Func<CalloutServerInfo> server,
    TimeSpan timeout, Action<string> warn, TimeProvider? time = null)
{
    private readonly TimeProvider _time = time ?? TimeProvider.System;

    /// <summary>Whether a verified user JWT of <paramref name="account"/> is decided by the account's callout service.</summary>
    public static bool Delegates(AccountClaims account, UserClaims user) =>
        account.ExternalAuth is { } ext && !ext.AuthUsers.Contains(user.Subject, StringComparer.Ordinal);

    /// <summary>Starts the exchange; the returned request completes with the verdict (never blocks the caller).</summary>
    public PasswordHashingRequest Begin(IAuthenticator owner, ConnectOptions connect, ClientAuthContext ctx, AccountClaims account)
    {
        var request = PasswordHashingRequest.External(owner, connect, ctx);
        _ = RunAsync(request, connect, ctx, account);
        return request;
    }

    /// <summary>auth.go: an authorized user bound to the callout account may not publish authorization requests.</summary>
    public AuthResult InCalloutAccount(AuthResult r, AccountClaims callout) =>
        r.Success && r.Account == callout.Subject
            ? AuthResult.Allowed(r.User, ClientPermissions.DenyPublish(r.Permissions, AuthorizationRequest.Subject, _time), r.Account, r.Expires)
            : r;

    private async Task RunAsync(PasswordHashingRequest request, ConnectOptions connect, ClientAuthContext ctx, AccountClaims callout)
    {
        try
        {
            request.Complete(await DecideAsync(request, connect, ctx, callout).ConfigureAwait(false));
        }
        catch (Exception ex)
        {
            // Handed to the connection, which logs it and closes.
            request.Fail(ex);
        }
    }

    private async Task<AuthResult> DecideAsync(PasswordHashingRequest request, ConnectOptions connect, ClientAuthContext ctx, AccountClaims callout)
    {
        if (accounts.Find(callout.Subject) is not { } account)
        {
            warn($"No valid account \"{callout.Subject}\" for auth callout request: account missing");
            return AuthResult.Denied;
        }
        string? xkey = callout.ExternalAuth?.XKey;
        var id = identity();
        var answer = await CalloutExchange.AskAsync(account, id, server(), callout.Subject, xkey, timeout, connect, ctx, request, _time, warn)
            .ConfigureAwait(false);
        if (answer is null) return AuthResult.Denied;
        var grant = AuthorizationResponse.VerifyOperator(answer.Body, answer.UserNkey, id.PublicKey, callout, resolver.Find,
            answer.Sealed ? box => id.Open(box, xkey!) : null, _time.GetUtcNow(), out string error);
        if (grant is null)
        {
            warn(error);
            return AuthResult.Denied;
        }
        var user = grant.User;
        string name = user.Name.Length > 0 ? user.Name : user.Subject;
        return InCalloutAccount(AuthResult.Allowed(name, ClientPermissions.Create(grant.Permissions, _time), grant.Account, grant.Expires), callout);
    }
}
