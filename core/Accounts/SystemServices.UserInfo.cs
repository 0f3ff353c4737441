using System.Collections.Concurrent;
using NatsBroker.Routing;
using NatsBroker.Server;
using NatsBroker.Subscriptions;

namespace NatsBroker.Accounts;

/// <summary>
/// <c>$SYS.REQ.USER.INFO</c> (nats-server 2.10, events.go userInfoReq): any client, in any account, asks who it is
/// and gets its user, account, permissions and time left. nats-server gives every account a service import of the
/// subject into the system account and learns the requester from the Nats-Request-Info header; here each account's
/// router has an internal subscription on the subject, and the publishing connection is the requester (so the
/// client still needs publish permission for the subject, as there). The answer is published in the requester's
/// account, to its reply subject.
/// </summary>
public sealed partial class SystemServices
{
    public const string UserInfoSubject = "$SYS.REQ.USER.INFO";
    /// <summary>
    /// events.go userDirectReqSubj: the system account's own subject, which nats-server's per-account imports map
    /// <c>$SYS.REQ.USER.INFO</c> to. Its account token is not read: the answer is about the requester, so a system
    /// account user publishing it directly learns about itself, as in nats-server.
    /// </summary>
    public const string UserInfoDirectSubject = "$SYS.REQ.USER.*.INFO";
    private readonly ConcurrentDictionary<Account, Subscription> _userInfoSubs = new();

    private void SubscribeUserInfoInEveryAccount()
    {
        _subs.Add(_system.Router.SubscribeInternal(UserInfoDirectSubject, null, (Subscription _, in InternalMessage m) => QueueUserInfo(_system, m)));
        // Hook first, then sweep: an account added in between is seen twice and subscribed once.
        _server.Accounts.Added += SubscribeUserInfo;
        foreach (var account in _server.Accounts.All) SubscribeUserInfo(account);
    }

    private void SubscribeUserInfo(Account account)
    {
        if (_userInfoSubs.ContainsKey(account)) return;
        var sub = account.Router.SubscribeInternal(UserInfoSubject, null, (Subscription _, in InternalMessage m) => QueueUserInfo(account, m));
        if (!_userInfoSubs.TryAdd(account, sub)) account.Router.Unsubscribe(sub);
    }

    private void QueueUserInfo(Account account, in InternalMessage m)
    {
        if (m.Reply.IsEmpty || m.Origin is not ClientConnection client) return;
        var reply = m.Reply.ToArray();
        Enqueue(() => AnswerUserInfo(account, client, reply));
    }

    private void AnswerUserInfo(Account account, ClientConnection c, byte[] reply)
    {
        var connect = c.Connect;
        string user;
        string? userName = null;
        if (connect?.Jwt is { Length: > 0 } jwt && Auth.Jwt.Jwt.TryDecode(jwt, out _) is { } payload)
        {
            // JWT users are known by their public key; the JWT's name is their name tag (client.go getRawAuthUser, ci.NameTag).
            var claims = new Auth.Jwt.UserClaims(payload, jwt);
            user = claims.Subject;
            userName = claims.Name.Length > 0 ? claims.Name : null;
        }
        else
        {
            user = !string.IsNullOrEmpty(connect?.Nkey) ? connect.Nkey : c.AuthorizedUser ?? connect?.User ?? connect?.AuthToken ?? "";
        }
        // The requester's own account (a request may reach this account through an import); Account.getNameTag: the
        // account JWT's name, else the account name.
        var own = c.Account;
        string accountName = _server.Resolver?.Find(own.Name) is { Name.Length: > 0 } accountClaims ? accountClaims.Name : own.Name;
        TimeSpan? expires = c.CredentialsExpire is { } at ? at - DateTimeOffset.UtcNow : null;
        var answer = _json.UserInfo(user, own.Name, accountName, userName, c.Permissions, expires);
        account.Router.PublishInternal(reply, default, default, answer);
    }

    private void UnsubscribeUserInfo()
    {
        _server.Accounts.Added -= SubscribeUserInfo;
        foreach (var (account, sub) in _userInfoSubs) account.Router.Unsubscribe(sub);
        _userInfoSubs.Clear();
    }
}
