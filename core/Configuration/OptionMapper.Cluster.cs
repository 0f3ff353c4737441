using System.Globalization;

namespace NatsBroker.Configuration;

/// <summary>
/// The <c>cluster {}</c> block (opts.go parseCluster, 2.14.5; 2.9 has the same loop without the 2.10+ keys), onto
/// <see cref="ServerOptions.ClusterBlock"/>; <see cref="SettleCluster"/> then presents it as
/// <see cref="ServerOptions.Cluster"/> only when it has a listener. Where nats-server refuses a value the text is
/// its own. Stage 1 of routes (docs/design/routes.md section 1) refuses what it does not build: <c>tls</c>,
/// <c>permissions</c>, pinned <c>accounts</c> and the compression modes that need S2; <c>pool_size</c> is kept
/// with a warning, since the node behaves as <c>pool_size: -1</c>.
/// </summary>
internal sealed partial class OptionMapper
{
    private void Cluster(ConfigEntry e)
    {
        if (!Expect(e, ConfigValueKind.Map, "a map")) return;
        var c = new ClusterOptions();
        o.ClusterBlock = c;
        foreach (var f in e.Value.AsMap())
        {
            string s;
            long n;
            bool b;
            switch (f.Key.ToLowerInvariant())
            {
                case "name":
                    if (!String(f, out s)) break;
                    // opts.go parseCluster checks for a space only (ErrClusterNameHasSpaces), not other blanks.
                    if (s.Contains(' ', StringComparison.Ordinal)) Error(f.KeyPosition, "cluster name cannot contain spaces");
                    else c.Name = s.Length == 0 ? null : s;
                    break;
                case "listen":
                    if (Listen(f, out var lh, out var lp))
                    {
                        if (lh.Length > 0) c.Host = lh;
                        c.Port = lp;
                    }
                    break;
                case "port":
                    if (Port(f, out int port)) c.Port = port;
                    break;
                case "host" or "net":
                    // setBaselineOptions: an empty host is the default one.
                    if (String(f, out s)) c.Host = s.Length == 0 ? "0.0.0.0" : s;
                    break;
                case "authorization":
                    ClusterAuthorization(f, c);
                    break;
                case "routes":
                    ClusterRoutes(f, c);
                    break;
                case "cluster_advertise" or "advertise":
                    if (!String(f, out s)) break;
                    // nats-server finds a bad value only when the route listener starts (route.go
                    // setRouteInfoHostPortAndIP, fatal); the file is the better place to say so, in its words.
                    if (s.Length > 0 && GoUrl.ParseHostPort(s, 0, out _, out _) is { } advErr)
                        Error(f.KeyPosition, AdvertiseError(s, advErr));
                    else
                        c.Advertise = s.Length == 0 ? null : s;
                    break;
                case "no_advertise":
                    if (Bool(f, out b)) c.NoAdvertise = b;
                    break;
                case "connect_retries":
                    if (Integer(f, out n, int.MinValue, int.MaxValue)) c.ConnectRetries = (int)n;
                    break;
                case "connect_backoff":
                    if (Bool(f, out b)) c.ConnectBackoff = b;
                    break;
                case "permissions":
                    ClusterPermissions(f, c, inAuthorization: false);
                    break;
                case "pool_size":
                    if (!Integer(f, out n, int.MinValue, int.MaxValue)) break;
                    c.PoolSize = (int)n;
                    if (n != -1)
                        Warnings.Add(new ConfigError(f.KeyPosition,
                            "\"pool_size\" is kept but route pools are not built yet: this server makes one connection per peer, as with pool_size: -1"));
                    break;
                case "accounts":
                    // Pinned accounts (2.10+) each need a dedicated connection: a later stage.
                    Error(f.KeyPosition, "\"accounts\" in cluster (pinned accounts) is not supported by this server yet");
                    break;
                case "compression":
                    ClusterCompression(f, c);
                    break;
                case "tls":
                    ClusterTls(f, c);
                    break;
                case "ping_interval":
                    if (!Duration(f, allowSeconds: true, out var pi)) break;
                    c.PingInterval = pi == TimeSpan.Zero ? null : pi;
                    if (pi > ClusterOptions.MaxRoutePingInterval)
                        Warnings.Add(new ConfigError(f.KeyPosition,
                            $"Cluster 'ping_interval' will reset to {GoDuration.Format(ClusterOptions.MaxRoutePingInterval)} which is the max for routes"));
                    break;
                case "ping_max":
                    if (Integer(f, out n, int.MinValue, int.MaxValue)) c.MaxPingsOut = n == 0 ? null : (int)n;
                    break;
                case "write_deadline":
                    if (Duration(f, allowSeconds: true, out var wd)) c.WriteDeadline = wd == TimeSpan.Zero ? null : wd;
                    break;
                case "write_timeout":
                    if (!String(f, out s)) break;
                    if (s is "default" or "close" or "retry") c.WriteTimeout = s;
                    else Error(f.KeyPosition, "write_timeout must be 'default', 'close' or 'retry'");
                    break;
                default:
                    Unknown(f);
                    break;
            }
        }
    }

