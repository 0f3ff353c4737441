using System.Collections.Concurrent;
using System.Text;
using System.Text.Json;
using System.Text.Json.Serialization.Metadata;
using NatsBroker.Server;
using NatsBroker.Subjects;

namespace NatsBroker.Monitoring;

/// <summary>One HTTP answer: status, content type and body.</summary>
public sealed record MonitorResponse(int Status, string ContentType, byte[] Body)
{
    public const string Json = "application/json";
    public const string JavaScript = "application/javascript";
    public const string Text = "text/plain; charset=utf-8";
    public const string Html = "text/html; charset=utf-8";

    public string BodyText => Encoding.UTF8.GetString(Body);

    public static MonitorResponse BadRequest(string message) => new(400, Text, Encoding.UTF8.GetBytes(message));
    public static MonitorResponse NotFound { get; } = new(404, Text, "404 page not found\n"u8.ToArray());
}

/// <summary>Thrown while decoding query parameters; becomes a 400 with nats-server's text.</summary>
public sealed class MonitorQueryException(string message) : Exception(message);

/// <summary>
/// The monitoring endpoints of nats-server 2.9.10 (server/monitor.go) over a <see cref="NatsServer"/>, independent of
/// HTTP: a path and a query-parameter lookup in, a <see cref="MonitorResponse"/> out. <see cref="MonitoringServer"/>
/// puts it behind Kestrel; tests can call it directly.
/// </summary>
public sealed partial class MonitorEndpoints(NatsServer server)
{
    public const int DefaultListSize = 1024;
    public const string GlobalAccount = "$G";

    private readonly ConcurrentDictionary<string, long> _requestStats = new(StringComparer.Ordinal);

    /// <summary>The bound monitoring port (0 until the HTTP listener is up).</summary>
    public int BoundPort { get; set; }

    public static readonly IReadOnlyList<string> Paths =
        ["/", "/varz", "/connz", "/routez", "/gatewayz", "/leafz", "/subsz", "/subscriptionsz", "/accountz", "/accstatz", "/jsz", "/healthz", "/ipqueuesz", "/metrics"];

    /// <summary>
    /// Routes a request, /metrics included (its scrape may wait for another scrape to finish); <paramref name="accept"/>
    /// is the request's Accept header, which chooses the metrics format.
    /// </summary>
    public Task<MonitorResponse> HandleAsync(string path, Func<string, string?> query, string? accept, CancellationToken ct)
    {
        if (path != "/metrics") return Task.FromResult(Handle(path, query));
        Count("/metrics");
        return Metrics.ScrapeAsync(accept, ct);
    }

    /// <summary>Created on the first scrape, so that prometheus-net loads only where /metrics is used.</summary>
    private Metrics.MetricsExporter Metrics => LazyInitializer.EnsureInitialized(ref _metrics, () => new Metrics.MetricsExporter(server, this));

    private Metrics.MetricsExporter? _metrics;

    /// <summary>Routes a request. Paths match exactly, as Go's ServeMux patterns without a trailing slash do.</summary>
    public MonitorResponse Handle(string path, Func<string, string?> query)
    {
        try
        {
            return path switch
            {
                "/" => Root(),
                "/varz" => Respond(query, Varz(), MonitorJsonContext.Indented.Varz),
                "/connz" => Connz(query),
                "/routez" => RoutezResponse(query),
                "/gatewayz" => GatewayzResponse(query),
                "/leafz" => LeafzResponse(query),
                "/subsz" or "/subscriptionsz" => Subsz(query),
                "/accountz" => Accountz(query),
                "/accstatz" => AccountStatz(query),
                "/jsz" => Jsz(query),
                "/healthz" => Healthz(query),
                "/ipqueuesz" => IpQueuesz(query),
                _ => MonitorResponse.NotFound,
            };
        }
        catch (MonitorQueryException ex)
        {
            return MonitorResponse.BadRequest(ex.Message);
        }
    }

    /// <summary>Requests served per path (varz http_req_stats).</summary>
    public IReadOnlyDictionary<string, long> RequestStats => _requestStats;

