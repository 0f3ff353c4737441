namespace NatsBroker.Configuration;

/// <summary>
/// The <c>cluster {}</c> block and the cluster flags (server/opts.go parseCluster, ClusterOpts; flags -cluster,
/// -cluster_name, -routes, -cluster_advertise, -no_advertise, -connect_retries). Present on
/// <see cref="ServerOptions.Cluster"/> only when a cluster listener is configured (a port or <c>listen</c>).
/// Stage 1 of routes (docs/design/routes.md) behaves as a nats-server 2.9 node: one connection per peer, no
/// pooling, no compression; the keys of later stages are refused by the mapper until they are built
/// (OptionMapper.Cluster.cs), except <c>pool_size</c>, which is kept and warned about.
/// </summary>
public sealed class ClusterOptions
{
    /// <summary>Cluster name; null when none was set (then one is generated at start and is "dynamic").</summary>
    public string? Name { get; set; }
    /// <summary>Route listener host (default 0.0.0.0, opts.go setBaselineOptions).</summary>
    public string Host { get; set; } = "0.0.0.0";
    /// <summary>Route listener port; -1 = random (RANDOM_PORT).</summary>
    public int Port { get; set; }
    /// <summary><c>advertise</c> / <c>cluster_advertise</c>: host[:port] put in our route INFO; null = none.</summary>
    public string? Advertise { get; set; }
    /// <summary><c>no_advertise</c>: our client URLs stay out of route INFO and peers' stay out of our client INFO.</summary>
    public bool NoAdvertise { get; set; }
    /// <summary>
    /// Routes to solicit, as configured (<c>nats-route://[user:pass@]host:port</c>); each names a host and a port
    /// (the mapper refuses one that does not). <see cref="Uri.UserInfo"/> keeps the URL's percent escapes: read the
    /// credentials with <see cref="GoUrl.Credentials"/>, which decodes them as nats-server does.
    /// </summary>
    public List<Uri> Routes { get; set; } = [];
    /// <summary>Retries for implicit routes (explicit ones retry forever); 0 = one attempt.</summary>
    public int ConnectRetries { get; set; }
    /// <summary><c>authorization { user }</c>: what a soliciting peer must send; null = no route auth.</summary>
    public string? User { get; set; }
    /// <summary><c>authorization { password }</c> (plain or bcrypt, as nats-server accepts it).</summary>
    public string? Password { get; set; }
    /// <summary><c>authorization { timeout }</c>: how long an accepted route may take to send CONNECT (default 2 s).</summary>
    public TimeSpan AuthTimeout { get; set; } = TimeSpan.FromSeconds(2);

    /// <summary>
    /// <c>pool_size</c> (2.10+): pooled connections per peer; default 3 (const.go DEFAULT_ROUTE_POOL_SIZE), -1 = none.
    /// Kept as configured, but stage 1 has no pools: the node behaves as <c>pool_size: -1</c> whatever this says.
    /// </summary>
    public int PoolSize { get; set; } = DefaultPoolSize;
    /// <summary>const.go DEFAULT_ROUTE_POOL_SIZE.</summary>
    public const int DefaultPoolSize = 3;
    /// <summary>
    /// <c>compression</c> normalized as server.go validateAndNormalizeCompressionOption does: "accept" (the default,
    /// opts.go setBaselineOptions), "off" or "not supported"; the S2 modes are refused until an S2 codec exists.
    /// </summary>
    public string Compression { get; set; } = "accept";
    /// <summary><c>connect_backoff</c> (2.10+): double the 1 s delay between connect attempts, up to 30 s (route.go connectToRoute).</summary>
    public bool ConnectBackoff { get; set; }
    /// <summary>
    /// <c>ping_interval</c> for routes; null = the server's <see cref="ServerOptions.PingInterval"/>. Kept as configured:
    /// a route never pings less often than <see cref="MaxRoutePingInterval"/> (route.go routeMaxPingInterval).
    /// </summary>
    public TimeSpan? PingInterval { get; set; }
    /// <summary>route.go routeMaxPingInterval: a longer cluster <c>ping_interval</c> is warned about and capped to this.</summary>
    public static readonly TimeSpan MaxRoutePingInterval = TimeSpan.FromSeconds(30);
    /// <summary><c>ping_max</c> for routes; null = the server's <see cref="ServerOptions.MaxPingsOut"/>.</summary>
    public int? MaxPingsOut { get; set; }
    /// <summary><c>write_deadline</c> for routes; null = the server's <see cref="ServerOptions.WriteDeadline"/>.</summary>
    public TimeSpan? WriteDeadline { get; set; }
    /// <summary><c>write_timeout</c> (2.12+): "default", "close" or "retry" (opts.go parseWriteDeadlinePolicy); null = not set.</summary>
    public string? WriteTimeout { get; set; }
    /// <summary>
    /// <c>tls {}</c>: route TLS, both directions (route.go createRoute: the handshake comes before any INFO). Verification
    /// is always on for routes (opts.go parseCluster sets it): a peer must present a certificate signed by
    /// <c>ca_file</c>, and the one we dial must too, for its host name. Null = plaintext routes.
    /// </summary>
    public NatsBroker.Tls.TlsOptions? Tls { get; set; }
    /// <summary><c>tls { insecure: true }</c>: the dialling side skips verifying the peer's certificate (nats-server's
    /// InsecureSkipVerify, for tests); the accepting side still verifies.</summary>
    public bool TlsInsecure { get; set; }
    /// <summary><c>permissions { import, export }</c>: import maps to publish (what we take messages for, so what
    /// interest we send), export to subscribe (what interest of the peer we accept), route.go setRoutePermissions.</summary>
    public Permissions? Permissions { get; set; }
}
