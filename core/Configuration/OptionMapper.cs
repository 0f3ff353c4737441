namespace NatsBroker.Configuration;

/// <summary>
/// Maps a parsed <see cref="ConfigTree"/> onto <see cref="ServerOptions"/>, following server/opts.go
/// (processConfigFileLine and the parse* helpers). Keys are case-insensitive. Every problem is collected;
/// field errors point at the key, as nats-server's pedantic parser does.
/// <para>
/// This file holds the entry point and the top-level keys; each block has its own file (OptionMapper.Authorization.cs,
/// .Permissions.cs, .Accounts.cs, .JetStream.cs, .JetStreamLimits.cs, .Operator.cs, .AuthCallout.cs, .Mappings.cs,
/// .Gateways.cs, .Cluster.cs), and the typed value readers they share are in OptionMapper.Values.cs.
/// </para>
/// </summary>
internal sealed partial class OptionMapper(ServerOptions o)
{
    /// <summary>
    /// Keys nats-server knows that this broker does not implement yet. They are rejected with a clear message
    /// instead of being ignored (a config relying on them would silently behave differently).
    /// </summary>
    internal static readonly HashSet<string> UnsupportedTopLevel = new(StringComparer.Ordinal)
    {
        "gateway", "leaf", "leafnodes",
        "ocsp", "roots", "root", "root_operators", "root_operator",
        "resolver_tls", "resolver_pinned_accounts", "trusted", "trusted_keys", "default_js_domain", "https", "https_port", "http_base_path", "prof_port",
        "remote_syslog", "connect_error_reports", "reconnect_error_reports",
    };

    public List<ConfigError> Errors { get; } = [];
    public List<ConfigError> Warnings { get; } = [];

    public void Apply(ConfigTree tree)
    {
        foreach (var e in tree.Root)
            ApplyTop(e);
        ValidateAccounts();
        ValidateOperatorMode();
        ValidateWebSocketAuth();
        ValidateAuthCallout();
        SettleCluster(o);
    }

    private void Error(SourcePosition p, string message) => Errors.Add(new ConfigError(p, message));

    private void Unknown(ConfigEntry e)
    {
        // opts.go: a key that only defines a variable used elsewhere is not an unknown field.
        if (!e.Value.UsedAsVariable)
            Error(e.KeyPosition, $"unknown field \"{e.Key}\"");
    }

    private void Unsupported(ConfigEntry e, string? where = null) =>
        Error(e.KeyPosition, where is null
            ? $"\"{e.Key}\" is not supported by this server yet"
            : $"\"{e.Key}\" in {where} is not supported by this server yet");

