namespace NatsBroker.Configuration;

/// <summary>One entry of the <c>accounts { NAME: { ... } }</c> block (server/opts.go parseAccounts).</summary>
public sealed class AccountConfig
{
    public string Name { get; set; } = "";
    public List<ExportConfig> Exports { get; set; } = [];
    public List<ImportConfig> Imports { get; set; } = [];
    /// <summary>Per-account limits (<c>limits { max_connections, max_subscriptions, max_payload }</c>); -1 = unlimited.</summary>
    public int MaxConnections { get; set; } = -1;
    public int MaxSubscriptions { get; set; } = -1;
    public int MaxPayload { get; set; } = -1;
    /// <summary>JWT accounts: the account's signing keys (they may sign its activation tokens).</summary>
    public IReadOnlyCollection<string> SigningKeys { get; set; } = [];
    /// <summary><c>mappings {}</c> of this account (for <c>$G</c>: the top-level block).</summary>
    public List<NatsBroker.Accounts.SubjectMappingConfig> Mappings { get; set; } = [];
    /// <summary>
    /// The account's JetStream (<c>jetstream: enabled</c> or <c>jetstream { max_mem ... }</c>, or an account JWT's
    /// <c>limits</c>); null = JetStream is not enabled for the account (opts.go parseJetStreamForAccount).
    /// </summary>
    public JetStreamAccountLimits? JetStream { get; set; }
}

/// <summary>
/// An account's JetStream limits (server/jetstream.go JetStreamAccountLimits); -1 = unlimited, as nats-server's
/// dynamicJSAccountLimits (what <c>jetstream: enabled</c> gives).
/// </summary>
public sealed record JetStreamAccountLimits
{
    public static JetStreamAccountLimits Dynamic { get; } = new();

    public long MaxMemory { get; init; } = -1;
    public long MaxStore { get; init; } = -1;
    public int MaxStreams { get; init; } = -1;
    public int MaxConsumers { get; init; } = -1;
    public int MaxAckPending { get; init; } = -1;
    public long MemoryMaxStreamBytes { get; init; } = -1;
    public long StoreMaxStreamBytes { get; init; } = -1;
    public bool MaxBytesRequired { get; init; }
}

/// <summary>How many responses a service import forwards per request (server/accounts.go ServiceRespType).</summary>
public enum ServiceResponseType { Singleton, Streamed, Chunked }

/// <summary>An <c>exports</c> entry: <c>{stream: subj}</c> or <c>{service: subj, response_type: ...}</c>, public or to listed accounts.</summary>
public sealed class ExportConfig
{
    public string Subject { get; set; } = "";
    public bool IsService { get; set; }
    public ServiceResponseType ResponseType { get; set; } = ServiceResponseType.Singleton;
    /// <summary>Accounts allowed to import; null = public.</summary>
    public List<string>? Accounts { get; set; }
    /// <summary>Service latency tracking (<c>latency</c> / JWT <c>service_latency</c>); null = not tracked.</summary>
    public ServiceLatencyConfig? Latency { get; set; }
    /// <summary>JWT <c>token_req</c>: a private export, importable only with an activation token the exporter signed.</summary>
    public bool TokenRequired { get; set; }
    /// <summary>JWT export <c>revocations</c>: importing account key (or "*") → activations issued at or before this Unix time are revoked.</summary>
    public Dictionary<string, long>? ActivationRevocations { get; set; }
}

/// <summary>
/// An export's latency tracking (server/accounts.go serviceLatency): the percentage of requests measured (1-100),
/// or 0 for "headers" (measured when the request carries a sampled trace header), and where the metrics go.
/// </summary>
public sealed record ServiceLatencyConfig(int Sampling, string Subject)
{
    /// <summary>server/const.go DEFAULT_SERVICE_LATENCY_SAMPLING.</summary>
    public const int DefaultSampling = 100;
    /// <summary>jwt.Headers: sampling driven by the request's trace headers.</summary>
    public const int Headers = 0;
}

/// <summary>
/// An <c>imports</c> entry: <c>{stream: {account: A, subject: s}, prefix: p}</c> / <c>to: t</c>, or
/// <c>{service: {account: A, subject: s}, to: t}</c>.
/// </summary>
public sealed class ImportConfig
{
    public bool IsService { get; set; }
    public string Account { get; set; } = "";
    public string Subject { get; set; } = "";
    /// <summary>Local subject (service) or mapped subject (stream); null = the exported subject.</summary>
    public string? To { get; set; }
    /// <summary>Stream imports: prefix prepended to the subject ("prefix.subject").</summary>
    public string? Prefix { get; set; }
    /// <summary><c>share</c>: latency metrics of this import carry the requestor's full client info, not only its account and RTT.</summary>
    public bool Share { get; set; }
    /// <summary>JWT import <c>token</c>: the raw activation JWT; null when the import has none.</summary>
    public string? Token { get; set; }
    /// <summary>The activation <see cref="Token"/> decoded with a valid signature; null when absent, malformed or badly signed.</summary>
    public NatsBroker.Auth.Jwt.ActivationClaims? Activation { get; set; }
}