    private void Count(string path) => _requestStats.AddOrUpdate(path, 1, static (_, n) => n + 1);

    private static MonitorResponse Respond<T>(Func<string, string?> query, T value, JsonTypeInfo<T> type) =>
        Serialize(query, JsonSerializer.SerializeToUtf8Bytes(value, type));

    /// <summary>JSON, or JSONP when <c>?callback=</c> is given (server/monitor.go ResponseHandler).</summary>
    private static MonitorResponse Serialize(Func<string, string?> query, byte[] json)
    {
        var callback = query("callback");
        if (string.IsNullOrEmpty(callback)) return new MonitorResponse(200, MonitorResponse.Json, json);
        var prefix = Encoding.UTF8.GetBytes(callback + "(");
        var body = new byte[prefix.Length + json.Length + 1];
        prefix.CopyTo(body, 0);
        json.CopyTo(body, prefix.Length);
        body[^1] = (byte)')';
        return new MonitorResponse(200, MonitorResponse.JavaScript, body);
    }

    // ---- query decoding, with strconv's error texts ----

    private static bool DecodeBool(Func<string, string?> query, string name)
    {
        var s = query(name);
        if (string.IsNullOrEmpty(s)) return false;
        if (GoFormat.TryParseBool(s, out var v)) return v;
        throw new MonitorQueryException($"Error decoding boolean for '{name}': strconv.ParseBool: parsing \"{s}\": invalid syntax");
    }

    private static int DecodeInt(Func<string, string?> query, string name)
    {
        var s = query(name);
        if (string.IsNullOrEmpty(s)) return 0;
        if (GoFormat.TryParseInt(s, out var v, out var err)) return (int)Math.Clamp(v, int.MinValue, int.MaxValue);
        throw new MonitorQueryException($"Error decoding int for '{name}': {err}");
    }

    private static ulong DecodeUInt64(Func<string, string?> query, string name)
    {
        var s = query(name);
        if (string.IsNullOrEmpty(s)) return 0;
        if (GoFormat.TryParseUInt64(s, out var v, out var err)) return v;
        throw new MonitorQueryException($"Error decoding uint64 for '{name}': {err}");
    }

    private static ConnState DecodeState(Func<string, string?> query)
    {
        var s = query("state");
        if (string.IsNullOrEmpty(s)) return ConnState.Open;
        return s.ToLowerInvariant() switch
        {
            "open" => ConnState.Open,
            "closed" => ConnState.Closed,
            "any" or "all" => ConnState.All,
            _ => throw new MonitorQueryException($"Error decoding state for {s}"),
        };
    }

    private static (bool Subs, bool Detail) DecodeSubs(Func<string, string?> query)
    {
        if (string.Equals(query("subs"), "detail", StringComparison.OrdinalIgnoreCase)) return (false, true);
        return (DecodeBool(query, "subs"), false);
    }

    // ---- / ----

    private MonitorResponse Root()
    {
        Count("/");
        var html = $$"""
            <html lang="en">
              <head>
                <title>NATS monitoring</title>
                <style type="text/css">
                  body { font-family: ui-sans-serif, system-ui, sans-serif; margin-left: 32px }
                  a { display: block; margin-left: 7px; padding-bottom: 6px }
                </style>
              </head>
              <body>
                <h3>{{NatsServer.ImplementationName}} {{NatsServer.ImplementationVersion}} (nats-server {{NatsServer.CompatibleVersion}} compatible)</h3>
                <a href=./varz>General</a>
                <a href=./jsz>JetStream</a>
                <a href=./connz>Connections</a>
                <a href=./accountz>Accounts</a>
                <a href=./accstatz>Account Stats</a>
                <a href=./subsz>Subscriptions</a>
                <a href=./routez>Routes</a>
                <a href=./leafz>LeafNodes</a>
                <a href=./gatewayz>Gateways</a>
                <a href=./healthz>Health Probe</a>
                <a href=https://docs.nats.io/running-a-nats-service/nats_admin/monitoring>Help</a>
              </body>
            </html>
            """;
        return new MonitorResponse(200, MonitorResponse.Html, Encoding.UTF8.GetBytes(html));
    }

