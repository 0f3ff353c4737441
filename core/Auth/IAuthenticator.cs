using System.Net;
using System.Security.Cryptography.X509Certificates;
using NatsBroker.Protocol;

namespace NatsBroker.Auth;

/// <summary>
/// Decides whether a client's CONNECT is accepted, and as whom. The connection calls it once, when CONNECT
/// arrives (nats-server: processConnect → checkAuthentication), and on failure sends
/// <c>-ERR 'Authorization Violation'</c> and closes.
/// <para>The seam is meant for more than <see cref="OptionsAuthenticator"/>: an NKey authenticator verifies
/// <see cref="ConnectOptions.Sig"/> over <see cref="ClientAuthContext.Nonce"/> with <see cref="ConnectOptions.Nkey"/>;
/// a JWT/operator authenticator decodes <see cref="ConnectOptions.Jwt"/>, resolves the account and fills
/// <see cref="AuthResult.Account"/> and <see cref="AuthResult.Expires"/>; a composite tries them in nats-server's
/// order (custom, JWT, nkeys, users, token, user/password). Implementations must be thread-safe: many connections
/// authenticate at once.</para>
/// </summary>
public interface IAuthenticator
{
    /// <summary>Whether clients must authenticate (INFO auth_required; ops before CONNECT are violations).</summary>
    bool AuthRequired { get; }

    /// <summary>Whether INFO carries a nonce for the client to sign (nkey users configured).</summary>
    bool NonceRequired => false;

    /// <summary>The full decision. May be CPU-heavy (bcrypt): connections call it on <see cref="PasswordHashingQueue"/>,
    /// never on a socket thread.</summary>
    AuthResult Authenticate(ConnectOptions connect, ClientAuthContext ctx);

    /// <summary>The same decision as <see cref="Authenticate"/> when it is cheap (no hashing needed); null when it
    /// needs CPU-heavy work, which the caller then runs through <see cref="Authenticate"/> on a hashing worker.</summary>
    AuthResult? TryAuthenticateWithoutHashing(ConnectOptions connect, ClientAuthContext ctx);

    /// <summary>
    /// Starts the full decision when <see cref="TryAuthenticateWithoutHashing"/> could not make it: by default
    /// <see cref="Authenticate"/> on a hashing worker; an auth callout sends its request and completes the returned
    /// request when the service answers. Never blocks the caller.
    /// </summary>
    PasswordHashingRequest Begin(PasswordHashingQueue hashing, ConnectOptions connect, ClientAuthContext ctx) => hashing.Submit(this, connect, ctx);

    /// <summary>A client's first op is not CONNECT: nats-server admits it as no_auth_user when one is set.</summary>
    AuthResult AuthenticateWithoutConnect(ClientAuthContext ctx);
}

/// <summary>What the server knows about the connection apart from its CONNECT.</summary>
public sealed class ClientAuthContext
{
    /// <summary>Server-assigned client id (INFO client_id).</summary>
    public ulong ClientId { get; init; }
    public EndPoint? RemoteEndPoint { get; init; }
    /// <summary>The nonce sent in INFO, when one was (needed to verify NKey signatures).</summary>
    public string? Nonce { get; init; }
    /// <summary>Verified TLS client certificate, for future certificate-mapped users (tls verify_and_map).</summary>
    public X509Certificate2? ClientCertificate { get; init; }
    /// <summary>
    /// The client came through a listener with its own simple auth (<c>websocket { authorization {} }</c>): its
    /// user/password/token/no_auth_user replace the top-level ones for this client (nats-server's auth override).
    /// </summary>
    public Configuration.ListenerAuthOverride? Override { get; init; }
}

/// <summary>The outcome of authentication.</summary>
public sealed class AuthResult
{
    private AuthResult(bool success, string? user, ClientPermissions? permissions, string? account, DateTimeOffset? expires)
    {
        Success = success;
        User = user;
        Permissions = permissions;
        Account = account;
        Expires = expires;
    }

    public static AuthResult Denied { get; } = new(false, null, null, null, null);

    /// <summary>Accepted; <paramref name="permissions"/> must be a fresh per-connection object (or null = allow all).</summary>
    public static AuthResult Allowed(string? user = null, ClientPermissions? permissions = null, string? account = null, DateTimeOffset? expires = null) =>
        new(true, user, permissions, account, expires);

    public bool Success { get; }
    /// <summary>Authenticated user name (null for token or no-auth access).</summary>
    public string? User { get; }
    /// <summary>This connection's permissions; null = no restrictions.</summary>
    public ClientPermissions? Permissions { get; }
    /// <summary>Account to bind to; null = the global account (the only one options-based auth knows).</summary>
    public string? Account { get; }
    /// <summary>When the credentials stop being valid (JWT expiry); null = never.</summary>
    public DateTimeOffset? Expires { get; }
}
