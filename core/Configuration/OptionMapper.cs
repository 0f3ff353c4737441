using System.Globalization;
using NatsBroker.Subjects;

namespace NatsBroker.Configuration;

/// <summary>
/// Maps a parsed <see cref="ConfigTree"/> onto <see cref="ServerOptions"/>, following server/opts.go
/// (processConfigFileLine and the parse* helpers). Keys are case-insensitive. Every problem is collected;
/// field errors point at the key, as nats-server's pedantic parser does.
/// </summary>
internal sealed partial class OptionMapper(ServerOptions o)
{
    /// <summary>
    /// Keys nats-server knows that this broker does not implement yet. They are rejected with a clear message
    /// instead of being ignored (a config relying on them would silently behave differently).
    /// </summary>
    internal static readonly HashSet<string> UnsupportedTopLevel = new(StringComparer.Ordinal)
    {
        "cluster", "gateway", "leaf", "leafnodes",
        "ocsp", "roots", "root", "root_operators", "root_operator",
        "resolver_tls", "resolver_pinned_accounts", "trusted", "trusted_keys", "default_js_domain", "https", "https_port", "http_base_path", "prof_port",
        "remote_syslog", "connect_error_reports", "reconnect_error_reports",
    };

    private static readonly HashSet<string> UnsupportedJetStream = new(StringComparer.Ordinal)
    {
        "key", "ek", "encryption_key", "cipher", "extension_hint", "unique_tag",
        "max_outstanding_catchup",
    };

