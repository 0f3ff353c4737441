using NatsBroker.Configuration;
using NatsBroker.Routing;

namespace NatsBroker.Accounts;

/// <summary>
/// The server's accounts by name: <c>$G</c>, the system account (<c>$SYS</c> unless configured otherwise or
/// disabled), those configured, and in operator mode those whose JWTs the resolver holds (named by public key).
/// An account keeps its identity (and router) across reloads, so connections bound to it stay in the same subject
/// space; its limits, exports and imports are replaced from the new configuration or JWT.
/// </summary>
public sealed class AccountRegistry
{
    private readonly Func<Router> _newRouter;
    private readonly Lock _lock = new();
    private volatile Dictionary<string, Account> _accounts;
    /// <summary>Accounts configured by JWT (operator mode): a config reload leaves them as the resolver set them.</summary>
    private readonly Dictionary<string, AccountConfig> _jwtAccounts = new(StringComparer.Ordinal);
    private volatile Account? _system;

    private readonly ServiceLatencyReporter _latency;

    /// <param name="newRouter">Makes each new account's router.</param>
    /// <param name="serverName">The server's name, as latency metrics show it in the responder's client info.</param>
    public AccountRegistry(Func<Router> newRouter, string serverName = "")
    {
        _newRouter = newRouter;
        _latency = new ServiceLatencyReporter(serverName);
        Global = new Account(Account.GlobalName, newRouter());
        _accounts = new Dictionary<string, Account>(StringComparer.Ordinal) { [Account.GlobalName] = Global };
    }

    /// <summary>The account of users outside any account.</summary>
    public Account Global { get; }

    /// <summary>The system account (server/events.go): its router carries the $SYS events and request services; null = none.</summary>
    public Account? System => _system;

    public IReadOnlyCollection<Account> All => _accounts.Values;

    public Account? Find(string? name) =>
        name is null ? Global : _accounts.TryGetValue(name, out var a) ? a : null;

    /// <summary>Creates or updates the configured accounts and the system account, then rewires every account's imports.</summary>
    public void Apply(ServerOptions options)
    {
        lock (_lock)
        {
            var next = new Dictionary<string, Account>(_accounts, StringComparer.Ordinal);
            Global.ApplyConfig(new AccountConfig { Name = Account.GlobalName, Mappings = options.Mappings });
            foreach (var config in options.Accounts.Concat(_jwtAccounts.Values))
                Configure(next, config);
            string? systemName = options.Operator.EffectiveSystemAccount;
            if (systemName is not null && !next.ContainsKey(systemName))
                Configure(next, new AccountConfig { Name = systemName });
            // An account dropped from the config keeps existing (its clients are re-checked by the reload) but loses its imports and exports.
            foreach (var account in next.Values)
            {
                if (account != Global && account.Name != systemName && !options.Accounts.Any(c => c.Name == account.Name) && !_jwtAccounts.ContainsKey(account.Name))
                    account.ApplyConfig(new AccountConfig { Name = account.Name });
            }
            _system = systemName is null ? null : next[systemName];
            Publish(next);
        }
    }

    /// <summary>Adds or updates one account from its JWT (operator mode), then rewires imports (they may name it).</summary>
    public Account Upsert(AccountConfig config)
    {
        lock (_lock)
        {
            _jwtAccounts[config.Name] = config;
            var next = new Dictionary<string, Account>(_accounts, StringComparer.Ordinal);
            var account = Configure(next, config);
            Publish(next);
            return account;
        }
    }

    /// <summary>
    /// An account was created (config, reload or JWT), raised once it is findable: services every account answers
    /// (<c>$SYS.REQ.USER.INFO</c>) subscribe in it. Handlers must be quick; they run under the registry's lock.
    /// </summary>
    public event Action<Account>? Added;

    private Account Configure(Dictionary<string, Account> next, AccountConfig config)
    {
        if (!next.TryGetValue(config.Name, out var account))
            next[config.Name] = account = new Account(config.Name, _newRouter());
        account.ApplyConfig(config);
        return account;
    }

    private void Publish(Dictionary<string, Account> next)
    {
        var previous = _accounts;
        _accounts = next;
        foreach (var account in next.Values) account.WireImports(Find, _latency);
        if (Added is { } added)
        {
            foreach (var account in next.Values)
                if (!previous.ContainsKey(account.Name)) added(account);
        }
    }
}