    // ---- /varz ----

    public Varz Varz()
    {
        Count("/varz");
        return BuildVarz();
    }

    /// <summary>/varz's document without counting a /varz request (for /metrics).</summary>
    internal Varz BuildVarz()
    {
        var o = server.Options;
        var (rss, cpu) = server.ProcessUsage();
        var (inMsgs, inBytes, outMsgs, outBytes) = server.MessageTotals();
        var now = DateTime.UtcNow;
        var v = new Varz
        {
            SystemAccount = server.Accounts.System?.Name,
            ServerId = server.ServerId,
            ServerName = server.ServerName,
            Version = NatsServer.CompatibleVersion,
            Proto = 1,
            Go = $"dotnet{Environment.Version}",
            Host = o.Host,
            Port = server.ClientPort,
            AuthRequired = server.AuthRequired,
            MaxConnections = o.MaxConnections,
            MaxSubscriptions = o.MaxSubscriptions,
            PingInterval = o.PingInterval.Ticks * 100,
            PingMax = o.MaxPingsOut,
            HttpHost = o.HttpHost,
            HttpPort = o.HttpPort,
            AuthTimeout = o.AuthTimeout.TotalSeconds,
            MaxControlLine = o.MaxControlLine,
            MaxPayload = o.MaxPayload,
            MaxPending = o.MaxPending,
            TlsTimeout = 2,
            WriteDeadline = o.WriteDeadline.Ticks * 100,
            Start = server.StartTime,
            Now = now,
            Uptime = GoFormat.Uptime(now - server.StartTime),
            Mem = rss,
            Cores = Environment.ProcessorCount,
            GoMaxProcs = Environment.ProcessorCount,
            Cpu = cpu,
            Connections = server.ClientCount,
            TotalConnections = server.TotalConnections,
            InMsgs = inMsgs,
            InBytes = inBytes,
            InClientMsgs = inMsgs,
            InClientBytes = inBytes,
            OutMsgs = outMsgs,
            OutBytes = outBytes,
            OutClientMsgs = outMsgs,
            OutClientBytes = outBytes,
            SlowConsumers = server.SlowConsumers,
            StaleConnections = server.StaleConnections,
            StalledClients = server.StalledClients,
            SlowConsumerStats = new ConnectionKindCounts { Clients = (ulong)server.SlowConsumers },
            StaleConnectionStats = new ConnectionKindCounts { Clients = (ulong)server.StaleConnections },
            Subscriptions = server.SubList.Count,
            ConfigLoadTime = server.ConfigLoadTime,
            ConfigDigest = o.ConfigDigest ?? "",
            Tags = o.Tags.Count == 0 ? null : [.. o.Tags.Select(t => string.IsNullOrEmpty(t.Value) ? t.Key : $"{t.Key}:{t.Value}")],
        };
        if (o.JetStream)
        {
            var u = server.JetStream?.Usage() ?? default;
            v.JetStream = new JetStreamVarz
            {
                Config = JetStreamConfig(),
                Stats = new JetStreamStatsInfo
                {
                    Accounts = 1,
                    Memory = u.Memory,
                    Storage = u.Storage,
                    Api = new JetStreamApiStats { Level = JetStream.ApiLevel.Current, Total = u.ApiTotal, Errors = u.ApiErrors },
                },
                Limits = JetStreamLimits(),
            };
        }
        foreach (var (path, n) in _requestStats) v.HttpReqStats[path] = n;
        v.Proxies = o.TrustedProxies.Count == 0 ? null : new ProxiesVarz { Trusted = [.. o.TrustedProxies.Distinct().Select(k => new ProxyInfo { Key = k })] };
        v.ConnectedGateways = ConnectedGateways();
        AddCluster(v);
        return v;
    }