    private void ApplyTop(ConfigEntry e)
    {
        string key = e.Key.ToLowerInvariant();
        if (UnsupportedTopLevel.Contains(key))
        {
            Unsupported(e);
            return;
        }
        long n;
        string s;
        bool b;
        if (OperatorKey(e, key)) return;
        switch (key)
        {
            case "listen":
                if (Listen(e, out var lh, out var lp))
                {
                    if (lh.Length > 0)
                        o.Host = lh;
                    o.Port = lp;
                }
                break;
            case "host" or "net":
                if (String(e, out s)) o.Host = s;
                break;
            case "port":
                if (Port(e, out int port)) o.Port = port;
                break;
            case "server_name":
                if (String(e, out s))
                {
                    if (s.Any(char.IsWhiteSpace))
                        Error(e.KeyPosition, "server name cannot contain spaces");
                    else
                        o.ServerName = s;
                }
                break;
            case "client_advertise":
                if (String(e, out s)) o.ClientAdvertise = s;
                break;
            case "unix_socket":
                // Our extension: path of a Unix domain socket listener for clients.
                if (String(e, out s)) o.UnixSocketPath = s.Length == 0 ? null : s;
                break;
            case "http":
                if (Listen(e, out var hh, out var hp))
                {
                    if (hh.Length > 0)
                        o.HttpHost = hh;
                    o.HttpPort = hp;
                }
                break;
            case "http_port" or "monitor_port":
                if (Port(e, out int mport)) o.HttpPort = mport;
                break;

            case "debug":
                if (Bool(e, out b)) o.Debug = b;
                break;
            case "trace":
                if (Bool(e, out b)) o.Trace = b;
                break;
            case "trace_verbose":
                if (Bool(e, out b)) o.TraceVerbose = o.Trace = b;
                break;
            case "logtime":
                if (Bool(e, out b)) o.Logtime = b;
                break;
            case "logtime_utc":
                // nats-server 2.10 key (2.9.10 reports it unknown); accepted since ServerOptions carries it.
                if (Bool(e, out b)) o.LogtimeUtc = b;
                break;
            case "syslog":
                if (Bool(e, out b)) o.Syslog = b;
                break;
            case "logfile" or "log_file":
                if (String(e, out s)) o.LogFile = s;
                break;
            case "logfile_size_limit" or "log_size_limit":
                if (Integer(e, out n, 0)) o.LogSizeLimit = n;
                break;
            case "max_traced_msg_len":
                if (Integer(e, out n, 0, int.MaxValue)) o.MaxTracedMsgLen = (int)n;
                break;
            case "pidfile" or "pid_file":
                if (String(e, out s)) o.PidFile = s;
                break;
            case "ports_file_dir":
                if (String(e, out s)) o.PortsFileDir = s;
                break;

            // Limits. As in nats-server (setBaselineOptions), 0 means "use the default".
            case "max_control_line":
                if (Integer(e, out n, 0, int.MaxValue)) o.MaxControlLine = n == 0 ? ServerOptions.DefaultMaxControlLine : (int)n;
                break;
            case "max_payload":
                if (Integer(e, out n, 0, int.MaxValue)) o.MaxPayload = n == 0 ? ServerOptions.DefaultMaxPayload : (int)n;
                break;
            case "max_pending":
                if (Integer(e, out n, 0)) o.MaxPending = n == 0 ? ServerOptions.DefaultMaxPending : n;
                break;
            case "max_connections" or "max_conn":
                // Negative means unlimited in nats-server (it only enforces MaxConn > 0).
                if (Integer(e, out n, int.MinValue, int.MaxValue)) o.MaxConnections = n == 0 ? ServerOptions.DefaultMaxConnections : (int)n;
                break;
            case "max_subscriptions" or "max_subs":
                if (Integer(e, out n, int.MinValue, int.MaxValue)) o.MaxSubscriptions = (int)n;
                break;
            case "max_sub_tokens" or "max_subscription_tokens":
                if (Expect(e, ConfigValueKind.Integer, "an integer"))
                {
                    n = e.Value.AsInteger();
                    if (n > byte.MaxValue)
                        Error(e.KeyPosition, $"{e.Key} value is too big");
                    else if (n <= 0)
                        Error(e.KeyPosition, $"{e.Key} value can not be negative");
                    else
                        o.MaxSubTokens = (int)n;
                }
                break;
            case "ping_interval":
                if (Duration(e, allowSeconds: true, out var pi)) o.PingInterval = pi == TimeSpan.Zero ? TimeSpan.FromMinutes(2) : pi;
                break;
            case "ping_max":
                if (Integer(e, out n, int.MinValue, int.MaxValue)) o.MaxPingsOut = n == 0 ? 2 : (int)n;
                break;
            case "write_deadline":
                if (Duration(e, allowSeconds: true, out var wd)) o.WriteDeadline = wd == TimeSpan.Zero ? TimeSpan.FromSeconds(10) : wd;
                break;
            case "lame_duck_duration":
                if (Duration(e, allowSeconds: false, out var ldd))
                {
                    if (ldd < TimeSpan.FromSeconds(30))
                        Error(e.KeyPosition, $"invalid lame_duck_duration of {GoDuration.Format(ldd)}, minimum is 30 seconds");
                    else
                        o.LameDuckDuration = ldd;
                }
                break;
            case "lame_duck_grace_period":
                if (Duration(e, allowSeconds: false, out var ldg))
                {
                    if (ldg < TimeSpan.Zero)
                        Error(e.KeyPosition, "invalid lame_duck_grace_period, needs to be positive");
                    else
                        o.LameDuckGracePeriod = ldg == TimeSpan.Zero ? TimeSpan.FromSeconds(10) : ldg;
                }
                break;
            case "disable_sublist_cache" or "no_sublist_cache":
                if (Bool(e, out b)) o.DisableSublistCache = b;
                break;
            case "no_header_support":
                if (Bool(e, out b)) o.NoHeaderSupport = b;
                break;
            case "server_tags":
                ServerTags(e);
                break;

            case "authorization":
                Authorization(e);
                break;
            case "accounts":
                Accounts(e);
                break;
            case "no_auth_user":
                if (String(e, out s)) o.NoAuthUser = s;
                break;

            case "store_dir" or "storedir":
                if (o.StoreDir is not null)
                    Error(e.KeyPosition, "Duplicate 'store_dir' configuration");
                else if (String(e, out s))
                    o.StoreDir = s;
                break;
            case "jetstream":
                JetStream(e);
                break;
            case "cluster":
                Cluster(e);
                break;
            case "tls" or "proxies" or "protocol_gateways" or "gateways" or "websocket" or "ws" or "mqtt":
                GatewayBlock(key, e);
                break;
            case "allow_non_tls":
                // Served by the TLS terminator, which reads the same file (TerminatorConfig); checked here for its type.
                Bool(e, out _);
                break;

            default:
                Unknown(e);
                break;
        }
    }

    private void ServerTags(ConfigEntry e)
    {
        var tags = new List<string>();
        var v = e.Value;
        if (v.Kind == ConfigValueKind.String)
            tags.Add(v.AsString());
        else if (v.Kind == ConfigValueKind.Array)
        {
            foreach (var t in v.AsArray())
            {
                if (t.Kind != ConfigValueKind.String)
                {
                    Error(t.Position, $"error parsing tags: expected a string, got {t.Describe()}");
                    return;
                }
                tags.Add(t.AsString());
            }
        }
        else
        {
            Error(e.KeyPosition, $"error parsing tags: unsupported type {v.Describe()}");
            return;
        }
        foreach (var t in tags)
        {
            o.ServerTags.Add(t);
            int c = t.IndexOf(':', StringComparison.Ordinal);
            if (c < 0)
                o.Tags[t] = "";
            else
                o.Tags[t[..c]] = t[(c + 1)..];
        }
    }
}
