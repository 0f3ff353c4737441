using NatsBroker.Configuration;
using NatsBroker.Routing;
using NatsBroker.Subscriptions;

namespace NatsBroker.Accounts;

/// <summary>
/// One account: a subject space of its own (its <see cref="Router"/> over its own SubList), its limits, and the
/// imports that bridge other accounts' exports into it (server/accounts.go Account). Clients bind to one account
/// when they authenticate and publish and subscribe only in its router. <c>$G</c> is the global account of users
/// outside any account. JetStream and other services may hang per-account state here.
/// </summary>
/// <remarks>
/// Imports are internal subscriptions: a stream import subscribes in the exporter's router and republishes into
/// this one (<see cref="StreamImportForwarder"/>); a service import subscribes in this router and republishes into
/// the exporter's, with the reply mapped through the exporter's <see cref="ServiceResponses"/>. The importing
/// account owns those subscriptions (made and removed in <see cref="WireImports"/>).
/// </remarks>
public sealed class Account
{
    /// <summary>The global account's name (server/accounts.go globalAccountName).</summary>
    public const string GlobalName = "$G";
    /// <summary>nats-server's ErrTooManyAccountConnections.</summary>
    public const string TooManyConnectionsError = "maximum account active connections exceeded";

    private readonly Lock _lock = new();
    private readonly List<(Router Router, Subscription Sub)> _importSubs = [];
    private ServiceResponses? _responses;
    private int _connections;

    public Account(string name, Router router)
    {
        Name = name;
        Router = router;
    }

    public string Name { get; }
    /// <summary>Routes every publish made in this account.</summary>
    public Router Router { get; }
    /// <summary>-1 = unlimited (jwt.NoLimit).</summary>
    public int MaxConnections { get; private set; } = -1;
    public int MaxSubscriptions { get; private set; } = -1;
    public int MaxPayload { get; private set; } = -1;
    /// <summary>Client connections bound to this account now.</summary>
    public int Connections => Volatile.Read(ref _connections);
    public IReadOnlyList<ExportConfig> Exports { get; private set; } = [];
    public IReadOnlyList<ImportConfig> Imports { get; private set; } = [];
    /// <summary>Subject mappings applied to this account's client publishes; null = none (one null check per publish).</summary>
    public SubjectMappings? Mappings { get; private set; }
    /// <summary>This account's JetStream limits (config or JWT); null = JetStream not enabled for it (core/JetStream).</summary>
    public JetStreamAccountLimits? JetStreamLimits { get; private set; }
    /// <summary>Reply mappings of requests other accounts sent to this account's services.</summary>
    internal ServiceResponses Responses
    {
        get
        {
            lock (_lock) return _responses ??= new ServiceResponses(this);
        }
    }

    internal void ApplyConfig(AccountConfig config)
    {
        MaxConnections = config.MaxConnections;
        MaxSubscriptions = config.MaxSubscriptions;
        MaxPayload = config.MaxPayload;
        Exports = config.Exports;
        Imports = config.Imports;
        Mappings = SubjectMappings.Create(config.Mappings);
        JetStreamLimits = config.JetStream;
    }

    /// <summary>Counts a new connection unless the account is at its max_connections (then false).</summary>
    public bool TryAddConnection()
    {
        while (true)
        {
            int n = Volatile.Read(ref _connections);
            int max = MaxConnections;
            if (max >= 0 && n >= max) return false;
            if (Interlocked.CompareExchange(ref _connections, n + 1, n) == n) return true;
        }
    }

    public void RemoveConnection() => Interlocked.Decrement(ref _connections);

    /// <summary>Whether <paramref name="importer"/> may import <paramref name="subject"/> as a stream or service.</summary>
    public bool IsExportedTo(string subject, bool service, string importer)
    {
        foreach (var x in Exports)
        {
            if (x.IsService == service && SubjectSubset.IsSubsetOf(subject, x.Subject)
                && (x.Accounts is null || x.Accounts.Contains(importer))) return true;
        }
        return false;
    }

    /// <summary>The export covering a service subject (for its response type); null when none.</summary>
    internal ExportConfig? ServiceExportFor(string subject)
    {
        foreach (var x in Exports)
            if (x.IsService && SubjectSubset.IsSubsetOf(subject, x.Subject)) return x;
        return null;
    }

    /// <summary>
    /// (Re)creates this account's import subscriptions. Imports whose exporter is missing or does not export
    /// to this account are skipped (config validation already reported them).
    /// </summary>
    internal void WireImports(Func<string, Account?> find)
    {
        lock (_lock)
        {
            foreach (var (router, sub) in _importSubs) router.Unsubscribe(sub);
            _importSubs.Clear();
            foreach (var imp in Imports)
            {
                var exporter = find(imp.Account);
                if (exporter is null || !exporter.IsExportedTo(imp.Subject, imp.IsService, Name)) continue;
                if (imp.IsService)
                {
                    string local = imp.To ?? imp.Subject;
                    var export = exporter.ServiceExportFor(imp.Subject);
                    var owner = new ServiceImportForwarder(this, exporter, local, imp.Subject, export?.ResponseType ?? ServiceResponseType.Singleton);
                    _importSubs.Add((Router, Router.Subscribe(local, owner)));
                }
                else
                {
                    var owner = new StreamImportForwarder(this, imp.Subject, imp.To, imp.Prefix);
                    _importSubs.Add((exporter.Router, exporter.Router.Subscribe(imp.Subject, owner)));
                }
            }
        }
    }

    public override string ToString() => Name;
}