    /// <summary>Open proxied connections grouped by proxy key and gateway kind (gateways/README.md); null when there are none.</summary>
    private List<ConnectedGatewayVarz>? ConnectedGateways()
    {
        var supervisedKeys = server.SupervisedProxyKeys;
        var groups = server.Clients
            .Where(c => c.ProxyKey is not null)
            .GroupBy(c => (Key: c.ProxyKey!, Gateway: c.ProxiedClient?.Gateway))
            .OrderBy(g => g.Key.Key, StringComparer.Ordinal).ThenBy(g => g.Key.Gateway, StringComparer.Ordinal)
            .Select(g => new ConnectedGatewayVarz
            {
                Key = g.Key.Key,
                Gateway = g.Key.Gateway,
                Supervised = supervisedKeys.Contains(g.Key.Key),
                Connections = g.Count(),
            })
            .ToList();
        return groups.Count == 0 ? null : groups;
    }

    private JetStreamConfigInfo JetStreamConfig()
    {
        var o = server.Options;
        return new JetStreamConfigInfo
        {
            MaxMemory = o.JetStreamMaxMemory,
            MaxStorage = o.JetStreamMaxStore,
            StoreDir = server.JetStream?.StoreDir ?? (string.IsNullOrEmpty(o.StoreDir) ? null : Path.Combine(o.StoreDir, "jetstream")),
            // nats-server defaultSyncInterval: 2 minutes; "always" is written as sync_always with no interval.
            SyncInterval = o.JetStreamSyncAlways ? 0 : (o.JetStreamSyncInterval ?? TimeSpan.FromMinutes(2)).Ticks * 100,
            SyncAlways = o.JetStreamSyncAlways,
            Domain = string.IsNullOrEmpty(o.JetStreamDomain) ? null : o.JetStreamDomain,
            Strict = true,
        };
    }

    /// <summary>
    /// The configured <c>jetstream { limits { batch {} } }</c> values (JSLimitOpts): nats-server writes only what the
    /// config set. The batch timeout's default is not written (ours keeps 10 s as the option's value when unset).
    /// </summary>
    private JetStreamLimitsVarz JetStreamLimits()
    {
        var o = server.Options;
        return new JetStreamLimitsVarz
        {
            MaxBatchInflightPerStream = Math.Max(0, o.JetStreamBatchMaxInflightPerStream),
            MaxBatchInflightTotal = Math.Max(0, o.JetStreamBatchMaxInflightTotal),
            MaxBatchSize = Math.Max(0, o.JetStreamBatchMaxMsgs),
            MaxBatchTimeout = o.JetStreamBatchTimeout == TimeSpan.FromSeconds(10) ? 0 : o.JetStreamBatchTimeout.Ticks * 100,
        };
    }

    // ---- /connz ----

    public enum ConnState { Open, Closed, All }

    private static readonly HashSet<string> SortOptions = new(StringComparer.Ordinal)
    {
        "", "cid", "start", "subs", "pending", "msgs_to", "msgs_from", "bytes_to", "bytes_from", "last", "idle", "uptime", "stop", "reason",
    };

    private MonitorResponse Connz(Func<string, string?> query)
    {
        var sort = query("sort") ?? "";
        bool auth = DecodeBool(query, "auth");
        var (subs, detail) = DecodeSubs(query);
        int offset = DecodeInt(query, "offset");
        int limit = DecodeInt(query, "limit");
        ulong cid = DecodeUInt64(query, "cid");
        var state = DecodeState(query);
        var acc = query("acc");
        Count("/connz");
        var connz = Connz(sort, auth, subs, detail, offset, limit, cid, state, acc);
        return Respond(query, connz, MonitorJsonContext.Indented.Connz);
    }