    /// <summary>The fatal text of route.go setRouteInfoHostPortAndIP for a bad <c>advertise</c>.</summary>
    internal static string AdvertiseError(string advertise, string reason) =>
        $"Error setting route INFO with Cluster.Advertise value of {advertise}, err={reason}";

    /// <summary>
    /// <c>authorization { user, password, timeout }</c> through parseAuthorization, then what parseCluster refuses:
    /// a users list, a token, a callout. <c>permissions</c> inside it (deprecated there) is refused as the block's own.
    /// </summary>
    private void ClusterAuthorization(ConfigEntry auth, ClusterOptions c)
    {
        if (!Expect(auth, ConfigValueKind.Map, "a map")) return;
        string? user = null, pass = null;
        bool users = false, token = false, callout = false;
        TimeSpan? timeout = null;
        ConfigEntry? permissions = null;
        foreach (var a in auth.Value.AsMap())
        {
            string s;
            switch (a.Key.ToLowerInvariant())
            {
                case "user" or "username":
                    if (String(a, out s)) user = s;
                    break;
                case "pass" or "password":
                    if (String(a, out s)) pass = s;
                    break;
                case "token":
                    token = String(a, out _);
                    break;
                case "timeout":
                    timeout = AuthTimeout(a);
                    break;
                case "users":
                    users = true;
                    break;
                case "default_permission" or "default_permissions" or "permissions":
                    permissions = a;
                    break;
                case "auth_callout" or "auth_hook":
                    callout = true;
                    break;
                case "proxy_required":
                    // Read by parseAuthorization, unused for routes.
                    Bool(a, out _);
                    break;
                default:
                    Unknown(a);
                    break;
            }
        }
        if (users)
            Error(auth.KeyPosition, "Cluster authorization does not allow multiple users");
        else if (token)
            Error(auth.KeyPosition, "Cluster authorization does not support tokens");
        else if (callout)
            Error(auth.KeyPosition, "Cluster authorization does not support callouts");
        else
        {
            c.User = user;
            c.Password = pass;
            // setBaselineOptions: 0 is the default (getDefaultAuthTimeout, 2 s without TLS).
            if (timeout is { } t) c.AuthTimeout = t == TimeSpan.Zero ? TimeSpan.FromSeconds(2) : t;
            if (permissions is not null) ClusterPermissions(permissions, c, inAuthorization: true);
        }
    }

    /// <summary>
    /// <c>permissions { import, export }</c> (opts.go parseCluster, setClusterPermissions): import is what we accept
    /// messages for (we send interest only for importable subjects), export what the peer may subscribe to (its
    /// interest in other subjects is ignored). <c>allow_responses</c> is refused with nats-server's text. Inside
    /// <c>authorization</c> (deprecated there) it counts only when the block has no <c>permissions</c> of its own.
    /// </summary>
    private void ClusterPermissions(ConfigEntry e, ClusterOptions c, bool inAuthorization)
    {
        int before = Errors.Count;
        var p = Permissions(e);
        if (Errors.Count > before || p is null) return;
        if (p.Response is not null)
        {
            Error(e.KeyPosition, "Cluster permissions do not support dynamic responses");
            return;
        }
        if (inAuthorization)
        {
            Warnings.Add(new ConfigError(e.KeyPosition, "setting \"permissions\" within cluster authorization block is deprecated"));
            if (c.Permissions is not null) return;
        }
        c.Permissions = p;
    }

    /// <summary>
    /// <c>routes: [url, ...]</c> (opts.go parseURLs): a repeated string is skipped with nats-server's warning, a URL
    /// url.Parse refuses is <c>error parsing route url ["..."]</c>. Stricter than nats-server: a URL naming no
    /// host:port (it would accept <c>localhost:6222</c> as scheme "localhost", then fail every dial) is refused.
    /// </summary>
    private void ClusterRoutes(ConfigEntry e, ClusterOptions c)
    {
        if (e.Value.Kind != ConfigValueKind.Array)
        {
            Error(e.KeyPosition, $"invalid value for \"{e.Key}\": expected an array of route URLs, got {e.Value.Describe()}");
            return;
        }
        var seen = new HashSet<string>(StringComparer.Ordinal);
        var routes = new List<Uri>();
        bool failed = false;
        foreach (var item in e.Value.AsArray())
        {
            if (item.Kind != ConfigValueKind.String)
            {
                Error(item.Position, $"error parsing route url: expected a string, got {item.Describe()}");
                failed = true;
                continue;
            }
            string s = item.AsString();
            if (!seen.Add(s))
            {
                Warnings.Add(new ConfigError(item.Position, $"invalid use of field {GoUrl.Quote(s)}: Duplicate route entry detected"));
                continue;
            }
            if (RouteUri(s, out string? error) is { } uri)
                routes.Add(uri);
            else
            {
                Error(item.Position, error!);
                failed = true;
            }
        }
        if (!failed) c.Routes = routes;
    }

