using NatsBroker.Configuration;
using NatsBroker.Protocol;

namespace NatsBroker.Auth;

// Interim single-user/token authenticator, replaced by the full Auth module on merge.
public interface IAuthenticator
{
    bool AuthRequired { get; }
    AuthResult Authenticate(ConnectOptions connect, ClientAuthContext ctx);
    AuthResult? AuthenticateNoAuthUser();
}

public sealed record ClientAuthContext(string RemoteIp, string ConnectionType);

public sealed record AuthResult(bool Success, string? User, ClientPermissions? Permissions);

public sealed class ClientPermissions
{
    public bool CanPublish(ReadOnlySpan<byte> subject) { _ = subject; return true; }
    public bool CanSubscribe(ReadOnlySpan<byte> subject, ReadOnlySpan<byte> queue) { _ = subject; _ = queue; return true; }
    public bool IsDeliveryDenied(ReadOnlySpan<byte> subject) { _ = subject; return false; }
    public ResponseTracker? CreateResponseTracker() => null;
}

public sealed class ResponseTracker
{
    public void OnDelivered(ReadOnlySpan<byte> reply) { _ = reply; }
    public bool TryConsume(ReadOnlySpan<byte> subject) { _ = subject; return false; }
}

public sealed class OptionsAuthenticator(ServerOptions options) : IAuthenticator
{
    public bool AuthRequired => options.AuthRequired;
    public AuthResult Authenticate(ConnectOptions connect, ClientAuthContext ctx)
    {
        if (!AuthRequired) return new AuthResult(true, null, null);
        if (options.Authorization is not null) return new AuthResult(connect.AuthToken == options.Authorization, null, null);
        bool ok = options.Username == connect.User && options.Password == connect.Pass;
        return new AuthResult(ok, connect.User, null);
    }
    public AuthResult? AuthenticateNoAuthUser() => null;
}