    /// <summary>server/monitor.go Connz: open and/or closed connections, sorted, then paged.</summary>
    public Connz Connz(string sort = "", bool auth = false, bool subs = false, bool detail = false, int offset = 0, int limit = 0,
        ulong cid = 0, ConnState state = ConnState.Open, string? account = null)
    {
        if (!SortOptions.Contains(sort)) throw new MonitorQueryException($"invalid sorting option: {sort}");
        if (sort == "stop" && state != ConnState.Closed) throw new MonitorQueryException("sort by stop only valid on closed connections");
        if (sort == "reason" && state != ConnState.Closed) throw new MonitorQueryException("sort by reason only valid on closed connections");
        if (offset < 0) offset = 0;
        if (limit <= 0) limit = DefaultListSize;
        if (cid > 0) limit = 1;

        var now = DateTime.UtcNow;
        var result = new Connz { ServerId = server.ServerId, Now = now, Offset = offset, Limit = limit };
        var open = state is ConnState.Open or ConnState.All ? server.Clients.ToList() : [];
        var closed = state is ConnState.Closed or ConnState.All ? server.ClosedClients() : [];
        if (!string.IsNullOrEmpty(account))
        {
            // acc= keeps the connections bound to that account (monitor.go Connz, ConnzOptions.Account).
            open = open.Where(c => c.Account.Name == account).ToList();
            closed = [.. closed.Where(c => (c.Account ?? GlobalAccount) == account)];
        }
        result.Total = open.Count + closed.Count;

        if (cid > 0)
        {
            // As nats-server: a cid lookup searches the closed list for closed/all and the open clients otherwise.
            if (state is ConnState.Closed or ConnState.All)
            {
                closed = closed.Where(c => c.Cid == cid).Take(1).ToList();
                open = [];
            }
            else
            {
                open = server.FindClient(cid) is { } c ? [c] : [];
            }
        }

        var infos = new List<ConnInfo>(open.Count + closed.Count);
        foreach (var c in open) infos.Add(OpenInfo(c, now, auth, subs, detail));
        foreach (var c in closed) infos.Add(ClosedInfo(c, auth, subs, detail));

        IEnumerable<ConnInfo> sorted = infos.OrderBy(i => i.Cid);
        sorted = sort switch
        {
            "subs" => sorted.OrderByDescending(i => i.Subscriptions),
            "pending" => sorted.OrderByDescending(i => i.PendingBytes),
            "msgs_to" => sorted.OrderByDescending(i => i.OutMsgs),
            "msgs_from" => sorted.OrderByDescending(i => i.InMsgs),
            "bytes_to" => sorted.OrderByDescending(i => i.OutBytes),
            "bytes_from" => sorted.OrderByDescending(i => i.InBytes),
            "last" => sorted.OrderByDescending(i => i.LastActivity),
            // nats-server's byIdle compares last activity minus start, descending.
            "idle" => sorted.OrderByDescending(i => i.LastActivity - i.Start),
            "uptime" => sorted.OrderBy(i => (i.Stop ?? now) - i.Start),
            "stop" => sorted.OrderByDescending(i => i.Stop ?? default),
            "reason" => sorted.OrderBy(i => i.Reason ?? "", StringComparer.Ordinal),
            _ => sorted,
        };
        var all = sorted.ToList();
        int min = Math.Min(offset, all.Count);
        int max = (int)Math.Min((long)offset + limit, all.Count);
        result.Connections = all.GetRange(min, Math.Max(0, max - min));
        result.NumConnections = result.Connections.Count;
        return result;
    }

    private static string? NullIfEmpty(string? s) => string.IsNullOrEmpty(s) ? null : s;