    /// <summary>
    /// One route URL, trimmed and parsed as opts.go parseURL does; null with nats-server's error text, or ours when the
    /// URL parses but names no host:port. Shared by the <c>routes</c> key and the <c>-routes</c> flag.
    /// </summary>
    internal static Uri? RouteUri(string raw, out string? error)
    {
        string trimmed = raw.Trim();
        error = null;
        var url = GoUrl.Parse(trimmed, out _);
        if (url is null)
        {
            error = $"error parsing route url [{GoUrl.Quote(trimmed)}]";
            return null;
        }
        var uri = GoUrl.ToRouteUri(trimmed, url);
        if (uri is null) error = $"route url {GoUrl.Quote(trimmed)} has no host:port to connect to";
        return uri;
    }

    /// <summary>
    /// <c>compression</c>: a string, a bool (true = s2_fast, the route default for "on") or <c>{ mode, rtt_thresholds }</c>
    /// (opts.go parseCompression), normalized as server.go validateAndNormalizeCompressionOption (which nats-server
    /// runs at start, so its <c>-t</c> passes a bad mode). Only the modes without S2 frames are accepted: there is no
    /// S2 codec here, and advertising an S2 mode would make a peer switch to frames we cannot read.
    /// </summary>
    private void ClusterCompression(ConfigEntry e, ClusterOptions c)
    {
        string? mode = null;
        var v = e.Value;
        switch (v.Kind)
        {
            case ConfigValueKind.String:
                mode = v.AsString();
                break;
            case ConfigValueKind.Bool:
                mode = v.AsBool() ? "s2_fast" : "off";
                break;
            case ConfigValueKind.Map:
                foreach (var m in v.AsMap())
                {
                    switch (m.Key.ToLowerInvariant())
                    {
                        case "mode":
                            if (String(m, out var s)) mode = s;
                            break;
                        case "rtt_thresholds" or "thresholds" or "rtts" or "rtt":
                            // Only s2_auto reads them, and it is refused below; parsed as parseCompression does.
                            foreach (var rtt in StringList(m, "rtt_thresholds") ?? [])
                            {
                                if (!GoDuration.TryParse(rtt, out _, out string? rttError))
                                {
                                    Error(m.KeyPosition, rttError!);
                                    break;
                                }
                            }
                            break;
                        default:
                            Unknown(m);
                            break;
                    }
                }
                break;
            default:
                Error(e.KeyPosition, $"field \"{e.Key}\" should be a boolean or a structure, got {v.Describe()}");
                return;
        }
        // A map without a mode leaves it empty, which setBaselineOptions makes "accept".
        if (string.IsNullOrEmpty(mode))
        {
            c.Compression = "accept";
            return;
        }
        string lower = mode.ToLowerInvariant();
        if (lower is "on" or "enabled" or "true") lower = "s2_fast";
        switch (lower)
        {
            case "not supported" or "not_supported":
                c.Compression = "not supported";
                break;
            case "disabled" or "off" or "false":
                c.Compression = "off";
                break;
            case "accept":
                c.Compression = "accept";
                break;
            case "auto" or "s2_auto" or "fast" or "s2_fast" or "better" or "s2_better" or "best" or "s2_best":
                string normalized = lower.StartsWith("s2_", StringComparison.Ordinal) ? lower : "s2_" + lower;
                Error(e.KeyPosition, string.Create(CultureInfo.InvariantCulture,
                    $"compression mode \"{normalized}\" is not supported by this server yet (it needs S2, which is not built): use \"off\" or \"accept\""));
                break;
            default:
                Error(e.KeyPosition, $"unsupported compression mode {GoUrl.Quote(mode)}");
                break;
        }
    }

    /// <summary>
    /// opts.go setBaselineOptions / server.go Start: clustering is on only when the route listener has a port
    /// (-1 = random). Run after the file and again after the flags, which may add or remove the listener.
    /// </summary>
    internal static void SettleCluster(ServerOptions o) =>
        o.Cluster = o.ClusterBlock is { Port: not 0 } c ? c : null;

    /// <summary>
    /// <c>cluster { tls {} }</c> (opts.go parseCluster → parseTLS, GenTLSConfig): the keys of every tls block, a
    /// certificate and key required (a route both serves and dials with it), verification forced on.
    /// </summary>
    private void ClusterTls(ConfigEntry f, ClusterOptions c)
    {
        if (f.Value.Kind != ConfigValueKind.Map)
        {
            Error(f.KeyPosition, $"invalid value for \"tls\": expected a map, got {f.Value.Describe()}");
            return;
        }
        var tls = new NatsBroker.Tls.TlsOptions();
        NatsBroker.Tls.TlsConfig.ReadTls(f, tls, Errors);
        foreach (var e in f.Value.AsMap())
        {
            if (e.Key.Equals("insecure", StringComparison.OrdinalIgnoreCase) && e.Value.Kind == ConfigValueKind.Bool) c.TlsInsecure = e.Value.AsBool();
        }
        if (tls.CertFile.Length == 0 && tls.KeyFile.Length == 0)
        {
            Error(f.KeyPosition, "cluster tls requires 'cert_file' and 'key_file': a route serves and dials with the same certificate");
            return;
        }
        tls.Verify = true;
        c.Tls = tls;
    }
}
