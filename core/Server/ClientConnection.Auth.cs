using System.Text;
using NatsBroker.Auth;
using NatsBroker.Connections;
using NatsBroker.Protocol;
using NatsBroker.Subscriptions;

namespace NatsBroker.Server;

/// <summary>
/// Authentication of this connection: at CONNECT and again after a config reload. Cheap decisions (plain
/// passwords, tokens, a recently verified bcrypt password) are made inline; one that needs bcrypt runs on the
/// server's <see cref="PasswordHashingQueue"/>, never on the socket thread that runs this read loop and others.
/// <para>CONNECT ordering: nats-server handles a client's ops strictly in order, so nothing the client sent after
/// CONNECT may run before the verdict. While <see cref="_pendingAuth"/> is set the parser stops (the handler
/// reports closing) right after the CONNECT; the read loop hands the rest of its buffer back to the reader
/// unconsumed, awaits <see cref="CompletePendingConnectAsync"/>, then parses on. auth_timeout keeps running until
/// the verdict is applied (<see cref="AwaitingAuth"/> stays true), and abandons a request still waiting.</para>
/// <para>Locks: <see cref="_authLock"/> serialises applying verdicts (CONNECT, reloads) and is taken before
/// <c>_subsLock</c> and the connection's outbound lock, never inside them.</para>
/// </summary>
public sealed partial class ClientConnection
{
    private volatile PasswordHashingRequest? _pendingAuth;
    private readonly Lock _authLock = new();

    /// <summary>
    /// Authenticates CONNECT. True when accepted now; false when denied (closing) or when a password check was
    /// queued (<see cref="_pendingAuth"/> set: the read loop finishes the CONNECT later).
    /// </summary>
    private bool AuthenticateConnect(ConnectOptions opts)
    {
        var auth = _server.Auth;
        var result = auth.TryAuthenticateWithoutHashing(opts, AuthContext());
        if (result is null)
        {
            _pendingAuth = auth.Begin(_server.PasswordHashing, opts, AuthContext());
            return false;
        }
        lock (_authLock) return AcceptConnectAuth(result, opts);
    }

    /// <summary>Read-loop hook: waits for the queued CONNECT verdict, applies it and finishes the CONNECT.</summary>
    private async Task CompletePendingConnectAsync()
    {
        var request = _pendingAuth!;
        var opts = Connect!;
        try
        {
            while (true)
            {
                var result = await request.Result.ConfigureAwait(false);
                if (result is null || _conn.IsClosing)
                {
                    // Abandoned (auth timeout) or the queue stopped (server shutdown).
                    if (!_conn.IsClosing) CloseNow(CloseReason.ServerShutdown);
                    return;
                }
                lock (_authLock)
                {
                    var current = _server.Auth;
                    if (ReferenceEquals(current, request.Authenticator))
                    {
                        if (!AcceptConnectAuth(result, opts)) return;
                        _connectReceived = true;
                        FinishConnect(opts);
                        return;
                    }
                    // A reload replaced the rules while this waited: decide with the new ones, as its re-check would.
                    result = current.TryAuthenticateWithoutHashing(opts, AuthContext());
                    if (result is not null)
                    {
                        if (!AcceptConnectAuth(result, opts)) return;
                        _connectReceived = true;
                        FinishConnect(opts);
                        return;
                    }
                    request = current.Begin(_server.PasswordHashing, opts, AuthContext());
                    _pendingAuth = request;
                }
                // An auth timeout that fired before the new request was visible could not abandon it.
                if (_conn.IsClosing) request.Abandon();
            }
        }
        finally
        {
            _pendingAuth = null;
        }
    }

    /// <summary>The connection is closing while a password check may be queued: skip it, wake the read loop.</summary>
    private void AbandonPendingAuth()
    {
        Interlocked.MemoryBarrier(); // The connection's closing flag was just set; see the re-check in CompletePendingConnectAsync.
        _pendingAuth?.Abandon();
    }