    private static readonly HashSet<string> ConnectionTypes = new(StringComparer.Ordinal)
    {
        "STANDARD", "WEBSOCKET", "LEAFNODE", "MQTT",
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

    private bool Expect(ConfigEntry e, ConfigValueKind kind, string what)
    {
        if (e.Value.Kind == kind)
            return true;
        Error(e.KeyPosition, $"invalid value for \"{e.Key}\": expected {what}, got {e.Value.Describe()}");
        return false;
    }

    private bool String(ConfigEntry e, out string s)
    {
        s = "";
        if (!Expect(e, ConfigValueKind.String, "a string"))
            return false;
        s = e.Value.AsString();
        return true;
    }

    private bool Bool(ConfigEntry e, out bool b)
    {
        b = false;
        if (!Expect(e, ConfigValueKind.Bool, "a boolean (true/false, yes/no, on/off)"))
            return false;
        b = e.Value.AsBool();
        return true;
    }

    private bool Integer(ConfigEntry e, out long n, long min = long.MinValue, long max = long.MaxValue)
    {
        n = 0;
        if (!Expect(e, ConfigValueKind.Integer, "an integer"))
            return false;
        n = e.Value.AsInteger();
        if (n > max)
        {
            Error(e.KeyPosition, $"{e.Key} value is too big");
            return false;
        }
        if (n < min)
        {
            Error(e.KeyPosition, min == 0 ? $"{e.Key} value can not be negative" : string.Create(CultureInfo.InvariantCulture, $"{e.Key} value can not be less than {min}"));
            return false;
        }
        return true;
    }

    private bool Port(ConfigEntry e, out int port)
    {
        port = 0;
        if (!Integer(e, out long n, -1, 65535))
            return false;
        port = (int)n;
        return true;
    }

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
            case "tls" or "proxies" or "gateways" or "websocket" or "ws" or "mqtt":
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

    /// <summary>opts.go parseListen: a port, or "host:port".</summary>
    private bool Listen(ConfigEntry e, out string host, out int port)
    {
        host = "";
        port = 0;
        var v = e.Value;
        if (v.Kind == ConfigValueKind.Integer)
            return Port(e, out port);
        if (v.Kind != ConfigValueKind.String)
        {
            Error(e.KeyPosition, $"expected port or host:port, got {v.Describe()}");
            return false;
        }
        string s = v.AsString();
        // Go net.SplitHostPort: "host:port" with exactly one ':', or "[v6]:port".
        int colon = s.LastIndexOf(':');
        bool bracketed = s.StartsWith('[');
        if (colon < 0 || (!bracketed && s.IndexOf(':', StringComparison.Ordinal) != colon)
            || (bracketed && (colon == 0 || s[colon - 1] != ']')))
        {
            Error(e.KeyPosition, $"could not parse address string \"{s}\"");
            return false;
        }
        host = bracketed ? s[1..(colon - 1)] : s[..colon];
        string p = s[(colon + 1)..];
        if (!int.TryParse(p, NumberStyles.AllowLeadingSign, CultureInfo.InvariantCulture, out port) || port < -1 || port > 65535)
        {
            Error(e.KeyPosition, $"could not parse port \"{p}\"");
            return false;
        }
        return true;
    }

    /// <summary>
    /// A Go duration string. Where nats-server still accepts an integer number of seconds
    /// (ping_interval, write_deadline) that is allowed with its warning.
    /// </summary>
    private bool Duration(ConfigEntry e, bool allowSeconds, out TimeSpan d)
    {
        d = default;
        var v = e.Value;
        if (v.Kind == ConfigValueKind.String)
        {
            if (GoDuration.TryParse(v.AsString(), out d, out string? err))
                return true;
            Error(e.KeyPosition, $"error parsing {e.Key}: {err}");
            return false;
        }
        if (allowSeconds && v.Kind == ConfigValueKind.Integer)
        {
            Warnings.Add(new ConfigError(e.KeyPosition,
                $"invalid use of field \"{e.Key}\": {e.Key} should be converted to a duration"));
            long secs = v.AsInteger();
            if (secs < 0 || secs > (long)TimeSpan.MaxValue.TotalSeconds)
            {
                Error(e.KeyPosition, $"{e.Key} value is out of range");
                return false;
            }
            d = TimeSpan.FromSeconds(secs);
            return true;
        }
        Error(e.KeyPosition, $"invalid value for \"{e.Key}\": expected a duration string such as \"10s\" or \"2m\", got {v.Describe()}");
        return false;
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

    // ---- authorization (opts.go parseAuthorization / parseUsers) ----

    private void Authorization(ConfigEntry auth)
    {
        if (!Expect(auth, ConfigValueKind.Map, "a map"))
            return;
        string? user = null, pass = null, token = null;
        TimeSpan? timeout = null;
        List<UserConfig>? users = null;
        Permissions? defaults = null;
        foreach (var e in auth.Value.AsMap())
        {
            string s;
            switch (e.Key.ToLowerInvariant())
            {
                case "user" or "username":
                    if (String(e, out s)) user = s;
                    break;
                case "pass" or "password":
                    if (String(e, out s)) pass = s;
                    break;
                case "token":
                    if (String(e, out s)) token = s;
                    break;
                case "timeout":
                    timeout = AuthTimeout(e);
                    break;
                case "proxy_required":
                    if (Bool(e, out var proxyRequired)) o.ProxyRequired = proxyRequired;
                    break;
                case "users":
                    users = Users(e);
                    break;
                case "default_permission" or "default_permissions" or "permissions":
                    defaults = Permissions(e);
                    break;
                case "auth_callout" or "auth_hook":
                    o.AuthCallout = AuthCallout(e);
                    break;
                default:
                    Unknown(e);
                    break;
            }
        }

        var at = auth.KeyPosition;
        if ((user is not null || pass is not null) && token is not null)
        {
            Error(at, "Cannot have a user/pass and token");
            return;
        }
        if (users is not null && user is not null)
        {
            Error(at, "Can not have a single user/pass and a users array");
            return;
        }
        if (users is not null && token is not null)
        {
            Error(at, "Can not have a token and a users array");
            return;
        }
        o.Username = user;
        o.Password = pass;
        o.Authorization = token;
        if (timeout is { } t)
            o.AuthTimeout = t == TimeSpan.Zero ? TimeSpan.FromSeconds(2) : t;
        if (users is null)
            return;
        var seen = new HashSet<string>(o.Users.Select(u => u.Nkey ?? u.User), StringComparer.Ordinal);
        foreach (var u in users)
        {
            if (!seen.Add(u.Nkey ?? u.User))
            {
                Error(at, $"Duplicate user \"{u.User}\" detected");
                return;
            }
            u.Permissions ??= defaults;
        }
        o.Users.AddRange(users);
    }

    /// <summary>Seconds as an integer or float, or (as nats-server 2.10 allows) a duration string.</summary>
    private TimeSpan? AuthTimeout(ConfigEntry e)
    {
        var v = e.Value;
        double secs;
        switch (v.Kind)
        {
            case ConfigValueKind.Integer:
                secs = v.AsInteger();
                break;
            case ConfigValueKind.Float:
                secs = v.AsFloat();
                break;
            case ConfigValueKind.String:
                if (!GoDuration.TryParse(v.AsString(), out var d, out string? err))
                {
                    Error(e.KeyPosition, $"error parsing authorization config, 'timeout' {err}");
                    return null;
                }
                secs = d.TotalSeconds;
                break;
            default:
                Error(e.KeyPosition, $"error parsing authorization config, 'timeout' wrong type: {v.Describe()}");
                return null;
        }
        if (secs < 0 || double.IsNaN(secs) || secs > 365 * 24 * 3600)
        {
            Error(e.KeyPosition, "error parsing authorization config, 'timeout' must be between 0 and one year of seconds");
            return null;
        }
        if (secs > 60)
            Warnings.Add(new ConfigError(e.KeyPosition, string.Create(CultureInfo.InvariantCulture,
                $"invalid use of field \"{e.Key}\": timeout of {secs} seconds is high, consider keeping it under 60 seconds")));
        return TimeSpan.FromSeconds(secs);
    }

    private List<UserConfig>? Users(ConfigEntry e)
    {
        if (e.Value.Kind != ConfigValueKind.Array)
        {
            Error(e.KeyPosition, $"Expected users field to be an array, got {e.Value.Describe()}");
            return null;
        }
        var users = new List<UserConfig>();
        foreach (var item in e.Value.AsArray())
        {
            if (item.Kind != ConfigValueKind.Map)
            {
                Error(item.Position, $"Expected user entry to be a map/struct, got {item.Describe()}");
                continue;
            }
            var u = new UserConfig();
            bool hasUser = false;
            foreach (var f in item.AsMap())
            {
                string s;
                switch (f.Key.ToLowerInvariant())
                {
                    case "user" or "username":
                        if (String(f, out s))
                        {
                            u.User = s;
                            hasUser = true;
                        }
                        break;
                    case "pass" or "password":
                        if (String(f, out s)) u.Password = s;
                        break;
                    case "permission" or "permissions" or "authorization":
                        u.Permissions = Permissions(f);
                        break;
                    case "allowed_connection_types" or "connection_types" or "clients":
                        u.AllowedConnectionTypes = ConnectionTypeList(f);
                        break;
                    case "proxy_required":
                        if (Bool(f, out var proxyRequired)) u.ProxyRequired = proxyRequired;
                        break;
                    case "nkey":
                        if (String(f, out s))
                        {
                            if (!IsUserNkey(s))
                                Error(f.KeyPosition, "Not a valid public nkey for a user");
                            u.Nkey = s;
                            hasUser = true;
                        }
                        break;
                    default:
                        Unknown(f);
                        break;
                }
            }
            if (!hasUser)
            {
                Error(item.Position, "User entry requires a user");
                continue;
            }
            users.Add(u);
        }
        return users;
    }

    private static bool IsUserNkey(string key)
    {
        try
        {
            return NATS.NKeys.KeyPair.IsValidPublicKey(NATS.NKeys.PrefixByte.User, key);
        }
        catch (NATS.NKeys.NKeysException)
        {
            return false; // bad checksum or encoding
        }
    }

    private List<string>? ConnectionTypeList(ConfigEntry e)
    {
        var list = StringList(e, "allowed connection types");
        if (list is null)
            return null;
        var result = new List<string>();
        foreach (var t in list)
        {
            string up = t.ToUpperInvariant();
            if (!ConnectionTypes.Contains(up))
            {
                Error(e.KeyPosition, $"invalid connection types [\"{t}\"]");
                return null;
            }
            result.Add(up);
        }
        return result;
    }

    private List<string>? StringList(ConfigEntry e, string what)
    {
        var v = e.Value;
        if (v.Kind == ConfigValueKind.String)
            return [v.AsString()];
        if (v.Kind != ConfigValueKind.Array)
        {
            Error(e.KeyPosition, $"error parsing {what}: unsupported type {v.Describe()}");
            return null;
        }
        var list = new List<string>();
        foreach (var item in v.AsArray())
        {
            if (item.Kind != ConfigValueKind.String)
            {
                Error(item.Position, $"error parsing {what}: unsupported type in array {item.Describe()}");
                return null;
            }
            list.Add(item.AsString());
        }
        return list;
    }

    // ---- permissions (opts.go parseUserPermissions and friends) ----

    private Permissions? Permissions(ConfigEntry e)
    {
        if (e.Value.Kind != ConfigValueKind.Map)
        {
            Error(e.KeyPosition, $"Expected permissions to be a map/struct, got {e.Value.Describe()}");
            return null;
        }
        var p = new Permissions();
        foreach (var f in e.Value.AsMap())
        {
            switch (f.Key.ToLowerInvariant())
            {
                case "pub" or "publish" or "import":
                    p.Publish = SubjectPermission(f) ?? p.Publish;
                    break;
                case "sub" or "subscribe" or "export":
                    p.Subscribe = SubjectPermission(f) ?? p.Subscribe;
                    break;
                case "publish_allow_responses" or "allow_responses":
                    p.Response = ResponsePermission(f);
                    break;
                default:
                    if (!f.Value.UsedAsVariable)
                        Error(f.KeyPosition, $"Unknown field \"{f.Key}\" parsing permissions");
                    break;
            }
        }
        if (p.Response is not null)
        {
            // nats-server: allowing responses turns off the blanket publish allow.
            p.Publish ??= new SubjectPermission();
            p.Publish.Allow ??= [];
        }
        return p;
    }

    /// <summary>A subject or list of subjects (old style, meaning allow), or a map with allow and/or deny.</summary>
    private SubjectPermission? SubjectPermission(ConfigEntry e)
    {
        if (e.Value.Kind != ConfigValueKind.Map)
            return Subjects(e) is { } allow ? new SubjectPermission { Allow = allow } : null;
        var m = e.Value.AsMap();
        if (m.Count == 0)
            return null;
        var sp = new SubjectPermission();
        foreach (var f in m)
        {
            switch (f.Key.ToLowerInvariant())
            {
                case "allow":
                    sp.Allow = Subjects(f) ?? sp.Allow;
                    break;
                case "deny":
                    sp.Deny = Subjects(f) ?? sp.Deny;
                    break;
                default:
                    if (!f.Value.UsedAsVariable)
                        Error(f.KeyPosition, $"Unknown field name \"{f.Key}\" parsing subject permissions, only 'allow' or 'deny' are permitted");
                    break;
            }
        }
        return sp;
    }

    private List<string>? Subjects(ConfigEntry e)
    {
        var v = e.Value;
        var subjects = new List<string>();
        if (v.Kind == ConfigValueKind.String)
            subjects.Add(v.AsString());
        else if (v.Kind == ConfigValueKind.Array)
        {
            foreach (var item in v.AsArray())
            {
                if (item.Kind != ConfigValueKind.String)
                {
                    Error(item.Position, "Subject in permissions array cannot be cast to string");
                    return null;
                }
                subjects.Add(item.AsString());
            }
        }
        else
        {
            Error(e.KeyPosition, $"Expected subject permissions to be a subject, or array of subjects, got {v.Describe()}");
            return null;
        }
        foreach (var s in subjects)
        {
            if (Subject.IsValid(s))
                continue;
            // A queue-qualified subscribe permission: "subject queue".
            var parts = s.Split([' ', '\t'], StringSplitOptions.RemoveEmptyEntries);
            if (parts.Length != 2)
            {
                Error(e.KeyPosition, $"subject \"{s}\" is not a valid subject");
                return null;
            }
            if (!Subject.IsValid(parts[0]))
            {
                Error(e.KeyPosition, $"subject \"{parts[0]}\" is not a valid subject");
                return null;
            }
        }
        return subjects;
    }

    private ResponsePermission? ResponsePermission(ConfigEntry e)
    {
        var v = e.Value;
        if (v.Kind == ConfigValueKind.Bool)
            return v.AsBool() ? new ResponsePermission() : null;
        if (v.Kind != ConfigValueKind.Map)
        {
            Error(e.KeyPosition, "error parsing response permissions, expected a boolean or a map");
            return null;
        }
        var rp = new ResponsePermission();
        foreach (var f in v.AsMap())
        {
            switch (f.Key.ToLowerInvariant())
            {
                case "max" or "max_msgs" or "max_messages" or "max_responses":
                    // Negative means unlimited; 0 keeps the default (opts.go parseAllowResponses).
                    if (Integer(f, out long n, int.MinValue, int.MaxValue) && n != 0)
                        rp.MaxMsgs = (int)n;
                    break;
                case "expires" or "expiration" or "ttl":
                    if (f.Value.Kind != ConfigValueKind.String)
                    {
                        Error(f.KeyPosition, "error parsing expires, not a duration string");
                        return null;
                    }
                    if (!GoDuration.TryParse(f.Value.AsString(), out var ttl, out string? err))
                    {
                        Error(f.KeyPosition, $"error parsing expires: {err}");
                        return null;
                    }
                    if (ttl != TimeSpan.Zero)
                        rp.Expires = ttl;
                    break;
                default:
                    if (!f.Value.UsedAsVariable)
                        Error(f.KeyPosition, $"Unknown field \"{f.Key}\" parsing permissions");
                    break;
            }
        }
        return rp;
    }

    // ---- jetstream (opts.go parseJetStream) ----

    /// <summary>
    /// The forms a <c>jetstream</c> entry takes besides a map, in the server block and in an account (opts.go
    /// parseJetStream / parseJetStreamForAccount): a bool, or "enabled"/"enable"/"disabled"/"disable". Null for a map
    /// (the caller reads its keys) and after an error, which is reported here.
    /// </summary>
    private bool? JetStreamSwitch(ConfigEntry e)
    {
        var v = e.Value;
        switch (v.Kind)
        {
            case ConfigValueKind.Bool:
                return v.AsBool();
            case ConfigValueKind.String:
                switch (v.AsString().ToLowerInvariant())
                {
                    case "enabled" or "enable":
                        return true;
                    case "disabled" or "disable":
                        return false;
                }
                Error(e.KeyPosition, $"Expected 'enabled' or 'disabled' for string value, got '{v.AsString()}'");
                return null;
            case ConfigValueKind.Map:
                return null;
            default:
                Error(e.KeyPosition, $"Expected map, bool or string to define JetStream, got {v.Describe()}");
                return null;
        }
    }

    private void JetStream(ConfigEntry e)
    {
        var v = e.Value;
        if (JetStreamSwitch(e) is { } on)
        {
            o.JetStream = on;
            return;
        }
        if (v.Kind != ConfigValueKind.Map) return;
        bool enable = true;
        foreach (var f in v.AsMap())
        {
            string key = f.Key.ToLowerInvariant();
            if (UnsupportedJetStream.Contains(key))
            {
                Unsupported(f, "jetstream");
                continue;
            }
            string s;
            switch (key)
            {
                case "store" or "store_dir" or "storedir":
                    if (o.StoreDir is not null)
                        Error(f.KeyPosition, "Duplicate 'store_dir' configuration");
                    else if (String(f, out s))
                        o.StoreDir = s;
                    break;
                case "max_memory_store" or "max_mem_store" or "max_mem":
                    if (StorageSize(f, "max_mem_store", out long mem)) o.JetStreamMaxMemory = mem;
                    break;
                case "max_file_store" or "max_file":
                    if (StorageSize(f, "max_file_store", out long file)) o.JetStreamMaxStore = file;
                    break;
                case "enable" or "enabled":
                    if (Bool(f, out bool b)) enable = b;
                    break;
                case "domain":
                    if (String(f, out s)) o.JetStreamDomain = s;
                    break;
                case "sync" or "sync_interval":
                    // opts.go: the string "always" turns on sync-always; anything else is a duration.
                    if (f.Value.Kind == ConfigValueKind.String && string.Equals(f.Value.AsString(), "always", StringComparison.OrdinalIgnoreCase))
                    {
                        o.JetStreamSyncAlways = true;
                    }
                    else if (Duration(f, allowSeconds: false, out var interval))
                    {
                        o.JetStreamSyncInterval = interval;
                    }
                    break;
                case "limits":
                    JetStreamLimits(f);
                    break;
                case "store_engine":
                    // Our extension: which storage engine backs file streams (see ServerOptions.StorageEngine).
                    if (String(f, out s))
                    {
                        if (s.Length == 0)
                            Error(f.KeyPosition, "store_engine can not be empty");
                        else
                            o.StorageEngine = s;
                    }
                    break;
                case "persist_mode":
                    // nats-server 2.12 names this per stream (stream.go PersistModeType: "", "default", "async");
                    // here it is also the default for the file streams that do not set it.
                    if (String(f, out s))
                    {
                        if (s is "" or "default") o.JetStreamPersistAsync = false;
                        else if (s == "async") o.JetStreamPersistAsync = true;
                        else Error(f.KeyPosition, $"persist_mode must be \"default\" or \"async\", got \"{s}\"");
                    }
                    break;
                case "store_engine_options":
                    // Our extension: a free block handed to the engine; values are kept as their text.
                    if (f.Value.Kind != ConfigValueKind.Map)
                    {
                        Error(f.KeyPosition, $"store_engine_options must be a map, got {f.Value.Describe()}");
                        break;
                    }
                    foreach (var opt in f.Value.AsMap())
                    {
                        if (EngineOptionText(opt.Value) is { } text) o.StorageEngineOptions[opt.Key] = text;
                        else Error(opt.KeyPosition, $"store_engine_options value of '{opt.Key}' must be a string, number or boolean, got {opt.Value.Describe()}");
                    }
                    break;
                case "store_engine_path" or "store_engine_paths":
                    // Our extension: third-party engine assemblies, loaded one by one by path (never a folder scan).
                    if (f.Value.Kind == ConfigValueKind.Array)
                    {
                        foreach (var item in f.Value.AsArray())
                        {
                            if (item.Kind == ConfigValueKind.String) o.StorageEnginePaths.Add(item.AsString());
                            else Error(item.Position, $"store_engine_path entries must be strings, got {item.Describe()}");
                        }
                    }
                    else if (String(f, out s))
                    {
                        o.StorageEnginePaths.Add(s);
                    }
                    break;
                default:
                    Unknown(f);
                    break;
            }
        }
        o.JetStream = enable;
    }

    /// <summary>The text of a scalar store_engine_options value (numbers invariant, booleans lower case), or null.</summary>
    private static string? EngineOptionText(ConfigValue v) => v.Kind switch
    {
        ConfigValueKind.String => v.AsString(),
        ConfigValueKind.Integer => v.AsInteger().ToString(CultureInfo.InvariantCulture),
        ConfigValueKind.Float => v.AsFloat().ToString(CultureInfo.InvariantCulture),
        ConfigValueKind.Bool => v.AsBool() ? "true" : "false",
        _ => null,
    };

    /// <summary>opts.go getStorageSize: an integer (size suffixes allowed) or a string ending in K, M, G or T.</summary>
    private bool StorageSize(ConfigEntry e, string name, out long size)
    {
        size = 0;
        var v = e.Value;
        if (v.Kind == ConfigValueKind.Integer)
            size = v.AsInteger();
        else if (v.Kind == ConfigValueKind.String)
        {
            string s = v.AsString();
            if (s.Length == 0)
                return true;
            int shift = s[^1] switch { 'K' => 10, 'M' => 20, 'G' => 30, 'T' => 40, _ => -1 };
            if (!long.TryParse(s.AsSpan(0, s.Length - 1), NumberStyles.AllowLeadingSign, CultureInfo.InvariantCulture, out long num))
            {
                Error(e.KeyPosition, $"{name} strconv.ParseInt: parsing \"{s[..^1]}\": invalid syntax");
                return false;
            }
            if (shift < 0)
            {
                Error(e.KeyPosition, $"{name} sizes defined as strings must end in K, M, G, T");
                return false;
            }
            try
            {
                size = checked(num * (1L << shift));
            }
            catch (OverflowException)
            {
                Error(e.KeyPosition, $"{name} value is too big");
                return false;
            }
        }
        else
        {
            Error(e.KeyPosition, $"{name} must be int64 or string");
            return false;
        }
        if (size < -1)
        {
            Error(e.KeyPosition, $"{name} value can not be negative (use -1 for unlimited)");
            return false;
        }
        return true;
    }
}
