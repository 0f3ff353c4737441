using System.Net.Sockets;
using System.Runtime.InteropServices;
using System.Security.Cryptography;
using System.Text;
using NatsBroker.Auth;
using NatsBroker.Contracts.Gateways;
using NatsBroker.Connections;
using NatsBroker.Protocol;

namespace NatsBroker.Server;

/// <summary>
/// Connections relayed by a trusted gateway (gateways/README.md "The link"). The trust model is nats-server
/// 2.12's trusted protocol-aware proxies (ADR-55, server/auth.go proxyCheck): when proxies are trusted, INFO
/// carries a per-connection nonce; a proxy signs it with its nkey and puts the signature in CONNECT as
/// <c>proxy_sig</c>. A valid signature makes this connection the end user's: our extension <c>proxy_client</c>
/// (<see cref="ProxiedClient"/>) then supplies the end user's address and TLS state, shown in /connz, and
/// under <c>verify_and_map</c> the certificate identity that becomes the user. Over the Unix socket the peer's
/// uid (SO_PEERCRED) must also be ours or root's, so another local user cannot act as a gateway.
/// </summary>
public sealed partial class ClientConnection
{
    /// <summary>Public nkey of the trusted proxy (gateway) this connection came through; null when direct.</summary>
    public string? ProxyKey { get; private set; }

    /// <summary>What the trusted gateway reported about the end user (null when direct).</summary>
    public ProxiedClient? ProxiedClient { get; private set; }

    /// <summary>
    /// The websocket block's own auth when this client came through the websocket gateway (a verified proxy), as
    /// nats-server applies <c>websocket { authorization }</c> to its WebSocket clients; null otherwise.
    /// </summary>
    private Configuration.ListenerAuthOverride? ListenerAuthOverride =>
        ProxiedClient is { Gateway: "websocket" } ? _server.Options.WebSocketAuth : null;

    /// <summary>Whether any proxy (gateway) is trusted, so INFO must carry a nonce for it to sign.</summary>
    private static bool TrustsProxies(NatsServer server) => server.Options.TrustedProxies.Count > 0 || TrustedProxyKeys.Any;

    /// <summary>
    /// Checks <c>proxy_sig</c> (ADR-55) and applies <c>proxy_client</c>. Returns false when the signature is present
    /// but not trusted: the client gets the usual Authorization Violation (ADR-55: the same nondescript error).
    /// Without trusted proxies the fields are ignored, as nats-server ignores proxy_sig then.
    /// </summary>
    private bool ApplyProxy(ConnectOptions opts)
    {
        if (opts.ProxySig is not { Length: > 0 } sig || Nonce is null || !TrustsProxies(_server)) return true;
        string? key = VerifyProxySignature(sig, Nonce);
        if (key is null || !PeerMayBeProxy())
        {
            _server.Log.AuthFailed(Id, RemoteIp, "proxy is not trusted");
            SendErrorAndClose(ErrorMessages.AuthorizationViolation, CloseReason.ProxyNotTrusted);
            return false;
        }
        ProxyKey = key;
        if (opts.ProxyClient is not { } client) return true;
        ProxiedClient = client;
        if (!string.IsNullOrEmpty(client.Ip))
        {
            RemoteIp = client.Ip;
            RemotePort = client.Port;
        }
        if (client.NoAuthUser is { Length: > 0 } noAuthUser) ApplyGatewayNoAuthUser(opts, noAuthUser);
        if (client.TlsMapIdentities is { } identities && !MapCertificateUser(opts, identities))
        {
            _server.Log.AuthFailed(Id, RemoteIp, client.TlsPeerSubject ?? "");
            SendErrorAndClose(ErrorMessages.AuthorizationViolation, CloseReason.AuthenticationViolation);
            return false;
        }
        return true;
    }

    /// <summary>
    /// proxy_required (server/auth.go processClientOrLeafAuthentication, ADR-55): a user so marked, or the single
    /// user/token when <c>authorization { proxy_required: true }</c>, must have come through a trusted proxy. Refused
    /// with the usual nondescript <c>-ERR 'Authorization Violation'</c>; /connz shows "Proxy Required". Checked at
    /// CONNECT and again on every reload (nats-server re-runs authentication then). Caller holds the auth lock.
    /// </summary>
    private bool RejectedForMissingProxy(string? user)
    {
        if (ProxyKey is not null || !ProxyRequiredFor(_server.Options, user)) return false;
        _server.Log.AuthFailed(Id, RemoteIp, "proxy connection required");
        SendErrorAndClose(ErrorMessages.AuthorizationViolation, CloseReason.ProxyRequired);
        return true;
    }

    private static bool ProxyRequiredFor(Configuration.ServerOptions options, string? user)
    {
        if (options.Users.Count == 0) return options.ProxyRequired;
        if (string.IsNullOrEmpty(user)) return false;
        // A Go map: a later entry with the same name wins.
        return options.Users.LastOrDefault(u => string.Equals(u.User, user, StringComparison.Ordinal)) is { ProxyRequired: true };
    }