    /// <summary>Applies a CONNECT verdict: false (and the connection closing) when denied. Caller holds <see cref="_authLock"/>.</summary>
    private bool AcceptConnectAuth(AuthResult result, ConnectOptions opts)
    {
        if (RejectedForMissingProxy(result.Success ? result.User : opts.User)) return false;
        if (!result.Success)
        {
            _server.Log.AuthFailed(Id, RemoteIp, opts.User ?? "");
            SendErrorAndClose(ErrorMessages.AuthorizationViolation, CloseReason.AuthenticationViolation);
            _server.SystemServices?.AuthenticationFailed(this);
            return false;
        }
        return ApplyAuth(result);
    }

    /// <summary>
    /// After a config reload (server/reload.go reloadAuthorization): re-authenticate, swap permissions, drop
    /// subscriptions no longer allowed. A re-check that needs bcrypt is queued like a CONNECT, so a reload never
    /// hashes on the reload thread once per connection; until its verdict the connection keeps its old rights.
    /// A connection whose CONNECT is still being checked is re-decided when that verdict arrives.
    /// </summary>
    internal void OnReload(Configuration.ServerOptions options, IAuthenticator auth)
    {
        _maxPayload = EffectiveMaxPayload(options);
        lock (_authLock)
        {
            if (!_connectReceived || _conn.IsClosing) return;
            if (RejectedForRevokedProxy(options)) return;
            if (!auth.AuthRequired && ListenerAuthOverride is null)
            {
                _permissions = null;
                return;
            }
            var result = Connect is { } connect ? auth.TryAuthenticateWithoutHashing(connect, AuthContext()) : auth.AuthenticateWithoutConnect(AuthContext());
            if (result is not null)
            {
                ApplyReauthentication(result);
                return;
            }
        }
        _ = ReauthenticateAsync(auth, Connect!);
    }

    private async Task ReauthenticateAsync(IAuthenticator auth, ConnectOptions connect)
    {
        try
        {
            var result = await auth.Begin(_server.PasswordHashing, connect, AuthContext()).Result.ConfigureAwait(false);
            lock (_authLock)
            {
                // Closed, server stopping, or a newer reload (which re-checks again): this verdict is moot.
                if (result is null || _conn.IsClosing || !ReferenceEquals(_server.Auth, auth)) return;
                ApplyReauthentication(result);
            }
        }
        catch (Exception ex)
        {
            _server.Log.ConnectionLoopFault(ex, Id);
            CloseNow(CloseReason.ProtocolViolation);
        }
    }

    /// <summary>Caller holds <see cref="_authLock"/>.</summary>
    private void ApplyReauthentication(AuthResult result)
    {
        if (RejectedForMissingProxy(result.Success ? result.User : Connect?.User)) return;
        if (!result.Success)
        {
            SendErrorAndClose(ErrorMessages.AuthorizationViolation, CloseReason.AuthenticationViolation);
            return;
        }
        if (!ReferenceEquals(_server.Accounts.Find(result.Account), _account))
        {
            // The user now belongs to another account: its subscriptions live in the old subject space.
            SendErrorAndClose(ErrorMessages.AuthorizationViolation, CloseReason.AuthenticationViolation);
            return;
        }
        ApplyAuth(result);
        if (_permissions is null) return;
        List<Subscription> revoked = [];
        lock (_subsLock)
        {
            foreach (var sub in _subs.Values)
            {
                // The new permissions decide each kept SUB's delivery check afresh (client.go processSubsOnConfigReload
                // clears c.mperms and rebuilds it through canSubscribe).
                if (!ClientPermissions.IsSubscribeAllowed(_permissions, sub.Subject, sub.Queue, out bool filter)) revoked.Add(sub);
                else sub.FilterDeliveries = filter;
            }
            foreach (var sub in revoked) _subs.Remove(Encoding.UTF8.GetString(sub.Sid));
        }
        foreach (var sub in revoked)
        {
            sub.Closed = true;
            _account.Router.SubList.Remove(sub);
            SendError(AuthErrors.SubscriptionRevoked(sub.Subject, sub.Sid));
        }
    }
}
