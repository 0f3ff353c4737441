namespace NatsBroker.Configuration;

/// <summary>
/// The cluster flags (opts.go ConfigureOptions): <c>-cluster_name</c>, <c>-cluster_advertise</c>, <c>-no_advertise</c>
/// and <c>-connect_retries</c> overwrite the file's values as they are applied; <c>-cluster</c>/<c>-cluster_listen</c>
/// and <c>-routes</c> are acted on once every flag is in, as nats-server's second <c>fs.Visit</c> does
/// (overrideCluster, RoutesFromStr), then the checks NewServer makes (validateCluster, route.go
/// setRouteInfoHostPortAndIP). Errors exit 1 with nats-server's text.
/// </summary>
public static partial class CommandLine
{
    /// <summary>The cluster block the flags write into: the file's (listener or not), else a new one.</summary>
    private static ClusterOptions ClusterBlock(ServerOptions o) => o.ClusterBlock ??= new ClusterOptions();

    private static CommandLineException ClusterFlagError(string message) => new(message, showUsage: false, exitCode: 1);

    /// <summary>After the flags are applied (BuildOptions): -cluster, -routes, then which cluster this server is in.</summary>
    private static void SettleClusterFlags(ServerOptions opts, IReadOnlyList<(Flag Flag, string Value)> overrides)
    {
        string? listen = null, routes = null;
        foreach (var (flag, value) in overrides)
        {
            if (flag == ClusterListenFlag) listen = value;
            else if (flag == RoutesFlag) routes = value;
        }
        if (listen is not null)
            OverrideCluster(ClusterBlock(opts), listen);
        if (routes is not null)
        {
            var c = ClusterBlock(opts);
            // ConfigureOptions: an empty -routes clears the file's routes; routes need a listener, which only
            // -cluster or the file can give. (nats-server also lets a file's bare cluster host pass here, then
            // never solicits the routes; we refuse that case too.)
            if (routes.Length > 0 && string.IsNullOrEmpty(listen) && c.Port == 0)
                throw ClusterFlagError("solicited routes require cluster capabilities, e.g. --cluster");
            c.Routes = routes.Length == 0 ? [] : RoutesFromString(routes);
        }
        OptionMapper.SettleCluster(opts);
        if (opts.ClusterBlock?.Name is { } name && name.Contains(' ', StringComparison.Ordinal))
            throw ClusterFlagError("cluster name cannot contain spaces");
        if (opts.Cluster?.Advertise is { } adv && GoUrl.ParseHostPort(adv, opts.Cluster.Port, out _, out _) is { } advErr)
            throw ClusterFlagError(OptionMapper.AdvertiseError(adv, advErr));
    }

    /// <summary>
    /// opts.go RoutesFromStr: comma-separated, each trimmed. nats-server ignores a URL that does not parse and then
    /// crashes on it when soliciting; we refuse it as the config file's <c>routes</c> does.
    /// </summary>
    private static List<Uri> RoutesFromString(string routes)
    {
        var list = new List<Uri>();
        foreach (var r in routes.Split(','))
            list.Add(OptionMapper.RouteUri(r, out string? error) ?? throw ClusterFlagError(error!));
        return list;
    }

    /// <summary>
    /// opts.go overrideCluster: <c>nats://[user:pass@]host:port</c>, where <c>:-1</c> asks for a random port, an empty
    /// value turns clustering off, a user without a password is refused, and no user clears the file's route auth.
    /// </summary>
    private static void OverrideCluster(ClusterOptions c, string listen)
    {
        if (listen.Length == 0)
        {
            c.Port = 0;
            return;
        }
        bool random = listen.EndsWith(":-1", StringComparison.Ordinal);
        string s = random ? listen[..^3] + ":0" : listen;
        var url = GoUrl.Parse(s, out string? parseError) ?? throw ClusterFlagError(parseError!);
        if (GoUrl.SplitHostPort(url.Host, out string host, out string port) is { } splitError)
            throw ClusterFlagError(splitError);
        if (random) port = "-1";
        // fmt.Sscan of the port: nothing left is io.EOF; url.Parse has already refused anything but digits.
        if (port.Length == 0)
            throw ClusterFlagError("EOF");
        if (TryGoInt(port, out long n) is not null || n < -1 || n > 65535)
            throw ClusterFlagError($"Error listening on router port: {port} - listen tcp: address {port}: invalid port");
        c.Host = host.Length == 0 ? "0.0.0.0" : host;
        c.Port = (int)n;
        if (url.User is not null)
        {
            if (!url.HasPassword)
                throw ClusterFlagError("expected cluster password to be set");
            c.User = url.User;
            c.Password = url.Password;
        }
        else
        {
            c.User = null;
            c.Password = null;
        }
    }
}