    private static ConnInfo OpenInfo(ClientConnection c, DateTime now, bool auth, bool subs, bool detail)
    {
        var last = c.LastActivity;
        var info = new ConnInfo
        {
            Cid = c.Id,
            Kind = "Client",
            Type = "nats",
            Ip = c.RemotePort != 0 ? c.RemoteIp : "",
            Port = c.RemotePort,
            Start = c.ConnectedAt,
            LastActivity = last,
            Rtt = GoFormat.Duration(c.Rtt),
            Uptime = GoFormat.Uptime(now - c.ConnectedAt),
            Idle = GoFormat.Uptime(now - last),
            PendingBytes = c.PendingBytes,
            InMsgs = c.InMsgs,
            OutMsgs = c.OutMsgs,
            InBytes = c.InBytes,
            OutBytes = c.OutBytes,
            Name = NullIfEmpty(c.Connect?.Name),
            Lang = NullIfEmpty(c.Connect?.Lang),
            Version = NullIfEmpty(c.Connect?.Version),
        };
        var list = c.SnapshotSubscriptions();
        info.Subscriptions = list.Count;
        if (list.Count > 0)
        {
            // Subscriptions under a connection carry no account (newClientSubDetail).
            if (detail) info.SubscriptionsListDetail = [.. list.Select(s => Detail(SubscriptionSnapshot.From(s), account: null))];
            else if (subs) info.SubscriptionsList = [.. list.Select(s => Encoding.UTF8.GetString(s.Subject))];
        }
        if (auth)
        {
            info.AuthorizedUser = NullIfEmpty(c.AuthorizedUser);
            // nats-server names the account only outside the global one.
            if (c.Account.Name != GlobalAccount) info.Account = c.Account.Name;
        }
        if (c.ProxyKey is { } proxyKey)
        {
            info.Proxy = new ProxyInfo { Key = proxyKey, Gateway = c.ProxiedClient?.Gateway, WebSocketOrigin = c.ProxiedClient?.WebSocketOrigin };
            info.TlsVersion = c.ProxiedClient?.TlsVersion;
            info.TlsCipherSuite = c.ProxiedClient?.TlsCipherSuite;
            info.TlsFirst = c.ProxiedClient?.TlsFirst ?? false;
        }
        return info;
    }

    private static ConnInfo ClosedInfo(ClosedClientInfo c, bool auth, bool subs, bool detail)
    {
        var last = c.LastActivity == default ? c.Start : c.LastActivity;
        var info = new ConnInfo
        {
            Cid = c.Cid,
            Kind = "Client",
            Type = "nats",
            Ip = c.Port != 0 ? c.Ip : "",
            Port = c.Port,
            Start = c.Start,
            LastActivity = last,
            Stop = c.Stop,
            Reason = c.Reason,
            Rtt = GoFormat.Duration(TimeSpan.Zero),
            Uptime = GoFormat.Uptime(c.Stop - c.Start),
            Idle = GoFormat.Uptime(c.Stop - last),
            InMsgs = c.InMsgs,
            OutMsgs = c.OutMsgs,
            InBytes = c.InBytes,
            OutBytes = c.OutBytes,
            Subscriptions = c.Subscriptions.Count,
            Name = NullIfEmpty(c.Name),
            Lang = NullIfEmpty(c.Lang),
            Version = NullIfEmpty(c.Version),
        };
        if (c.Subscriptions.Count > 0)
        {
            // Closed connections keep the account-qualified detail (newSubDetail), as nats-server does.
            if (detail) info.SubscriptionsListDetail = [.. c.Subscriptions.Select(s => Detail(s, GlobalAccount))];
            else if (subs) info.SubscriptionsList = [.. c.Subscriptions.Select(s => s.Subject)];
        }
        if (auth)
        {
            info.AuthorizedUser = NullIfEmpty(c.User);
            if (c.Account is { } name && name != GlobalAccount) info.Account = name;
        }
        return info;
    }

    private static SubDetail Detail(SubscriptionSnapshot s, string? account) => new()
    {
        Account = account,
        Subject = s.Subject,
        Queue = NullIfEmpty(s.Queue),
        Sid = s.Sid,
        Msgs = s.Msgs,
        Max = s.Max,
        Cid = s.Cid,
    };

    // ---- /subsz ----

    private MonitorResponse Subsz(Func<string, string?> query)
    {
        Count("/subsz");
        bool subs = DecodeBool(query, "subs");
        int offset = DecodeInt(query, "offset");
        int limit = DecodeInt(query, "limit");
        var test = query("test");
        var acc = query("acc");
        var sz = Subsz(subs, offset, limit, test, acc);
        // nats-server 2.14.5 writes the whole Subsz (2.9.10 wrote only the SubListStats for an empty page).
        return Serialize(query, JsonSerializer.SerializeToUtf8Bytes(sz, MonitorJsonContext.Indented.Subsz));
    }

