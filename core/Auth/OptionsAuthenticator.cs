using NatsBroker.Configuration;
using NatsBroker.Protocol;

namespace NatsBroker.Auth;

/// <summary>
/// Authentication from the server options, following server/auth.go processClientOrLeafAuthentication for
/// CLIENT connections (checked against nats-server 2.9.10):
/// <list type="number">
/// <item>No users, no user/password, no token configured: everyone is accepted, whatever they send.</item>
/// <item>A users list: if <c>no_auth_user</c> is set and the CONNECT carries no user, no password and no token,
/// the client is treated as having sent that user's name <em>and its configured password</em>. A user name
/// that is present must be in the list (unknown = violation); then the password is compared (plain or bcrypt).
/// Quirk kept: if the no_auth_user's password is a bcrypt hash, the hash is compared against itself and the
/// CONNECT is rejected, exactly as nats-server does (its non-CONNECT path, <see cref="AuthenticateWithoutConnect"/>,
/// does accept).</item>
/// <item>Otherwise (no user matched): with a token configured, the CONNECT's auth_token must equal it (plain or
/// bcrypt); else with a single user configured, user must be equal and pass must compare.</item>
/// <item>Anything else is rejected.</item>
/// </list>
/// A client from a listener with its own simple auth (<see cref="ClientAuthContext.Override"/>: the websocket block's
/// <c>authorization</c>/<c>no_auth_user</c>) is checked with that listener's user/password/token/no_auth_user instead
/// of the top-level ones, and must authenticate even when the top level requires nothing (auth.go: <c>ao</c>).
/// Later entries of the users list with the same name replace earlier ones (a Go map). Each successful
/// authentication gets a fresh <see cref="ClientPermissions"/> built from rules compiled once per user.
/// </summary>
public sealed class OptionsAuthenticator : IAuthenticator
{
    private readonly Dictionary<string, UserEntry> _users = new(StringComparer.Ordinal);
    /// <summary>NKey users by public key (their <see cref="UserEntry.Name"/> is the key).</summary>
    private readonly Dictionary<string, UserEntry> _nkeys = new(StringComparer.Ordinal);
    private readonly string? _username;
    private readonly string? _password;
    private readonly string? _token;
    private readonly TimeProvider? _time;

    private sealed record UserEntry(string Name, string Password, PermissionRules? Rules, string? Account);

    public OptionsAuthenticator(ServerOptions options, PasswordVerifier? verifier = null, TimeProvider? time = null)
    {
        ArgumentNullException.ThrowIfNull(options);
        foreach (var u in options.Users)
        {
            var rules = u.Permissions is null ? null : new PermissionRules(u.Permissions);
            if (u.Nkey is not null) _nkeys[u.Nkey] = new UserEntry(u.Nkey, "", rules, u.Account);
            else _users[u.User] = new UserEntry(u.User, u.Password ?? "", rules, u.Account);
        }
        _username = string.IsNullOrEmpty(options.Username) ? null : options.Username;
        _password = options.Password ?? "";
        _token = string.IsNullOrEmpty(options.Authorization) ? null : options.Authorization;
        NoAuthUser = string.IsNullOrEmpty(options.NoAuthUser) ? null : options.NoAuthUser;
        AuthRequired = _users.Count > 0 || _nkeys.Count > 0 || _username is not null || _token is not null;
        Verifier = verifier ?? new PasswordVerifier(time: time);
        _time = time;
    }

    /// <summary>INFO auth_required; when false <see cref="Authenticate"/> accepts everyone.</summary>
    public bool AuthRequired { get; }
    /// <summary>NKey users exist: INFO carries a nonce to sign.</summary>
    public bool NonceRequired => _nkeys.Count > 0;
    public string? NoAuthUser { get; }
    public PasswordVerifier Verifier { get; }

    public AuthResult Authenticate(ConnectOptions connect, ClientAuthContext ctx) => DecideNkey(connect, ctx) ?? Decide(connect, ctx, hashing: true)!;

    public AuthResult? TryAuthenticateWithoutHashing(ConnectOptions connect, ClientAuthContext ctx) => DecideNkey(connect, ctx) ?? Decide(connect, ctx, hashing: false);

    /// <summary>The no_auth_user for this client: its listener's when the listener overrides auth (possibly none).</summary>
    private string? NoAuthUserFor(ClientAuthContext ctx) => ctx.Override is { } o ? NullIfEmpty(o.NoAuthUser) : NoAuthUser;

    private static string? NullIfEmpty(string? s) => string.IsNullOrEmpty(s) ? null : s;

