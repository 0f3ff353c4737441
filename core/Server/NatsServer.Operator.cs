using NatsBroker.Auth;
using NatsBroker.Auth.Jwt;
using NatsBroker.Configuration;

namespace NatsBroker.Server;

/// <summary>
/// Which authenticator the options call for, and operator mode's account resolver: the resolver outlives config
/// reloads (the directory resolver's accounts arrive at run time), and every account JWT it stores reconfigures that
/// account and re-checks the account's clients (revocations, removed signing keys), as nats-server's
/// updateAccountClaimsWithRefresh does.
/// </summary>
public sealed partial class NatsServer
{
    private AccountResolver? _resolver;

    /// <summary>The system account's services and events; null when there is no system account.</summary>
    internal Accounts.SystemServices? SystemServices { get; private set; }

    /// <summary>Starts the $SYS services once the accounts exist (the system account chosen at start-up stays for the server's life).</summary>
    private void StartSystemServices()
    {
        if (Accounts.System is { } system) SystemServices = new Accounts.SystemServices(this, system);
    }

    /// <summary>Operator mode's resolver; null without trusted operators.</summary>
    public AccountResolver? Resolver => _resolver;

    private IAuthenticator CreateAuthenticator(ServerOptions options)
    {
        var op = options.Operator;
        if (!op.Enabled)
        {
            var local = new OptionsAuthenticator(options);
            if (options.AuthCallout is not { } callout) return local;
            return new Auth.Callout.AuthCalloutAuthenticator(callout, local, Accounts, Identity, CalloutServerInfo(options), options.AuthTimeout, Log.AuthCalloutRefused);
        }
        if (_resolver is null)
        {
            _resolver = new AccountResolver(op.Resolver ?? ResolverKind.Memory, op.Operators,
                op.Resolver is ResolverKind.Full or ResolverKind.Cache ? op.ResolverDir : null, op.ResolverLimit);
            foreach (var claims in _resolver.All) Accounts.Upsert(claims.ToAccountConfig());
            _resolver.Updated += OnAccountClaimsUpdated;
        }
        foreach (var (key, jwt) in op.Preload)
        {
            if (_resolver.Store(jwt, out string error, persist: false) is null && _resolver.Find(key) is null)
                Log.AccountJwtRejected(key, error);
        }
        // Accounts whose JWT delegates authentication (authorization.auth_users) are served by their callout service.
        // The server nkey is made on the first callout (it costs start-up time; see the constructor).
        var accountCallouts = new Auth.Callout.OperatorAuthCallout(Accounts, _resolver, () => Identity, () => CalloutServerInfo(options),
            options.AuthTimeout, Log.AuthCalloutRefused);
        return new JwtAuthenticator(_resolver, callout: accountCallouts);
    }

    /// <summary>
    /// This server as a callout request describes it. Its id is the server nkey that signs the request and that the
    /// answer's <c>aud</c> must name: the same as INFO's server_id when the key was made at start (a configured
    /// auth_callout); a server whose id was random (a callout added by a reload, or an operator-mode account that
    /// delegates) names its key here, which the service reads from the request.
    /// </summary>
    private Auth.Callout.CalloutServerInfo CalloutServerInfo(ServerOptions options) =>
        new(ServerName, options.Host, Identity.PublicKey, CompatibleVersion,
            [.. options.Tags.Select(t => t.Value.Length == 0 ? t.Key : t.Key + ":" + t.Value)]);

    private void OnAccountClaimsUpdated(AccountClaims claims)
    {
        var account = Accounts.Upsert(claims.ToAccountConfig());
        if (_auth is not JwtAuthenticator auth) return;
        foreach (var c in _clients.Values)
            if (ReferenceEquals(c.Account, account)) c.OnAccountClaimsUpdated(auth, claims);
    }
}
