namespace NatsBroker.Configuration;

/// <summary>
/// Every option the broker understands, with nats-server's defaults (server/const.go, server/opts.go).
/// Filled from the command line (<see cref="CommandLine"/>) and the config file (<see cref="ConfigLoader"/>);
/// command-line flags win over the file, as in nats-server.
/// </summary>
public sealed class ServerOptions
{
    public const int DefaultPort = 4222;
    public const int DefaultMaxPayload = 1024 * 1024;          // MAX_PAYLOAD_SIZE
    public const int DefaultMaxControlLine = 4096;             // MAX_CONTROL_LINE_SIZE
    public const long DefaultMaxPending = 64L * 1024 * 1024;   // MAX_PENDING_SIZE
    public const int DefaultMaxConnections = 64 * 1024;        // DEFAULT_MAX_CONNECTIONS

    public string? ConfigFile { get; set; }
    /// <summary>nats-server's digest of the parsed config file (<see cref="NatsBroker.Configuration.ConfigDigest"/>); null without a file.</summary>
    public string? ConfigDigest { get; set; }

    // ---- Listener ----
    public string Host { get; set; } = "0.0.0.0";
    /// <summary>Client port; -1 picks a random free port (RANDOM_PORT in nats-server).</summary>
    public int Port { get; set; } = DefaultPort;
    public string? ServerName { get; set; }
    public string? ClientAdvertise { get; set; }
    /// <summary>Path of the Unix domain socket listener (our extension); null = none.</summary>
    public string? UnixSocketPath { get; set; }

    // ---- Gateways (core/Configuration/OptionMapper.Gateways.cs) ----
    /// <summary>
    /// The file has a top-level <c>tls {}</c> block: TLS for clients is served by the tls-terminator gateway
    /// process (gateways/tls-terminator), which owns host/port; the core then serves clients only on its Unix socket.
    /// </summary>
    public bool TlsConfigured { get; set; }
    /// <summary>The file has a <c>websocket {}</c> block: served by the websocket gateway process (gateways/websocket).</summary>
    public bool WebSocketConfigured { get; set; }
    /// <summary>
    /// The websocket block's own auth (<c>authorization {}</c>, <c>no_auth_user</c>) for clients relayed by the
    /// websocket gateway; null when it has none. Read by the core because it is the core that authenticates them.
    /// </summary>
    public ListenerAuthOverride? WebSocketAuth { get; set; }

    /// <summary>
    /// <c>websocket { authorization { timeout } }</c>: the WebSocket clients' auth timeout (server/websocket.go
    /// createWSClient). The websocket gateway applies it; the core, which cannot tell a WebSocket link from another
    /// Unix-socket client before CONNECT, only waits at least this long on its Unix socket (ClientConnection.OnHeartbeat).
    /// </summary>
    public TimeSpan? WebSocketAuthTimeout { get; set; }
    /// <summary>The file has an <c>mqtt {}</c> block: served by the MQTT gateway process (gateways/mqtt).</summary>
    public bool MqttConfigured { get; set; }
    /// <summary>
    /// Where the websocket / mqtt gateway listens, read from its block's host/net, port and listen as the gateway reads
    /// them (gateways/link ListenKeys; the gateway validates the block). The core only probes these to say "ready" once
    /// the gateway accepts (GatewaySupervisor.Readiness.cs); a port of 0 or -1 (none or random) is not waited for.
    /// </summary>
    public string WebSocketHost { get; set; } = "0.0.0.0";
    /// <inheritdoc cref="WebSocketHost"/>
    public int WebSocketPort { get; set; }
    /// <inheritdoc cref="WebSocketHost"/>
    public string MqttHost { get; set; } = "0.0.0.0";
    /// <inheritdoc cref="WebSocketHost"/>
    public int MqttPort { get; set; } = 1883;
    /// <summary><c>protocol_gateways { managed: external }</c>: protocol gateways run elsewhere (systemd units); the core does not start them.</summary>
    public bool GatewaysManagedExternally { get; set; }
    /// <summary><c>proxies { trusted = [ {key: "U..."} ] }</c> (nats-server 2.12, ADR-55): public nkeys of trusted proxies.</summary>
    public List<string> TrustedProxies { get; set; } = [];

    // ---- Cluster (core/Configuration/OptionMapper.Cluster.cs, core/Cluster) ----
    /// <summary>The route listener and the routes to solicit; null when this server is not in a cluster.</summary>
    public ClusterOptions? Cluster { get; set; }
    /// <summary>
    /// The <c>cluster {}</c> block and cluster flags as read, listener or not: a file may hold the routes and the
    /// auth while <c>-cluster</c> gives the listener, so the block outlives the file until the flags are applied;
    /// then <see cref="Cluster"/> is set from it (OptionMapper.SettleCluster).
    /// </summary>
    internal ClusterOptions? ClusterBlock { get; set; }