    /// <summary>
    /// NKey users (server/auth.go): a CONNECT naming an nkey must name a configured one and sign the nonce; with
    /// no credentials at all, a no_auth_user that is an nkey user is admitted without a signature. Null: not an
    /// nkey decision, the user/token rules decide.
    /// </summary>
    private AuthResult? DecideNkey(ConnectOptions connect, ClientAuthContext ctx)
    {
        ArgumentNullException.ThrowIfNull(connect);
        ArgumentNullException.ThrowIfNull(ctx);
        if (_nkeys.Count == 0) return null;
        if (!string.IsNullOrEmpty(connect.Nkey))
        {
            if (!_nkeys.TryGetValue(connect.Nkey, out var nk)) return AuthResult.Denied;
            return NkeyVerifier.Verify(nk.Name, ctx.Nonce, connect.Sig)
                ? AuthResult.Allowed(nk.Name, CreatePermissions(nk), nk.Account)
                : AuthResult.Denied;
        }
        string? noAuthUser = NoAuthUserFor(ctx);
        if (noAuthUser is not null && string.IsNullOrEmpty(connect.User) && string.IsNullOrEmpty(connect.Pass)
            && string.IsNullOrEmpty(connect.AuthToken) && !_users.ContainsKey(noAuthUser) && _nkeys.TryGetValue(noAuthUser, out var noAuth))
            return AuthResult.Allowed(noAuth.Name, CreatePermissions(noAuth), noAuth.Account);
        return null;
    }

    /// <summary>The decision; with <paramref name="hashing"/> false, null when a bcrypt computation is needed.</summary>
    private AuthResult? Decide(ConnectOptions connect, ClientAuthContext ctx, bool hashing)
    {
        ArgumentNullException.ThrowIfNull(connect);
        var listener = ctx.Override;
        if (!AuthRequired && listener is null) return AuthResult.Allowed();
        string? noAuthUser = NoAuthUserFor(ctx);
        string? username = listener is null ? _username : NullIfEmpty(listener.Username);
        string password = listener is null ? _password ?? "" : listener.Password ?? "";
        string? token = listener is null ? _token : NullIfEmpty(listener.Token);

        string? user = connect.User;
        string? pass = connect.Pass;
        UserEntry? entry = null;
        if (_users.Count > 0)
        {
            if (noAuthUser is not null && string.IsNullOrEmpty(user) && string.IsNullOrEmpty(pass)
                && string.IsNullOrEmpty(connect.AuthToken) && _users.TryGetValue(noAuthUser, out var noAuth))
            {
                user = noAuth.Name;
                pass = noAuth.Password;
            }
            if (!string.IsNullOrEmpty(user))
            {
                if (!_users.TryGetValue(user, out entry)) return AuthResult.Denied;
            }
        }

        if (entry is not null)
        {
            return Compare(entry.Password, pass, entry.Name, hashing) switch
            {
                true => AuthResult.Allowed(entry.Name, CreatePermissions(entry), entry.Account),
                false => AuthResult.Denied,
                null => null,
            };
        }
        if (token is not null)
        {
            return Compare(token, connect.AuthToken, null, hashing) switch
            {
                true => AuthResult.Allowed(),
                false => AuthResult.Denied,
                null => null,
            };
        }
        if (username is not null)
        {
            if (!string.Equals(username, connect.User, StringComparison.Ordinal)) return AuthResult.Denied;
            return Compare(password, connect.Pass, username, hashing) switch
            {
                true => AuthResult.Allowed(username),
                false => AuthResult.Denied,
                null => null,
            };
        }
        return AuthResult.Denied;
    }

    private bool? Compare(string? serverPassword, string? clientPassword, string? user, bool hashing) =>
        hashing ? Verifier.Compare(serverPassword, clientPassword, user) : Verifier.TryCompareWithoutHashing(serverPassword, clientPassword, user);

    /// <summary>
    /// The client's first protocol op is not CONNECT while auth is required (server/parser.go): accepted as the
    /// no_auth_user, without any password check, when one is configured and exists; otherwise an
    /// Authorization Violation. (Such a client also keeps the default CONNECT options, so verbose is on.)
    /// </summary>
    public AuthResult AuthenticateWithoutConnect(ClientAuthContext ctx)
    {
        if (!AuthRequired) return AuthResult.Allowed();
        if (NoAuthUser is not null && (_users.TryGetValue(NoAuthUser, out var entry) || _nkeys.TryGetValue(NoAuthUser, out entry)))
            return AuthResult.Allowed(entry.Name, CreatePermissions(entry), entry.Account);
        return AuthResult.Denied;
    }

    private ClientPermissions? CreatePermissions(UserEntry entry) =>
        entry.Rules is null ? null : new ClientPermissions(entry.Rules, _time);
}
