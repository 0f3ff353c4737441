using System.Text.Encodings.Web;
using System.Text.Json;
using System.Text.Json.Serialization;

namespace NatsBroker.Monitoring;

// The JSON documents of nats-server 2.9.10's monitoring endpoints (server/monitor.go), field for field where we
// have the data. Go's `omitempty` is JsonIgnore(WhenWritingDefault/WhenWritingNull); see docs/monitoring.md.

/// <summary>An always-empty object (<c>{}</c>): the option blocks of features we do not have (gateway, leaf, mqtt, websocket).</summary>
public sealed class EmptyObject;

public sealed class Varz
{
    [JsonPropertyName("server_id")] public string ServerId { get; set; } = "";
    [JsonPropertyName("server_name")] public string ServerName { get; set; } = "";
    [JsonPropertyName("version")] public string Version { get; set; } = "";
    [JsonPropertyName("proto")] public int Proto { get; set; }
    [JsonPropertyName("go")] public string Go { get; set; } = "";
    [JsonPropertyName("host")] public string Host { get; set; } = "";
    [JsonPropertyName("port")] public int Port { get; set; }
    [JsonPropertyName("auth_required"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingDefault)] public bool AuthRequired { get; set; }
    /// <summary>In a cluster: the URLs our clients' INFO carries (ours, then the peers'; monitor.go updateVarzRuntimeFields
    /// copies s.info.ClientConnectURLs); absent outside one.</summary>
    [JsonPropertyName("connect_urls"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] public string[]? ConnectUrls { get; set; }
    [JsonPropertyName("max_connections")] public int MaxConnections { get; set; }
    [JsonPropertyName("max_subscriptions"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingDefault)] public int MaxSubscriptions { get; set; }
    /// <summary>Nanoseconds (a Go time.Duration).</summary>
    [JsonPropertyName("ping_interval")] public long PingInterval { get; set; }
    [JsonPropertyName("ping_max")] public int PingMax { get; set; }
    [JsonPropertyName("http_host")] public string HttpHost { get; set; } = "";
    [JsonPropertyName("http_port")] public int HttpPort { get; set; }
    [JsonPropertyName("http_base_path")] public string HttpBasePath { get; set; } = "";
    [JsonPropertyName("https_port")] public int HttpsPort { get; set; }
    /// <summary>Seconds.</summary>
    [JsonPropertyName("auth_timeout")] public double AuthTimeout { get; set; }
    [JsonPropertyName("max_control_line")] public int MaxControlLine { get; set; }
    [JsonPropertyName("max_payload")] public int MaxPayload { get; set; }
    [JsonPropertyName("max_pending")] public long MaxPending { get; set; }
    /// <summary>The cluster's options; <c>{}</c> outside a cluster (every field of ClusterOptsVarz is omitempty).</summary>
    [JsonPropertyName("cluster")] public ClusterVarz Cluster { get; set; } = new();
    [JsonPropertyName("gateway")] public EmptyObject Gateway { get; set; } = new();
    [JsonPropertyName("leaf")] public EmptyObject Leaf { get; set; } = new();
    [JsonPropertyName("mqtt")] public EmptyObject Mqtt { get; set; } = new();
    [JsonPropertyName("websocket")] public EmptyObject Websocket { get; set; } = new();
    [JsonPropertyName("jetstream")] public JetStreamVarz JetStream { get; set; } = new();
    /// <summary>Seconds.</summary>
    [JsonPropertyName("tls_timeout")] public double TlsTimeout { get; set; }
    /// <summary>Nanoseconds.</summary>
    [JsonPropertyName("write_deadline")] public long WriteDeadline { get; set; }
    [JsonPropertyName("start")] public DateTime Start { get; set; }
    [JsonPropertyName("now")] public DateTime Now { get; set; }
    [JsonPropertyName("uptime")] public string Uptime { get; set; } = "";
    [JsonPropertyName("mem")] public long Mem { get; set; }
    [JsonPropertyName("cores")] public int Cores { get; set; }
    [JsonPropertyName("gomaxprocs")] public int GoMaxProcs { get; set; }
    [JsonPropertyName("cpu")] public double Cpu { get; set; }
    [JsonPropertyName("connections")] public int Connections { get; set; }
    [JsonPropertyName("total_connections")] public long TotalConnections { get; set; }
    /// <summary>Route connections (server.go numRoutes: every pooled and pinned one; stage 1 has one per peer).</summary>
    [JsonPropertyName("routes")] public int Routes { get; set; }
    /// <summary>Peers with a registered route (server.go numRemotes: <c>len(s.routes)</c>, keyed by remote server ID).</summary>
    [JsonPropertyName("remotes")] public int Remotes { get; set; }
    [JsonPropertyName("leafnodes")] public int LeafNodes { get; set; }
    // 2.14.5's order: in, in from clients, out, out to clients. Every connection is a client's until routes exist.
    [JsonPropertyName("in_msgs")] public long InMsgs { get; set; }
    [JsonPropertyName("in_bytes")] public long InBytes { get; set; }
    [JsonPropertyName("in_client_msgs")] public long InClientMsgs { get; set; }
    [JsonPropertyName("in_client_bytes")] public long InClientBytes { get; set; }
    [JsonPropertyName("out_msgs")] public long OutMsgs { get; set; }
    [JsonPropertyName("out_bytes")] public long OutBytes { get; set; }
    [JsonPropertyName("out_client_msgs")] public long OutClientMsgs { get; set; }
    [JsonPropertyName("out_client_bytes")] public long OutClientBytes { get; set; }
    [JsonPropertyName("slow_consumers")] public long SlowConsumers { get; set; }
    /// <summary>2.11+: connections closed as stale (missed pings) since start.</summary>
    [JsonPropertyName("stale_connections")] public long StaleConnections { get; set; }
    /// <summary>2.11+: fast-producer stalls since start (each wait of a read on a backed-up destination).</summary>
    [JsonPropertyName("stalled_clients")] public long StalledClients { get; set; }
    [JsonPropertyName("subscriptions")] public long Subscriptions { get; set; }
    [JsonPropertyName("http_req_stats")] public SortedDictionary<string, long> HttpReqStats { get; set; } = new(StringComparer.Ordinal);
    [JsonPropertyName("config_load_time")] public DateTime ConfigLoadTime { get; set; }
    /// <summary>2.10+: sha256 of the parsed config file as Go's JSON ("" without a file; NatsBroker.Configuration.ConfigDigest).</summary>
    [JsonPropertyName("config_digest")] public string ConfigDigest { get; set; } = "";
    [JsonPropertyName("tags"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] public string[]? Tags { get; set; }
    [JsonPropertyName("system_account"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] public string? SystemAccount { get; set; }
    /// <summary>2.11+: slow consumers by connection kind (every one is a client's until routes and leaf nodes exist).</summary>
    [JsonPropertyName("slow_consumer_stats")] public ConnectionKindCounts SlowConsumerStats { get; set; } = new();
    /// <summary>2.11+: stale connections by connection kind.</summary>
    [JsonPropertyName("stale_connection_stats")] public ConnectionKindCounts StaleConnectionStats { get; set; } = new();
    /// <summary>nats-server 2.12 (ADR-55): the trusted proxy keys; absent when none are trusted.</summary>
    [JsonPropertyName("proxies"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] public ProxiesVarz? Proxies { get; set; }
    /// <summary>Ours: the gateway processes (trusted proxies) with end users connected now; absent when none are.</summary>
    [JsonPropertyName("connected_gateways"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] public List<ConnectedGatewayVarz>? ConnectedGateways { get; set; }
}

/// <summary>
/// nats-server ClusterOptsVarz (server/monitor.go, filled by createVarz): every field omitempty, so a server outside a
/// cluster writes <c>{}</c>. Durations in seconds, except <see cref="WriteDeadline"/> (nanoseconds).
/// </summary>
public sealed class ClusterVarz
{
    /// <summary>The cluster name in use (info.Cluster: a dynamic one too, or the one taken from a peer).</summary>
    [JsonPropertyName("name"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] public string? Name { get; set; }
    [JsonPropertyName("addr"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] public string? Host { get; set; }
    [JsonPropertyName("cluster_port"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingDefault)] public int Port { get; set; }
    [JsonPropertyName("auth_timeout"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingDefault)] public double AuthTimeout { get; set; }
    /// <summary>The configured routes as host:port (monitor.go urlsToStrings: url.Host, no scheme or credentials).</summary>
    [JsonPropertyName("urls"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] public List<string>? Urls { get; set; }
    [JsonPropertyName("tls_timeout"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingDefault)] public double TlsTimeout { get; set; }
    [JsonPropertyName("tls_required"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingDefault)] public bool TlsRequired { get; set; }
    [JsonPropertyName("tls_verify"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingDefault)] public bool TlsVerify { get; set; }
    /// <summary>2.10+: route connections per peer; -1 = no pooling (the 2.9 behaviour, which stage 1 has).</summary>
    [JsonPropertyName("pool_size"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingDefault)] public int PoolSize { get; set; }
    /// <summary>2.11+: the cluster block's own <c>write_deadline</c> (nanoseconds); 0 (omitted) unless configured.</summary>
    [JsonPropertyName("write_deadline"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingDefault)] public long WriteDeadline { get; set; }
    /// <summary>2.11+: the cluster block's <c>write_timeout</c> policy ("close", "retry"); omitted unless configured.</summary>
    [JsonPropertyName("write_timeout"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] public string? WriteTimeout { get; set; }
}

/// <summary>nats-server SlowConsumersStats / StaleConnectionStats (server/monitor.go): a count per connection kind.</summary>
public sealed class ConnectionKindCounts
{
    [JsonPropertyName("clients")] public ulong Clients { get; set; }
    [JsonPropertyName("routes")] public ulong Routes { get; set; }
    [JsonPropertyName("gateways")] public ulong Gateways { get; set; }
    [JsonPropertyName("leafs")] public ulong Leafs { get; set; }
}

/// <summary>nats-server 2.12 ProxiesOptsVarz (server/monitor.go).</summary>
public sealed class ProxiesVarz
{
    [JsonPropertyName("trusted"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] public List<ProxyInfo>? Trusted { get; set; }
}

/// <summary>Ours: one gateway (a trusted proxy key and the kind of gateway it reported) and its open end-user connections.</summary>
public sealed class ConnectedGatewayVarz
{
    [JsonPropertyName("key")] public string Key { get; set; } = "";
    [JsonPropertyName("gateway"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] public string? Gateway { get; set; }
    /// <summary>True for the key the core made for the gateways it supervises (not in the config's proxies block).</summary>
    [JsonPropertyName("supervised"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingDefault)] public bool Supervised { get; set; }
    [JsonPropertyName("connections")] public int Connections { get; set; }
}

public sealed class JetStreamVarz
{
    [JsonPropertyName("config"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] public JetStreamConfigInfo? Config { get; set; }
    [JsonPropertyName("stats"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] public JetStreamStatsInfo? Stats { get; set; }
    /// <summary>2.10+ JSLimitOpts: the server's <c>jetstream { limits {} }</c>, every field omitted when unset.</summary>
    [JsonPropertyName("limits"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] public JetStreamLimitsVarz? Limits { get; set; }
}

/// <summary>nats-server JSLimitOpts (server/opts.go) as /varz writes it, the batch limits ours has; durations in nanoseconds.</summary>
public sealed class JetStreamLimitsVarz
{
    [JsonPropertyName("max_batch_inflight_per_stream"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingDefault)] public int MaxBatchInflightPerStream { get; set; }
    [JsonPropertyName("max_batch_inflight_total"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingDefault)] public int MaxBatchInflightTotal { get; set; }
    [JsonPropertyName("max_batch_size"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingDefault)] public int MaxBatchSize { get; set; }
    [JsonPropertyName("max_batch_timeout"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingDefault)] public long MaxBatchTimeout { get; set; }
}

public sealed class JetStreamConfigInfo
{
    [JsonPropertyName("max_memory")] public long MaxMemory { get; set; }
    [JsonPropertyName("max_storage")] public long MaxStorage { get; set; }
    [JsonPropertyName("store_dir"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] public string? StoreDir { get; set; }
    /// <summary>2.10+: nanoseconds between background fsyncs (2 minutes unless configured).</summary>
    [JsonPropertyName("sync_interval"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingDefault)] public long SyncInterval { get; set; }
    [JsonPropertyName("sync_always"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingDefault)] public bool SyncAlways { get; set; }
    [JsonPropertyName("domain"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] public string? Domain { get; set; }
    /// <summary>2.11+: the API refuses unknown fields and malformed requests; ours always parses strictly.</summary>
    [JsonPropertyName("strict"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingDefault)] public bool Strict { get; set; }
}

public sealed class JetStreamStatsInfo
{
    [JsonPropertyName("memory")] public ulong Memory { get; set; }
    [JsonPropertyName("storage")] public ulong Storage { get; set; }
    [JsonPropertyName("reserved_memory")] public ulong ReservedMemory { get; set; }
    [JsonPropertyName("reserved_storage")] public ulong ReservedStorage { get; set; }
    [JsonPropertyName("accounts")] public int Accounts { get; set; }
    [JsonPropertyName("ha_assets")] public int HaAssets { get; set; }
    [JsonPropertyName("api")] public JetStreamApiStats Api { get; set; } = new();
}

public sealed class JetStreamApiStats
{
    /// <summary>2.11+: the JetStream API level the server implements (ADR-44).</summary>
    [JsonPropertyName("level")] public int Level { get; set; }
    [JsonPropertyName("total")] public ulong Total { get; set; }
    [JsonPropertyName("errors")] public ulong Errors { get; set; }
}

public sealed class Connz
{
    [JsonPropertyName("server_id")] public string ServerId { get; set; } = "";
    [JsonPropertyName("now")] public DateTime Now { get; set; }
    [JsonPropertyName("num_connections")] public int NumConnections { get; set; }
    [JsonPropertyName("total")] public int Total { get; set; }
    [JsonPropertyName("offset")] public int Offset { get; set; }
    [JsonPropertyName("limit")] public int Limit { get; set; }
    [JsonPropertyName("connections")] public List<ConnInfo> Connections { get; set; } = [];
}

public sealed class ConnInfo
{
    [JsonPropertyName("cid")] public ulong Cid { get; set; }
    [JsonPropertyName("kind"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] public string? Kind { get; set; }
    [JsonPropertyName("type"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] public string? Type { get; set; }
    [JsonPropertyName("ip")] public string Ip { get; set; } = "";
    [JsonPropertyName("port")] public int Port { get; set; }
    [JsonPropertyName("start")] public DateTime Start { get; set; }
    [JsonPropertyName("last_activity")] public DateTime LastActivity { get; set; }
    [JsonPropertyName("stop"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] public DateTime? Stop { get; set; }
    [JsonPropertyName("reason"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] public string? Reason { get; set; }
    [JsonPropertyName("rtt"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] public string? Rtt { get; set; }
    [JsonPropertyName("uptime")] public string Uptime { get; set; } = "";
    [JsonPropertyName("idle")] public string Idle { get; set; } = "";
    [JsonPropertyName("pending_bytes")] public long PendingBytes { get; set; }
    [JsonPropertyName("in_msgs")] public long InMsgs { get; set; }
    [JsonPropertyName("out_msgs")] public long OutMsgs { get; set; }
    [JsonPropertyName("in_bytes")] public long InBytes { get; set; }
    [JsonPropertyName("out_bytes")] public long OutBytes { get; set; }
    [JsonPropertyName("subscriptions")] public int Subscriptions { get; set; }
    [JsonPropertyName("name"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] public string? Name { get; set; }
    [JsonPropertyName("lang"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] public string? Lang { get; set; }
    [JsonPropertyName("version"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] public string? Version { get; set; }
    [JsonPropertyName("tls_version"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] public string? TlsVersion { get; set; }
    [JsonPropertyName("tls_cipher_suite"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] public string? TlsCipherSuite { get; set; }
    [JsonPropertyName("tls_first"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingDefault)] public bool TlsFirst { get; set; }
    [JsonPropertyName("authorized_user"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] public string? AuthorizedUser { get; set; }
    [JsonPropertyName("account"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] public string? Account { get; set; }
    [JsonPropertyName("subscriptions_list"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] public List<string>? SubscriptionsList { get; set; }
    [JsonPropertyName("subscriptions_list_detail"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] public List<SubDetail>? SubscriptionsListDetail { get; set; }
    /// <summary>The trusted proxy this connection came through (nats-server 2.12 ConnInfo.Proxy).</summary>
    [JsonPropertyName("proxy"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] public ProxyInfo? Proxy { get; set; }
}

/// <summary>nats-server 2.12 ProxyInfo (server/monitor.go) plus ours: which kind of gateway it was.</summary>
public sealed class ProxyInfo
{
    [JsonPropertyName("key")] public string Key { get; set; } = "";
    [JsonPropertyName("gateway"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] public string? Gateway { get; set; }
    /// <summary>The WebSocket upgrade's Origin header (websocket gateway users that sent one).</summary>
    [JsonPropertyName("ws_origin"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] public string? WebSocketOrigin { get; set; }
}

public sealed class SubDetail
{
    [JsonPropertyName("account"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] public string? Account { get; set; }
    [JsonPropertyName("subject")] public string Subject { get; set; } = "";
    [JsonPropertyName("qgroup"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] public string? Queue { get; set; }
    [JsonPropertyName("sid")] public string Sid { get; set; } = "";
    [JsonPropertyName("msgs")] public long Msgs { get; set; }
    [JsonPropertyName("max"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingDefault)] public long Max { get; set; }
    [JsonPropertyName("cid")] public ulong Cid { get; set; }
}

/// <summary>/subsz: the SubList statistics, and with subs=1 a page of subscriptions (2.14.5 writes every field either way).</summary>
public sealed class Subsz
{
    [JsonPropertyName("server_id")] public string ServerId { get; set; } = "";
    [JsonPropertyName("now")] public DateTime Now { get; set; }
    [JsonPropertyName("num_subscriptions")] public long NumSubscriptions { get; set; }
    [JsonPropertyName("num_cache")] public long NumCache { get; set; }
    [JsonPropertyName("num_inserts")] public long NumInserts { get; set; }
    [JsonPropertyName("num_removes")] public long NumRemoves { get; set; }
    [JsonPropertyName("num_matches")] public long NumMatches { get; set; }
    [JsonPropertyName("cache_hit_rate")] public double CacheHitRate { get; set; }
    [JsonPropertyName("max_fanout")] public long MaxFanout { get; set; }
    [JsonPropertyName("avg_fanout")] public double AvgFanout { get; set; }
    [JsonPropertyName("total")] public int Total { get; set; }
    [JsonPropertyName("offset")] public int Offset { get; set; }
    [JsonPropertyName("limit")] public int Limit { get; set; }
    [JsonPropertyName("subscriptions_list"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] public List<SubDetail>? SubscriptionsList { get; set; }
}

/// <summary>
/// nats-server Routez (server/monitor.go). Its <c>import</c>/<c>export</c> (the cluster block's permissions) come
/// after <c>now</c> when configured.
/// </summary>
public sealed class Routez
{
    [JsonPropertyName("server_id")] public string ServerId { get; set; } = "";
    /// <summary>2.10+.</summary>
    [JsonPropertyName("server_name")] public string ServerName { get; set; } = "";
    [JsonPropertyName("now")] public DateTime Now { get; set; }
    [JsonPropertyName("import"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] public NatsBroker.Cluster.RoutePermission? Import { get; set; }
    [JsonPropertyName("export"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] public NatsBroker.Cluster.RoutePermission? Export { get; set; }
    [JsonPropertyName("num_routes")] public int NumRoutes { get; set; }
    [JsonPropertyName("routes")] public List<RouteDetail> Routes { get; set; } = [];
}

/// <summary>
/// One route connection in /routez (nats-server RouteInfo, server/monitor.go). Omitted as nats-server omits them:
/// the peer's <c>import</c>/<c>export</c> (when its INFO had none) and <c>account</c> (pinned-account routes only,
/// 2.10+ pooling).
/// </summary>
public sealed class RouteDetail
{
    [JsonPropertyName("rid")] public ulong Rid { get; set; }
    [JsonPropertyName("remote_id")] public string RemoteId { get; set; } = "";
    /// <summary>2.10+; not omitempty, so "" for a peer that sent no name.</summary>
    [JsonPropertyName("remote_name")] public string RemoteName { get; set; } = "";
    [JsonPropertyName("did_solicit")] public bool DidSolicit { get; set; }
    /// <summary>An explicit route (from the config's <c>routes</c>), not one learnt by gossip.</summary>
    [JsonPropertyName("is_configured")] public bool IsConfigured { get; set; }
    [JsonPropertyName("ip")] public string Ip { get; set; } = "";
    [JsonPropertyName("port")] public int Port { get; set; }
    [JsonPropertyName("start")] public DateTime Start { get; set; }
    [JsonPropertyName("last_activity")] public DateTime LastActivity { get; set; }
    [JsonPropertyName("rtt"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] public string? Rtt { get; set; }
    [JsonPropertyName("uptime")] public string Uptime { get; set; } = "";
    [JsonPropertyName("idle")] public string Idle { get; set; } = "";
    [JsonPropertyName("import"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] public NatsBroker.Cluster.RoutePermission? Import { get; set; }
    [JsonPropertyName("export"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] public NatsBroker.Cluster.RoutePermission? Export { get; set; }
    [JsonPropertyName("pending_size")] public long PendingSize { get; set; }
    [JsonPropertyName("in_msgs")] public long InMsgs { get; set; }
    [JsonPropertyName("out_msgs")] public long OutMsgs { get; set; }
    [JsonPropertyName("in_bytes")] public long InBytes { get; set; }
    [JsonPropertyName("out_bytes")] public long OutBytes { get; set; }
    /// <summary>The peer's subscriptions held on this connection (<c>len(r.subs)</c>).</summary>
    [JsonPropertyName("subscriptions")] public int Subscriptions { get; set; }
    [JsonPropertyName("subscriptions_list"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] public List<string>? SubscriptionsList { get; set; }
    [JsonPropertyName("subscriptions_list_detail"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] public List<SubDetail>? SubscriptionsListDetail { get; set; }
    [JsonPropertyName("account"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] public string? Account { get; set; }
    /// <summary>2.10+: the route's compression mode ("off", "not supported", "s2_fast"...).</summary>
    [JsonPropertyName("compression"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] public string? Compression { get; set; }
}

public sealed class Gatewayz
{
    [JsonPropertyName("server_id")] public string ServerId { get; set; } = "";
    [JsonPropertyName("now")] public DateTime Now { get; set; }
    [JsonPropertyName("outbound_gateways")] public Dictionary<string, EmptyObject> OutboundGateways { get; set; } = [];
    [JsonPropertyName("inbound_gateways")] public Dictionary<string, EmptyObject> InboundGateways { get; set; } = [];
}

public sealed class Leafz
{
    [JsonPropertyName("server_id")] public string ServerId { get; set; } = "";
    [JsonPropertyName("now")] public DateTime Now { get; set; }
    [JsonPropertyName("leafnodes")] public int LeafNodes { get; set; }
    /// <summary>Always null: nats-server writes <c>"leafs": null</c> when there are none.</summary>
    [JsonPropertyName("leafs")] public List<EmptyObject>? Leafs { get; set; }
}

public sealed class Accountz
{
    [JsonPropertyName("server_id")] public string ServerId { get; set; } = "";
    [JsonPropertyName("now")] public DateTime Now { get; set; }
    [JsonPropertyName("system_account"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] public string? SystemAccount { get; set; }
    [JsonPropertyName("accounts"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] public List<string>? Accounts { get; set; }
    [JsonPropertyName("account_detail"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] public AccountDetail? AccountDetail { get; set; }
}

public sealed class AccountDetail
{
    [JsonPropertyName("account_name")] public string AccountName { get; set; } = "";
    [JsonPropertyName("update_time")] public DateTime UpdateTime { get; set; }
    [JsonPropertyName("expired")] public bool Expired { get; set; }
    [JsonPropertyName("complete")] public bool Complete { get; set; }
    [JsonPropertyName("jetstream_enabled")] public bool JetStreamEnabled { get; set; }
    [JsonPropertyName("leafnode_connections")] public int LeafNodeConnections { get; set; }
    [JsonPropertyName("client_connections")] public int ClientConnections { get; set; }
    [JsonPropertyName("subscriptions")] public long Subscriptions { get; set; }
    [JsonPropertyName("exports"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] public List<AccountExportInfo>? Exports { get; set; }
    [JsonPropertyName("imports"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] public List<AccountImportInfo>? Imports { get; set; }
    [JsonPropertyName("sublist_stats")] public Subscriptions.SubListStats? SublistStats { get; set; }
}

/// <summary>server/monitor.go ExtExport (the jwt.Export fields nats-server fills from a config export).</summary>
public sealed class AccountExportInfo
{
    [JsonPropertyName("subject")] public string Subject { get; set; } = "";
    [JsonPropertyName("type")] public string Type { get; set; } = "";
    [JsonPropertyName("response_type"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] public string? ResponseType { get; set; }
    [JsonPropertyName("approved_accounts"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] public List<string>? Accounts { get; set; }
}

/// <summary>server/monitor.go ExtImport.</summary>
public sealed class AccountImportInfo
{
    [JsonPropertyName("subject")] public string Subject { get; set; } = "";
    [JsonPropertyName("account")] public string Account { get; set; } = "";
    [JsonPropertyName("to"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] public string? To { get; set; }
    [JsonPropertyName("type")] public string Type { get; set; } = "";
    [JsonPropertyName("invalid")] public bool Invalid { get; set; }
    [JsonPropertyName("share")] public bool Share { get; set; }
    [JsonPropertyName("tracking")] public bool Tracking { get; set; }
}

public sealed class AccountStatz
{
    [JsonPropertyName("server_id")] public string ServerId { get; set; } = "";
    [JsonPropertyName("now")] public DateTime Now { get; set; }
    [JsonPropertyName("account_statz")] public List<AccountStat> Accounts { get; set; } = [];
}

public sealed class AccountStat
{
    [JsonPropertyName("acc")] public string Account { get; set; } = "";
    [JsonPropertyName("conns")] public int Conns { get; set; }
    [JsonPropertyName("leafnodes")] public int LeafNodes { get; set; }
    [JsonPropertyName("total_conns")] public int TotalConns { get; set; }
    [JsonPropertyName("sent")] public DataStats Sent { get; set; } = new();
    [JsonPropertyName("received")] public DataStats Received { get; set; } = new();
    [JsonPropertyName("slow_consumers")] public long SlowConsumers { get; set; }
}

public sealed class DataStats
{
    [JsonPropertyName("msgs")] public long Msgs { get; set; }
    [JsonPropertyName("bytes")] public long Bytes { get; set; }
}

/// <summary>One read-only stream store in /jsz (our addition): its stream and why it stopped accepting writes.</summary>
public sealed class JszStoreFailure
{
    [JsonPropertyName("stream")] public string Stream { get; set; } = "";
    [JsonPropertyName("error")] public string Error { get; set; } = "";
}

public sealed class Jsz
{
    // nats-server 2.14.5 JSInfo: the embedded JetStreamStats come first.
    [JsonPropertyName("memory")] public ulong Memory { get; set; }
    [JsonPropertyName("storage")] public ulong Storage { get; set; }
    [JsonPropertyName("reserved_memory")] public ulong ReservedMemory { get; set; }
    [JsonPropertyName("reserved_storage")] public ulong ReservedStorage { get; set; }
    [JsonPropertyName("accounts")] public int Accounts { get; set; }
    [JsonPropertyName("ha_assets")] public int HaAssets { get; set; }
    [JsonPropertyName("api")] public JetStreamApiStats Api { get; set; } = new();
    [JsonPropertyName("server_id")] public string ServerId { get; set; } = "";
    [JsonPropertyName("now")] public DateTime Now { get; set; }
    [JsonPropertyName("disabled"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingDefault)] public bool Disabled { get; set; }
    [JsonPropertyName("config")] public JetStreamConfigInfo Config { get; set; } = new();
    [JsonPropertyName("limits"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] public JetStreamLimitsVarz? Limits { get; set; }
    [JsonPropertyName("streams")] public int Streams { get; set; }
    [JsonPropertyName("consumers")] public int Consumers { get; set; }
    [JsonPropertyName("messages")] public ulong Messages { get; set; }
    [JsonPropertyName("bytes")] public ulong Bytes { get; set; }
    /// <summary>2.10+: the number of accounts the account_details page is taken from.</summary>
    [JsonPropertyName("total")] public int Total { get; set; }
    /// <summary>Our addition: streams whose store went read-only after a write or fsync error; omitted when none.</summary>
    [JsonPropertyName("store_failures"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] public List<JszStoreFailure>? StoreFailures { get; set; }
}

public sealed class HealthStatus
{
    [JsonPropertyName("status")] public string Status { get; set; } = "ok";
    [JsonPropertyName("error"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] public string? Error { get; set; }
}

/// <summary>Writes DateTime as Go's encoding/json writes time.Time (RFC 3339, UTC, trimmed fraction).</summary>
public sealed class GoTimeConverter : JsonConverter<DateTime>
{
    public override DateTime Read(ref Utf8JsonReader reader, Type typeToConvert, JsonSerializerOptions options) =>
        DateTime.Parse(reader.GetString()!, System.Globalization.CultureInfo.InvariantCulture,
            System.Globalization.DateTimeStyles.AdjustToUniversal | System.Globalization.DateTimeStyles.AssumeUniversal);

    public override void Write(Utf8JsonWriter writer, DateTime value, JsonSerializerOptions options) =>
        writer.WriteStringValue(GoFormat.Time(value));
}

[JsonSourceGenerationOptions(WriteIndented = true, Converters = [typeof(GoTimeConverter)])]
[JsonSerializable(typeof(Varz))]
[JsonSerializable(typeof(Connz))]
[JsonSerializable(typeof(Subsz))]
[JsonSerializable(typeof(Subscriptions.SubListStats))]
[JsonSerializable(typeof(Routez))]
[JsonSerializable(typeof(Gatewayz))]
[JsonSerializable(typeof(Leafz))]
[JsonSerializable(typeof(Accountz))]
[JsonSerializable(typeof(AccountStatz))]
[JsonSerializable(typeof(Jsz))]
[JsonSerializable(typeof(HealthStatus))]
[JsonSerializable(typeof(Dictionary<string, EmptyObject>))]
public sealed partial class MonitorJsonContext : JsonSerializerContext
{
    /// <summary>Indented like Go's MarshalIndent("", "  "); "µs" and other non-ASCII text are written as-is, as Go does.</summary>
    public static MonitorJsonContext Indented { get; } = new(new JsonSerializerOptions
    {
        WriteIndented = true,
        Encoder = JavaScriptEncoder.UnsafeRelaxedJsonEscaping,
        Converters = { new GoTimeConverter() },
    });

    /// <summary>Compact, as /healthz is written (json.Marshal).</summary>
    public static MonitorJsonContext Compact { get; } = new(new JsonSerializerOptions
    {
        WriteIndented = false,
        Encoder = JavaScriptEncoder.UnsafeRelaxedJsonEscaping,
        Converters = { new GoTimeConverter() },
    });
}