    // ---- Limits ----
    public int MaxPayload { get; set; } = DefaultMaxPayload;
    public int MaxControlLine { get; set; } = DefaultMaxControlLine;
    public long MaxPending { get; set; } = DefaultMaxPending;
    public int MaxConnections { get; set; } = DefaultMaxConnections;
    /// <summary>0 = unlimited.</summary>
    public int MaxSubscriptions { get; set; }
    /// <summary>0 = unlimited.</summary>
    public int MaxSubTokens { get; set; }
    public TimeSpan PingInterval { get; set; } = TimeSpan.FromMinutes(2);
    public int MaxPingsOut { get; set; } = 2;
    public TimeSpan WriteDeadline { get; set; } = TimeSpan.FromSeconds(10);
    public TimeSpan AuthTimeout { get; set; } = TimeSpan.FromSeconds(2);
    public bool NoHeaderSupport { get; set; }
    public bool DisableSublistCache { get; set; }

    // ---- Auth ----
    public string? Username { get; set; }
    public string? Password { get; set; }
    public string? Authorization { get; set; }
    /// <summary>authorization { proxy_required } (nats-server 2.12, ADR-55): the single user or token must come through a trusted proxy.</summary>
    public bool ProxyRequired { get; set; }
    public List<UserConfig> Users { get; set; } = [];
    public string? NoAuthUser { get; set; }
    /// <summary><c>authorization { auth_callout {} }</c>; null = no callout.</summary>
    public AuthCalloutOptions? AuthCallout { get; set; }
    /// <summary>Accounts from the <c>accounts {}</c> block; users outside any account belong to <c>$G</c>.</summary>
    public List<AccountConfig> Accounts { get; set; } = [];
    /// <summary>Operator/JWT mode, resolvers and the system account (OperatorOptions.cs).</summary>
    public OperatorOptions Operator { get; set; } = new();
    /// <summary>Top-level <c>mappings {}</c>: subject mappings of the global account <c>$G</c>.</summary>
    public List<NatsBroker.Accounts.SubjectMappingConfig> Mappings { get; set; } = [];

    // ---- Monitoring ----
    private string? _httpHost;

    /// <summary>Monitoring bind address; follows <see cref="Host"/> until set, as in nats-server (setBaselineOptions).</summary>
    public string HttpHost { get => _httpHost ?? Host; set => _httpHost = value; }
    /// <summary>0 = disabled; -1 = random port.</summary>
    public int HttpPort { get; set; }

    // ---- JetStream ----
    public bool JetStream { get; set; }
    public string? StoreDir { get; set; }
    public long JetStreamMaxMemory { get; set; } = -1;
    public long JetStreamMaxStore { get; set; } = -1;
    /// <summary>JetStream domain (<c>jetstream { domain }</c>), reported in account info and PubAcks.</summary>
    public string? JetStreamDomain { get; set; }
    /// <summary>Fsync period of file streams (<c>jetstream { sync_interval }</c>); null = nats-server's 2 minutes.</summary>
    public TimeSpan? JetStreamSyncInterval { get; set; }
    /// <summary><c>sync_interval: always</c>: every stored message is fsynced before it is acknowledged.</summary>
    public bool JetStreamSyncAlways { get; set; }
    /// <summary>
    /// Idle time after which an atomic or fast-ingest batch is abandoned (<c>jetstream { limits { batch { timeout } } }</c>,
    /// nats-server MaxBatchTimeout; default streamDefaultMaxBatchTimeout, 10 s).
    /// </summary>
    public TimeSpan JetStreamBatchTimeout { get; set; } = TimeSpan.FromSeconds(10);
    /// <summary>
    /// <c>jetstream { limits { batch { max_inflight_per_stream } } }</c> (nats-server MaxBatchInflightPerStream): open
    /// batches per stream, atomic and fast alike; 0 or less keeps nats-server's defaults (50 atomic, 1,000 fast).
    /// </summary>
    public int JetStreamBatchMaxInflightPerStream { get; set; }
    /// <summary>
    /// <c>jetstream { limits { batch { max_inflight_total } } }</c> (nats-server MaxBatchInflightTotal): open batches on
    /// the server, counted separately for atomic and fast; 0 or less keeps the defaults (1,000 atomic, 50,000 fast).
    /// </summary>
    public int JetStreamBatchMaxInflightTotal { get; set; }
    /// <summary>
    /// <c>jetstream { limits { batch { max_msgs } } }</c> (nats-server MaxBatchSize): messages in one atomic batch; 0 or
    /// less keeps the default 1,000.
    /// </summary>
    public int JetStreamBatchMaxMsgs { get; set; }
    /// <summary>
    /// Name of the storage engine for file-backed streams ("file" by default). Our extension, set with
    /// <c>jetstream { store_engine: name }</c>; nats-server has no such key.
    /// </summary>
    public string? StorageEngine { get; set; }
    /// <summary>Third-party storage engine assemblies to load (<c>jetstream { store_engine_path: [...] }</c>, our extension).</summary>
    public List<string> StorageEnginePaths { get; set; } = [];
    /// <summary>
    /// <c>jetstream { persist_mode: async }</c> (our extension; nats-server 2.12 has it per stream only): file
    /// streams that do not set <c>persist_mode</c> themselves acknowledge before their write reaches the disk.
    /// </summary>
    public bool JetStreamPersistAsync { get; set; }
    /// <summary>
    /// <c>jetstream { store_engine_options { key: value } }</c> (our extension): handed unchanged, as strings, to the
    /// storage engine of every file stream (<c>StreamStoreConfig.EngineOptions</c>; see storage/README.md).
    /// </summary>
    public Dictionary<string, string> StorageEngineOptions { get; set; } = new(StringComparer.Ordinal);

