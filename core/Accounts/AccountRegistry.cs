using NatsBroker.Configuration;
using NatsBroker.Routing;

namespace NatsBroker.Accounts;

/// <summary>
/// The server's accounts by name: <c>$G</c> plus those configured. An account keeps its identity (and router)
/// across reloads, so connections bound to it stay in the same subject space; its limits, exports and imports
/// are replaced from the new configuration.
/// </summary>
public sealed class AccountRegistry
{
    private readonly Func<Router> _newRouter;
    private readonly Lock _lock = new();
    private volatile Dictionary<string, Account> _accounts;

    public AccountRegistry(Func<Router> newRouter)
    {
        _newRouter = newRouter;
        Global = new Account(Account.GlobalName, newRouter());
        _accounts = new Dictionary<string, Account>(StringComparer.Ordinal) { [Account.GlobalName] = Global };
    }

    /// <summary>The account of users outside any account.</summary>
    public Account Global { get; }

    public IReadOnlyCollection<Account> All => _accounts.Values;

    public Account? Find(string? name) =>
        name is null ? Global : _accounts.TryGetValue(name, out var a) ? a : null;

    /// <summary>Creates or updates the configured accounts, then rewires every account's imports.</summary>
    public void Apply(ServerOptions options)
    {
        lock (_lock)
        {
            var next = new Dictionary<string, Account>(_accounts, StringComparer.Ordinal);
            foreach (var config in options.Accounts)
            {
                if (!next.TryGetValue(config.Name, out var account))
                    next[config.Name] = account = new Account(config.Name, _newRouter());
                account.ApplyConfig(config);
            }
            // An account dropped from the config keeps existing (its clients are re-checked by the reload) but loses its imports and exports.
            foreach (var account in next.Values)
            {
                if (account != Global && !options.Accounts.Any(c => c.Name == account.Name)) account.ApplyConfig(new AccountConfig { Name = account.Name });
            }
            _accounts = next;
            foreach (var account in next.Values) account.WireImports(Find);
        }
    }
}