    /// <summary>server/monitor.go Subsz: SubList stats, and with <paramref name="subs"/> a page of subscriptions (filtered by <paramref name="test"/>).</summary>
    public Subsz Subsz(bool subs = false, int offset = 0, int limit = 0, string? test = null, string? account = null)
    {
        if (offset < 0) offset = 0;
        if (limit <= 0) limit = DefaultListSize;
        if (!string.IsNullOrEmpty(test) && !Subject.IsValidLiteral(test))
        {
            throw new MonitorQueryException($"invalid test subject, must be valid publish subject: {test}");
        }
        bool accountMatches = string.IsNullOrEmpty(account) || account == GlobalAccount;
        var stats = accountMatches ? server.SubList.GetStats() : new Subscriptions.SubListStats();
        var sz = new Subsz
        {
            ServerId = server.ServerId,
            Now = DateTime.UtcNow,
            NumSubscriptions = stats.NumSubscriptions,
            NumCache = stats.NumCache,
            NumInserts = stats.NumInserts,
            NumRemoves = stats.NumRemoves,
            NumMatches = stats.NumMatches,
            CacheHitRate = stats.CacheHitRate,
            MaxFanout = stats.MaxFanout,
            AvgFanout = stats.AvgFanout,
            Offset = offset,
            Limit = limit,
        };
        if (subs && accountMatches)
        {
            var details = new List<SubDetail>();
            byte[]? testBytes = string.IsNullOrEmpty(test) ? null : Encoding.UTF8.GetBytes(test);
            foreach (var s in server.SubList.Snapshot())
            {
                if (testBytes is not null && !Subject.Matches(s.Subject, testBytes)) continue;
                details.Add(Detail(SubscriptionSnapshot.From(s), GlobalAccount));
            }
            int min = Math.Min(offset, details.Count);
            int max = (int)Math.Min((long)offset + limit, details.Count);
            var page = details.GetRange(min, Math.Max(0, max - min));
            // Go omits an empty subscriptions_list (omitempty).
            sz.SubscriptionsList = page.Count == 0 ? null : page;
            // Total counts every matching subscription (nats-server 2.10+; 2.9.10 reported the page size).
            sz.Total = details.Count;
        }
        return sz;
    }

    // ---- /leafz, /gatewayz: no gateways or leaf nodes, so nats-server's empty shapes (/routez: MonitorEndpoints.Routez.cs) ----

    private MonitorResponse GatewayzResponse(Func<string, string?> query)
    {
        _ = DecodeBool(query, "accs");
        Count("/gatewayz");
        return Respond(query, new Gatewayz { ServerId = server.ServerId, Now = DateTime.UtcNow }, MonitorJsonContext.Indented.Gatewayz);
    }

    private MonitorResponse LeafzResponse(Func<string, string?> query)
    {
        _ = DecodeBool(query, "subs");
        Count("/leafz");
        return Respond(query, BuildLeafz(), MonitorJsonContext.Indented.Leafz);
    }

    internal Leafz BuildLeafz() => new() { ServerId = server.ServerId, Now = DateTime.UtcNow };

    // ---- /accountz, /accstatz: one account, $G ----

    private MonitorResponse Accountz(Func<string, string?> query)
    {
        Count("/accountz");
        var acc = query("acc");
        var a = new Accountz { ServerId = server.ServerId, Now = DateTime.UtcNow, SystemAccount = server.Accounts.System?.Name };
        if (string.IsNullOrEmpty(acc))
        {
            a.Accounts = [.. server.Accounts.All.Select(x => x.Name)];
        }
        else if (server.Accounts.Find(acc) is not { } account)
        {
            throw new MonitorQueryException($"Account {acc} does not exist");
        }
        else
        {
            var stats = account.Router.SubList.GetStats();
            a.AccountDetail = new AccountDetail
            {
                AccountName = account.Name,
                UpdateTime = server.StartTime,
                Complete = true,
                JetStreamEnabled = server.JetStream?.LimitsOf(account) is not null,
                ClientConnections = account.Connections,
                Subscriptions = stats.NumSubscriptions,
                SublistStats = stats,
                Exports = account.Exports.Count == 0 ? null : [.. account.Exports.Select(x => new AccountExportInfo
                {
                    Subject = x.Subject,
                    Type = x.IsService ? "service" : "stream",
                    ResponseType = x.IsService ? x.ResponseType switch
                    {
                        Configuration.ServiceResponseType.Streamed => "Stream",
                        Configuration.ServiceResponseType.Chunked => "Chunked",
                        _ => "Singleton",
                    } : null,
                    Accounts = x.Accounts,
                })],
                Imports = account.Imports.Count == 0 ? null : [.. account.Imports.Select(x => new AccountImportInfo
                {
                    Subject = x.Subject,
                    Account = x.Account,
                    To = x.To ?? (x.Prefix is { } p ? p + "." + x.Subject : null),
                    Type = x.IsService ? "service" : "stream",
                })],
            };
        }
        return Respond(query, a, MonitorJsonContext.Indented.Accountz);
    }