    // ---- Logging ----
    public string? LogFile { get; set; }
    public bool Debug { get; set; }
    public bool Trace { get; set; }
    public bool TraceVerbose { get; set; }
    public bool Logtime { get; set; } = true;
    public bool LogtimeUtc { get; set; }
    public bool Syslog { get; set; }
    /// <summary>Log file size that triggers rotation; 0 = no limit (log_size_limit / --log_size_limit).</summary>
    public long LogSizeLimit { get; set; }
    /// <summary>Longest traced message payload; 0 = unlimited (max_traced_msg_len).</summary>
    public int MaxTracedMsgLen { get; set; }

    // ---- Process ----
    public string? PidFile { get; set; }
    public string? PortsFileDir { get; set; }
    public TimeSpan LameDuckDuration { get; set; } = TimeSpan.FromMinutes(2);
    public TimeSpan LameDuckGracePeriod { get; set; } = TimeSpan.FromSeconds(10);
    /// <summary>server_tags split at the first ':' ("az:us-east" → az = us-east; a tag without ':' maps to "").</summary>
    public Dictionary<string, string> Tags { get; set; } = [];
    /// <summary>server_tags as written, in order (nats-server keeps a plain tag list).</summary>
    public List<string> ServerTags { get; set; } = [];

    public bool AuthRequired =>
        Users.Any(u => u.Nkey is not null) ||
        Users.Count > 0 || Username is not null || Authorization is not null;
}

/// <summary>One entry of an <c>authorization { users: [...] }</c> list.</summary>
public sealed class UserConfig
{
    public string User { get; set; } = "";
    /// <summary>The user's public NKey ("U..."), for nkey users (<c>{ nkey: U... }</c>); authenticated by signing the INFO nonce.</summary>
    public string? Nkey { get; set; }
    /// <summary>Plain text or a bcrypt hash ("$2a$..."), as nats-server accepts.</summary>
    public string? Password { get; set; }
    public Permissions? Permissions { get; set; }
    /// <summary>allowed_connection_types (STANDARD, WEBSOCKET, LEAFNODE, MQTT); null = any.</summary>
    public List<string>? AllowedConnectionTypes { get; set; }
    /// <summary>The account this user belongs to (declared in <c>accounts { A: { users: [...] } }</c>); null = <c>$G</c>.</summary>
    public string? Account { get; set; }
    /// <summary>proxy_required (nats-server 2.12, ADR-55): this user may connect only through a trusted proxy.</summary>
    public bool ProxyRequired { get; set; }
}

/// <summary>Publish/subscribe permissions (server/auth.go Permissions).</summary>
public sealed class Permissions
{
    public SubjectPermission? Publish { get; set; }
    public SubjectPermission? Subscribe { get; set; }
    public ResponsePermission? Response { get; set; }
}

public sealed class SubjectPermission
{
    public List<string>? Allow { get; set; }
    public List<string>? Deny { get; set; }
}

/// <summary><c>allow_responses</c>: a client may publish to reply subjects it received, up to MaxMsgs within Expires.</summary>
public sealed class ResponsePermission
{
    public const int DefaultMaxMsgs = 1;
    public static readonly TimeSpan DefaultExpires = TimeSpan.FromMinutes(2);
    public int MaxMsgs { get; set; } = DefaultMaxMsgs;
    public TimeSpan Expires { get; set; } = DefaultExpires;
}
