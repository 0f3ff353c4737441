namespace NatsBroker.Configuration;

/// <summary>
/// The <c>cluster {}</c> block and the cluster flags (server/opts.go parseCluster, ClusterOpts; flags -cluster,
/// -cluster_name, -routes, -cluster_advertise, -no_advertise, -connect_retries). Present on
/// <see cref="ServerOptions.Cluster"/> only when a cluster listener is configured (a port or <c>listen</c>).
/// Stage 1 of routes (docs/design/routes.md) behaves as a nats-server 2.9 node: one connection per peer, no
/// pooling, no compression; the keys of later stages are refused by the mapper until they are built.
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
    /// <summary>Routes to solicit, as configured (<c>nats-route://[user:pass@]host:port</c>).</summary>
    public List<Uri> Routes { get; set; } = [];
    /// <summary>Retries for implicit routes (explicit ones retry forever); 0 = one attempt.</summary>
    public int ConnectRetries { get; set; }
    /// <summary><c>authorization { user }</c>: what a soliciting peer must send; null = no route auth.</summary>
    public string? User { get; set; }
    /// <summary><c>authorization { password }</c> (plain or bcrypt, as nats-server accepts it).</summary>
    public string? Password { get; set; }
    /// <summary><c>authorization { timeout }</c>: how long an accepted route may take to send CONNECT (default 2 s).</summary>
    public TimeSpan AuthTimeout { get; set; } = TimeSpan.FromSeconds(2);
    /// <summary><c>ping_interval</c> for routes (2.10+); null = the server's. Capped at 30 s for routes.</summary>
    public TimeSpan? PingInterval { get; set; }
    /// <summary><c>ping_max</c> for routes (2.10+); null = the server's.</summary>
    public int? MaxPingsOut { get; set; }
}
