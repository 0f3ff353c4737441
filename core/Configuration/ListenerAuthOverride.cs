namespace NatsBroker.Configuration;

/// <summary>
/// A listener's own simple auth, from <c>websocket { authorization { user, password, token, timeout } no_auth_user }</c>
/// (server/opts.go parseWebsocket and parseSimpleAuth). nats-server calls it an override (websocket.go
/// wsConfigAuth): when the block names a user, a token or a no_auth_user, that listener's clients are checked against
/// these instead of the top-level user/password/token/no_auth_user (auth.go processClientOrLeafAuthentication); the
/// top-level users and nkeys still apply to them, and the listener requires auth even when the top level does not.
/// Null in <see cref="ServerOptions"/> when there is no override.
/// </summary>
public sealed record ListenerAuthOverride(string? Username, string? Password, string? Token, string? NoAuthUser, TimeSpan? AuthTimeout)
{
    /// <summary>websocket.go wsConfigAuth: any of user, token or no_auth_user makes it an override (a password or timeout alone does not).</summary>
    public bool IsOverride => !string.IsNullOrEmpty(Username) || !string.IsNullOrEmpty(Token) || !string.IsNullOrEmpty(NoAuthUser);
}