    /// <summary>
    /// A reload removed the trusted key this connection came through (server/reload.go proxiesReload, ADR-55):
    /// it is closed as an authorization violation with reason "Proxy Not Trusted". Caller holds the auth lock.
    /// </summary>
    private bool RejectedForRevokedProxy(Configuration.ServerOptions options)
    {
        if (ProxyKey is not { } key || options.TrustedProxies.Contains(key) || TrustedProxyKeys.Snapshot().Contains(key)) return false;
        _server.Log.AuthFailed(Id, RemoteIp, "proxy is not trusted");
        SendErrorAndClose(ErrorMessages.AuthorizationViolation, CloseReason.ProxyNotTrusted);
        return true;
    }

    /// <summary>The first trusted key whose signature of the nonce verifies (server/auth.go proxyCheck).</summary>
    private string? VerifyProxySignature(string sig, string nonce)
    {
        byte[] signature;
        try
        {
            string b64 = sig.Replace('-', '+').Replace('_', '/');
            signature = Convert.FromBase64String(b64.PadRight(b64.Length + ((4 - (b64.Length % 4)) % 4), '='));
        }
        catch (FormatException)
        {
            return null;
        }
        byte[] data = Encoding.ASCII.GetBytes(nonce);
        foreach (var key in _server.Options.TrustedProxies.Concat(TrustedProxyKeys.Snapshot()))
        {
            // A malformed key never verifies; config parsing already refuses them.
            if (NkeySignature.Verify(key, data, signature)) return key;
        }
        return null;
    }

    /// <summary>
    /// verify_and_map (server/auth.go checkClientTLSCertSubject): the first identity that names a configured user
    /// becomes the user. The match is passed to authentication as that user with its configured password, so
    /// permissions and limits are the user's own. (The LDAP-DN equality step of nats-server is not done.)
    /// </summary>
    private bool MapCertificateUser(ConnectOptions opts, List<string> identities)
    {
        var users = _server.Options.Users;
        if (users.Count == 0) return true;
        foreach (var id in identities)
        {
            // A Go map: a later entry with the same name wins.
            var user = users.LastOrDefault(u => string.Equals(u.User, id, StringComparison.Ordinal));
            if (user is null) continue;
            opts.User = user.User;
            opts.Pass = user.Password;
            opts.AuthToken = null;
            return true;
        }
        return false;
    }

    /// <summary>
    /// A gateway's <c>no_auth_user</c> (server/websocket.go: <c>websocket { no_auth_user }</c> overrides the top-level
    /// one for its clients): a CONNECT without credentials becomes that configured user with its password, so the
    /// user's permissions apply. Unknown names change nothing (the gateway's config is checked when it starts).
    /// </summary>
    private void ApplyGatewayNoAuthUser(ConnectOptions opts, string name)
    {
        if (!string.IsNullOrEmpty(opts.User) || !string.IsNullOrEmpty(opts.Pass) || !string.IsNullOrEmpty(opts.AuthToken)
            || !string.IsNullOrEmpty(opts.Jwt) || !string.IsNullOrEmpty(opts.Nkey)) return;
        var user = _server.Options.Users.LastOrDefault(u => string.Equals(u.User, name, StringComparison.Ordinal));
        if (user is null) return;
        opts.User = user.User;
        opts.Pass = user.Password;
    }

    /// <summary>Over the Unix socket, only our own uid or root may relay as a gateway (SO_PEERCRED).</summary>
    private bool PeerMayBeProxy()
    {
        if (Kind != TransportKind.UnixSocket) return true;
        if (_conn.Socket is not { } socket) return false;
        return PeerCredentials.PeerUid(socket) is uint uid && (uid == 0 || uid == PeerCredentials.EffectiveUid);
    }
}

/// <summary>Proxy keys trusted for this process's lifetime in addition to the config's (the supervised gateways' key).</summary>
internal static class TrustedProxyKeys
{
    private static volatile string[] s_keys = [];
    private static readonly Lock s_lock = new();

    public static bool Any => s_keys.Length > 0;

    public static IReadOnlyList<string> Snapshot() => s_keys;

    public static void Add(string publicKey)
    {
        lock (s_lock) s_keys = [.. s_keys, publicKey];
    }
}

/// <summary>Linux SO_PEERCRED (socket(7)): the uid of the process at the other end of a Unix socket.</summary>
internal static partial class PeerCredentials
{
    private const int SolSocket = 1, SoPeerCred = 17;

    public static uint EffectiveUid { get; } = OperatingSystem.IsLinux() ? geteuid() : uint.MaxValue;

    /// <summary>struct ucred { pid_t pid; uid_t uid; gid_t gid; }; null when unavailable.</summary>
    public static uint? PeerUid(Socket socket)
    {
        if (!OperatingSystem.IsLinux()) return null;
        Span<byte> cred = stackalloc byte[12];
        try
        {
            int n = socket.GetRawSocketOption(SolSocket, SoPeerCred, cred);
            return n >= 8 ? BitConverter.ToUInt32(cred[4..8]) : null;
        }
        catch (SocketException)
        {
            return null;
        }
    }

    [LibraryImport("libc")]
    private static partial uint geteuid();
}