    private MonitorResponse AccountStatz(Func<string, string?> query)
    {
        Count("/accstatz");
        bool unused = DecodeBool(query, "unused");
        var stz = new AccountStatz { ServerId = server.ServerId, Now = DateTime.UtcNow };
        int conns = server.ClientCount;
        if (unused || conns != 0)
        {
            var (inMsgs, inBytes, outMsgs, outBytes) = server.MessageTotals();
            stz.Accounts.Add(new AccountStat
            {
                Account = GlobalAccount,
                Conns = conns,
                TotalConns = conns,
                Sent = new DataStats { Msgs = outMsgs, Bytes = outBytes },
                Received = new DataStats { Msgs = inMsgs, Bytes = inBytes },
                SlowConsumers = server.SlowConsumers,
            });
        }
        return Respond(query, stz, MonitorJsonContext.Indented.AccountStatz);
    }

    // ---- /jsz ----

    private MonitorResponse Jsz(Func<string, string?> query)
    {
        foreach (var b in (string[])["accounts", "streams", "consumers", "config", "leader-only"]) _ = DecodeBool(query, b);
        _ = DecodeInt(query, "offset");
        _ = DecodeInt(query, "limit");
        Count("/jsz");
        return Respond(query, BuildJsz(), MonitorJsonContext.Indented.Jsz);
    }

    /// <summary>/jsz's server totals (the document without accounts, streams or consumers).</summary>
    internal Jsz BuildJsz()
    {
        var o = server.Options;
        var j = new Jsz { ServerId = server.ServerId, Now = DateTime.UtcNow };
        if (o.JetStream)
        {
            j.Config = JetStreamConfig();
            var js = server.JetStream;
            j.Accounts = js?.EnabledAccounts().Length ?? 0;
            j.Total = j.Accounts;
            j.Limits = JetStreamLimits();
            var (reservedMemory, reservedStore) = js?.ReservedTotals() ?? default;
            j.ReservedMemory = (ulong)reservedMemory;
            j.ReservedStorage = (ulong)reservedStore;
            var u = js?.Usage() ?? default;
            j.Memory = u.Memory;
            j.Storage = u.Storage;
            j.Streams = u.Streams;
            j.Consumers = u.Consumers;
            j.Messages = u.Messages;
            j.Bytes = u.Bytes;
            j.Api = new JetStreamApiStats { Level = JetStream.ApiLevel.Current, Total = u.ApiTotal, Errors = u.ApiErrors };
            var failures = server.JetStream?.StoreFailures() ?? [];
            if (failures.Count > 0) j.StoreFailures = [.. failures.Select(f => new JszStoreFailure { Stream = f.Stream, Error = f.Failure })];
        }
        else
        {
            j.Disabled = true;
        }
        return j;
    }

    // ---- /healthz, /ipqueuesz ----

    private MonitorResponse Healthz(Func<string, string?> query)
    {
        Count("/healthz");
        foreach (var b in (string[])["js-enabled", "js-enabled-only", "js-server-only"]) _ = DecodeBool(query, b);
        return Respond(query, BuildHealthz(), MonitorJsonContext.Compact.HealthStatus);
    }

    internal static HealthStatus BuildHealthz() => new();

    private static MonitorResponse IpQueuesz(Func<string, string?> query)
    {
        _ = DecodeBool(query, "all");
        return Serialize(query, "{}"u8.ToArray());
    }
}
