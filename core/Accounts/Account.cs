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
    private Timer? _activationTimer;
    private int _connections;

    public Account(string name, Router router)
    {
        Name = name;
        Router = router;
        router.NameAccount(name);
        TrackedReplies = new TrackedReplies(router);
    }

    /// <summary>Sampled requests of this account through service imports still waiting for a response (408 when the requester's interest goes).</summary>
    internal TrackedReplies TrackedReplies { get; }

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
    /// <summary>JWT accounts: signing keys, which may sign this account's activation tokens.</summary>
    public IReadOnlyCollection<string> SigningKeys { get; private set; } = [];
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
        SigningKeys = config.SigningKeys;
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

    /// <summary>
    /// Whether <paramref name="import"/> by <paramref name="importer"/> is authorized by one of this account's exports
    /// (server/accounts.go checkAuth): public, listing the importer, or token-required with a valid activation.
    /// <paramref name="expires"/> is the activation's expiry (Unix seconds; 0 = none) when one authorized it.
    /// </summary>
    internal bool Authorizes(ImportConfig import, string importer, DateTimeOffset now, out long expires)
    {
        expires = 0;
        foreach (var x in Exports)
        {
            if (x.IsService != import.IsService || !SubjectSubset.IsSubsetOf(import.Subject, x.Subject)) continue;
            if (x.TokenRequired)
            {
                if (ActivationIsValid(import, importer, x, now))
                {
                    expires = import.Activation!.Expires;
                    return true;
                }
            }
            else if (x.Accounts is null || x.Accounts.Contains(importer)) return true;
        }
        return false;
    }

    /// <summary>
    /// server/accounts.go checkActivation with jwt Import.Validate's token checks: a correctly signed activation
    /// issued by this account (or its signing key, naming this account as issuer_account), for the importing
    /// account, of the import's kind, covering its subject, not expired or not yet valid, not revoked by the export.
    /// </summary>
    private bool ActivationIsValid(ImportConfig import, string importer, ExportConfig export, DateTimeOffset now)
    {
        if (import.Activation is not { } act) return false;
        if (!(act.Issuer == Name || act.IssuerAccount == Name)) return false;
        if (act.Subject != importer) return false;
        if (act.ImportType != (import.IsService ? "service" : "stream")) return false;
        if (!SubjectSubset.IsSubsetOf(import.Subject, act.ImportSubject)) return false;
        // isIssuerClaimTrusted: a token naming an issuer account must come from one of its signing keys.
        if (!string.IsNullOrEmpty(act.IssuerAccount) && (act.IssuerAccount != Name || !SigningKeys.Contains(act.Issuer))) return false;
        if (act.IsNotYetValid(now)) return false;
        if (act.Expires != 0 && act.Expires <= now.ToUnixTimeSeconds()) return false;
        // isRevoked: revoked when the importer's (or "*") revocation time is at or after the token's issue time.
        if (export.ActivationRevocations is { } revoked
            && ((revoked.TryGetValue(act.Subject, out long at) && at >= act.IssuedAt) || (revoked.TryGetValue("*", out at) && at >= act.IssuedAt)))
            return false;
        return true;
    }

    /// <summary>The export covering a service subject (for its response type); null when none.</summary>
    internal ExportConfig? ServiceExportFor(string subject)
    {
        foreach (var x in Exports)
            if (x.IsService && SubjectSubset.IsSubsetOf(subject, x.Subject)) return x;
        return null;
    }

    /// <summary>
    /// The latency tracking an export gets (accounts.go TrackServiceExportWithSampling): none for non-singleton
    /// services or a results subject this account exports as a service (it would loop). Config mode reports those
    /// as errors; from a JWT nats-server only logs them.
    /// </summary>
    internal ServiceLatencyConfig? TrackedLatency(ExportConfig export)
    {
        if (export.Latency is not { } lat || !export.IsService || export.ResponseType != ServiceResponseType.Singleton) return null;
        foreach (var x in Exports)
            if (x.IsService && SubjectSubset.IsSubsetOf(lat.Subject, x.Subject)) return null;
        return lat;
    }

    /// <summary>
    /// (Re)creates this account's import subscriptions. Imports whose exporter is missing or does not export
    /// to this account are skipped (config validation already reported them).
    /// </summary>
    internal void WireImports(Func<string, Account?> find, ServiceLatencyReporter latency)
    {
        lock (_lock)
        {
            foreach (var (router, sub) in _importSubs) router.Unsubscribe(sub);
            _importSubs.Clear();
            var now = DateTimeOffset.UtcNow;
            long firstExpiry = long.MaxValue;
            foreach (var imp in Imports)
            {
                var exporter = find(imp.Account);
                if (exporter is null || !exporter.Authorizes(imp, Name, now, out long expires)) continue;
                if (expires != 0) firstExpiry = Math.Min(firstExpiry, expires);
                if (imp.IsService)
                {
                    string local = imp.To ?? imp.Subject;
                    var export = exporter.ServiceExportFor(imp.Subject);
                    var sampler = export is not null && exporter.TrackedLatency(export) is { } lat ? new LatencySampler(latency, lat, exporter, imp.Share) : null;
                    var owner = new ServiceImportForwarder(this, exporter, local, imp.Subject, export?.ResponseType ?? ServiceResponseType.Singleton, sampler);
                    _importSubs.Add((Router, Router.Subscribe(local, owner, SubscriptionScope.NodeOnly)));
                }
                else
                {
                    var owner = new StreamImportForwarder(this, imp.Subject, imp.To, imp.Prefix);
                    _importSubs.Add((exporter.Router, exporter.Router.Subscribe(imp.Subject, owner)));
                }
            }
            ScheduleActivationExpiry(firstExpiry, () => WireImports(find, latency));
        }
    }

    /// <summary>
    /// The account, and its subject, that a literal <paramref name="subject"/> published here reaches through a wired
    /// service import; null when no import covers it. JetStream resolves a source's or mirror's external API prefix
    /// with it (the origin stream lives in the account whose <c>$JS.API</c> the prefix imports).
    /// </summary>
    internal Account? ResolveServiceImport(string subject, out string remoteSubject)
    {
        lock (_lock)
        {
            foreach (var (_, sub) in _importSubs)
            {
                if (sub.Owner is ServiceImportForwarder f && f.MapLocal(subject, System.Text.Encoding.UTF8.GetString(sub.Subject)) is { } mapped)
                {
                    remoteSubject = mapped;
                    return f.Exporter;
                }
            }
        }
        remoteSubject = "";
        return null;
    }

    /// <summary>
    /// An import authorized by an expiring activation ends when it expires (accounts.go checkActivation's timer,
    /// activationExpired): the imports are wired again then, without it. One timer per account, for the first expiry.
    /// </summary>
    private void ScheduleActivationExpiry(long unixSeconds, Action rewire)
    {
        _activationTimer?.Dispose();
        _activationTimer = null;
        if (unixSeconds == long.MaxValue) return;
        // Expired means "exp <= now" in whole seconds: re-check just after the second turns.
        var due = DateTimeOffset.FromUnixTimeSeconds(unixSeconds) - DateTimeOffset.UtcNow + TimeSpan.FromMilliseconds(50);
        _activationTimer = new Timer(_ => rewire(), null, due < TimeSpan.Zero ? TimeSpan.Zero : due, Timeout.InfiniteTimeSpan);
    }

    public override string ToString() => Name;
}
