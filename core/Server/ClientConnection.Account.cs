using NatsBroker.Accounts;
using NatsBroker.Configuration;
using NatsBroker.Connections;
using NatsBroker.Protocol;

namespace NatsBroker.Server;

/// <summary>
/// The account this connection lives in: bound once when it authenticates (server/client.go registerWithAccount),
/// counted against the account's max_connections, its limits folded into this connection's (applyAccountLimits).
/// </summary>
public sealed partial class ClientConnection
{
    private Account _account;
    private bool _accountCounted;
    // A server-internal session given its own account (warm-up) stays in it.
    private readonly bool _accountFixed;

    /// <summary>Binds to <paramref name="name"/> (null = <c>$G</c>); false when refused (the connection is closing).</summary>
    private bool BindAccount(string? name)
    {
        if (_accountFixed) return true;
        var account = _server.Accounts.Find(name);
        if (account is null)
        {
            SendErrorAndClose(ErrorMessages.AuthorizationViolation, CloseReason.AuthenticationViolation);
            return false;
        }
        if (_accountCounted) return ReferenceEquals(account, _account);
        if (!account.TryAddConnection())
        {
            SendErrorAndClose(Account.TooManyConnectionsError, CloseReason.MaxConnectionsExceeded);
            return false;
        }
        _account = account;
        _accountCounted = true;
        _maxPayload = EffectiveMaxPayload(_server.Options);
        return true;
    }

    /// <summary>A request through a service import nobody serves gets the 503 status (ServiceImportForwarder).</summary>
    bool IRequester.WantsNoResponders => _noResponders && _headers;

    /// <summary>The server's max_payload, lowered by the account's when it has one.</summary>
    private int EffectiveMaxPayload(ServerOptions options)
    {
        int max = options.MaxPayload;
        var account = _account;
        return account is not null && account.MaxPayload >= 0 ? Math.Min(max, account.MaxPayload) : max;
    }

    /// <summary>Subscriptions this connection may hold: the smaller of the server's and the account's; 0 = unlimited.</summary>
    private int EffectiveMaxSubscriptions()
    {
        int server = _server.Options.MaxSubscriptions;
        int account = _account.MaxSubscriptions;
        if (account <= 0) return server;
        return server <= 0 ? account : Math.Min(server, account);
    }
}
