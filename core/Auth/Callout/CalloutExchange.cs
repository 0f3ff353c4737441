using System.Security.Cryptography;
using System.Text;
using NATS.NKeys;
using NatsBroker.Accounts;
using NatsBroker.Protocol;
using NatsBroker.Routing;
using NatsBroker.Subscriptions;

namespace NatsBroker.Auth.Callout;

/// <summary>The service's raw answer (still to be verified), the fresh user nkey it must be about, and whether the request was sealed.</summary>
internal sealed record CalloutAnswer(byte[] Body, string UserNkey, bool Sealed);

/// <summary>
/// One exchange with an auth callout service, the same in config and operator mode (server/auth_callout.go
/// processClientOrLeafCallout): a fresh user nkey, an authorization request JWT signed by the server nkey (subject: the
/// configured issuer, or the callout account's key in operator mode) published to <c>$SYS.REQ.USER.AUTH</c> in the
/// callout account with a one-off reply subject, sealed for the service's xkey when one is set (header
/// <c>Nats-Server-Xkey</c>); then the answer, or nothing when the auth timeout passes or the connection goes away.
/// </summary>
internal static class CalloutExchange
{
    private const string InboxAlphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

    /// <returns>The answer; null when none came in time (logged through <paramref name="warn"/>) or the connection closed.</returns>
    public static async Task<CalloutAnswer?> AskAsync(Account account, ServerIdentity identity, CalloutServerInfo server, string requestSubject,
        string? xkey, TimeSpan timeout, ConnectOptions connect, ClientAuthContext ctx, PasswordHashingRequest request, TimeProvider time, Action<string> warn)
    {
        using var userKey = KeyPair.CreatePair(PrefixByte.User);
        string userNkey = userKey.GetPublicKey();
        string reply = "$SYS._INBOX." + RandomNumberGenerator.GetString(InboxAlphabet, 22);
        var answer = new TaskCompletionSource<byte[]>(TaskCreationOptions.RunContinuationsAsynchronously);
        // Runs on the service's publishing thread: copy the body and let the continuation do the checking.
        var sub = account.Router.SubscribeInternal(reply, null, (Subscription _, in InternalMessage m) =>
            answer.TrySetResult(System.Buffers.BuffersExtensions.ToArray(m.Body)));
        try
        {
            var now = time.GetUtcNow();
            bool seal = xkey is not null;
            var claims = AuthorizationRequest.Claims(server, identity.PublicKey, requestSubject, userNkey, now, timeout, connect, ctx,
                seal ? identity.CurvePublicKey : null);
            byte[] payload = Encoding.ASCII.GetBytes(identity.SignJwt(claims));
            byte[] headers = [];
            if (seal)
            {
                payload = identity.Seal(payload, xkey!);
                headers = Encoding.ASCII.GetBytes($"NATS/1.0\r\n{AuthorizationRequest.XKeyHeader}: {identity.CurvePublicKey}\r\n\r\n");
            }
            account.Router.PublishInternal(Encoding.UTF8.GetBytes(AuthorizationRequest.Subject), Encoding.ASCII.GetBytes(reply), headers, payload);

            // The connection closing abandons the request: stop waiting then too.
            using var timer = new CancellationTokenSource();
            var expired = Task.Delay(timeout, time, timer.Token);
            var first = await Task.WhenAny(answer.Task, request.Result, expired).ConfigureAwait(false);
            await timer.CancelAsync().ConfigureAwait(false);
            if (first != answer.Task)
            {
                if (first == expired) warn($"Authorization callout response not received in time on account \"{account.Name}\"");
                return null;
            }
            return new CalloutAnswer(await answer.Task.ConfigureAwait(false), userNkey, seal);
        }
        finally
        {
            account.Router.Unsubscribe(sub);
        }
    }
}
