using NatsBroker.Auth;
using NatsBroker.Auth.Jwt;
using NatsBroker.Connections;

namespace NatsBroker.Server;

/// <summary>
/// Operator mode on a live connection (server/client.go setExpiration / authExpired, server/accounts.go
/// updateAccountClaimsWithRefresh): the connection closes with <c>-ERR 'User Authentication Expired'</c> when its
/// credentials expire, and with <c>-ERR 'User Authentication Revoked'</c> when a new account JWT revokes its user.
/// </summary>
public sealed partial class ClientConnection
{
    private ITimer? _expiry;

    /// <summary>CONNECT was accepted (the client counts as connected for the $SYS connect/disconnect events).</summary>
    internal bool ConnectAccepted => _connectReceived;

    /// <summary>Arms (or re-arms, after a re-authentication) the expiry of this connection's credentials; null = never.</summary>
    private void ScheduleExpiry(DateTimeOffset? expires)
    {
        var previous = Interlocked.Exchange(ref _expiry, null);
        previous?.Dispose();
        if (expires is not { } at) return;
        _expiresAt = at;
        var due = at - DateTimeOffset.UtcNow;
        if (due < TimeSpan.Zero) due = TimeSpan.Zero;
        // Timer periods are capped (~49 days); anything longer re-arms when it fires.
        var max = TimeSpan.FromDays(40);
        var timer = TimeProvider.System.CreateTimer(static s => ((ClientConnection)s!).OnCredentialsExpiryTimer(), this, due > max ? max : due, Timeout.InfiniteTimeSpan);
        _expiry = timer;
        if (_conn.IsClosing) timer.Dispose();
    }

    private DateTimeOffset _expiresAt;

    /// <summary>When this connection's credentials expire (user JWT exp, time window end); null = never.</summary>
    internal DateTimeOffset? CredentialsExpire => Volatile.Read(ref _expiry) is null ? null : _expiresAt;

    /// <summary>This connection's permissions (null = allow all), for <c>$SYS.REQ.USER.INFO</c>.</summary>
    internal ClientPermissions? Permissions => _permissions;

    private void OnCredentialsExpiryTimer()
    {
        if (_conn.IsClosing) return;
        if (DateTimeOffset.UtcNow < _expiresAt)
        {
            ScheduleExpiry(_expiresAt);
            return;
        }
        SendErrorAndClose(AuthErrors.AuthenticationExpired, CloseReason.AuthenticationExpired);
    }

    /// <summary>A new JWT for this connection's account: revoked users close; others are re-authenticated (permissions, expiry).</summary>
    internal void OnAccountClaimsUpdated(JwtAuthenticator auth, AccountClaims claims)
    {
        lock (_authLock)
        {
            if (!_connectReceived || _conn.IsClosing || Connect?.Jwt is not { } jwt) return;
            if (Jwt.TryDecode(jwt, out _) is { } payload)
            {
                var user = new UserClaims(payload, jwt);
                if (claims.IsRevoked(user.Subject, user.IssuedAt))
                {
                    SendErrorAndClose(AuthErrors.AuthenticationRevoked, CloseReason.Revocation);
                    return;
                }
            }
            var result = auth.TryAuthenticateWithoutHashing(Connect, AuthContext());
            if (result is not null) ApplyReauthentication(result);
        }
    }
}
