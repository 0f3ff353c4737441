using NatsBroker.Cluster;

namespace NatsBroker.Monitoring;

// Route monitoring (docs/design/routes.md section 6): /routez, and /varz's cluster block, route counts and
// connect_urls, over NatsServer.Cluster. The $SYS.REQ.SERVER.<id|PING>.ROUTEZ requests are served through /routez
// (Accounts/SystemServices.cs).
public sealed partial class MonitorEndpoints
{
    /// <summary>
    /// What /routez shows as a route's compression (monitor.go Routez: <c>r.route.compression</c>). Stage 1 does
    /// not negotiate compression, which nats-server 2.10+ writes as CompressionNotSupported (the value a 2.14.5 node
    /// shows for its route to a 2.9 peer).
    /// </summary>
    internal const string RouteCompression = "not supported";

    /// <summary>
    /// ClusterOptsVarz's <c>pool_size</c>: stage 1 keeps one connection per peer and no pinned accounts, which is
    /// nats-server's <c>pool_size: -1</c> (routes.md section 1).
    /// </summary>
    internal const int RoutePoolSize = -1;

    /// <summary>Seconds; nats-server's TLS_TIMEOUT, set for every cluster (opts.go setBaselineOptions).</summary>
    private const double ClusterTlsTimeout = 2;

    private MonitorResponse RoutezResponse(Func<string, string?> query)
    {
        var (subs, detail) = DecodeSubs(query);
        Count("/routez");
        return Respond(query, BuildRoutez(subs, detail), MonitorJsonContext.Indented.Routez);
    }

    /// <summary>
    /// server/monitor.go Routez: the registered routes (forEachRoute walks s.routes, so a connection still in its
    /// handshake, or a duplicate being closed, is not listed), with the peer's subscriptions when asked.
    /// nats-server walks a map (any order); ours is by rid.
    /// </summary>
    internal Routez BuildRoutez(bool subs = false, bool detail = false)
    {
        var now = DateTime.UtcNow;
        var rz = new Routez { ServerId = server.ServerId, ServerName = server.ServerName, Now = now };
        if (server.Cluster is not { } cluster) return rz;
        rz.Import = RoutePermission.From(cluster.Options.Permissions?.Publish);
        rz.Export = RoutePermission.From(cluster.Options.Permissions?.Subscribe);
        foreach (var r in cluster.Registered.OrderBy(r => r.Id)) rz.Routes.Add(Route(r, now, subs, detail));
        rz.NumRoutes = rz.Routes.Count;
        return rz;
    }

    private static RouteDetail Route(RouteConnection r, DateTime now, bool subs, bool detail)
    {
        var last = r.LastActivity;
        var d = new RouteDetail
        {
            Rid = r.Id,
            RemoteId = r.RemoteId ?? "",
            RemoteName = r.RemoteName ?? "",
            DidSolicit = r.DidSolicit,
            IsConfigured = r.IsConfigured,
            Ip = r.RemoteIp,
            Port = r.RemotePort,
            Start = r.ConnectedAt,
            LastActivity = last,
            Rtt = GoFormat.Duration(r.Rtt),
            Uptime = GoFormat.Uptime(now - r.ConnectedAt),
            Idle = GoFormat.Uptime(now - last),
            Import = r.RemoteInfo?.Import,
            Export = r.RemoteInfo?.Export,
            PendingSize = r.PendingBytes,
            InMsgs = r.InMsgs,
            OutMsgs = r.OutMsgs,
            InBytes = r.InBytes,
            OutBytes = r.OutBytes,
            Compression = RouteCompression,
        };
        // One snapshot for the count and the list, so the two agree.
        if (detail)
        {
            var list = r.SnapshotRemoteSubscriptionDetails();
            d.Subscriptions = list.Count;
            // Under a connection a subscription carries no account (newClientSubDetail); Go omits an empty list.
            if (list.Count > 0) d.SubscriptionsListDetail = [.. list.Select(s => Detail(s, account: null))];
        }
        else if (subs)
        {
            var list = r.SnapshotRemoteSubscriptions();
            d.Subscriptions = list.Count;
            if (list.Count > 0) d.SubscriptionsList = [.. list.Select(s => s.Subject)];
        }
        else
        {
            d.Subscriptions = r.RemoteSubscriptionCount;
        }
        return d;
    }

    /// <summary>
    /// /varz's cluster fields (monitor.go createVarz, updateVarzRuntimeFields). Outside a cluster: an empty
    /// <c>cluster</c> object, no <c>connect_urls</c>, no routes.
    /// </summary>
    private void AddCluster(Varz v)
    {
        if (server.Cluster is not { } cluster) return;
        var o = cluster.Options;
        v.Cluster = new ClusterVarz
        {
            Name = cluster.ClusterName,
            Host = o.Host,
            // The bound port: nats-server writes the one it listens on back into its options (route.go
            // startRouteAcceptLoop), so a random port (-1) shows as the real one.
            Port = cluster.Port,
            AuthTimeout = o.AuthTimeout.TotalSeconds,
            Urls = o.Routes.Count == 0 ? null : [.. o.Routes.Select(u => u.Authority)],
            TlsTimeout = ClusterTlsTimeout,
            PoolSize = RoutePoolSize,
        };
        var routes = cluster.Registered;
        v.Routes = routes.Count;
        v.Remotes = routes.Select(r => r.RemoteId).Distinct(StringComparer.Ordinal).Count();
        // The connect_urls our clients' INFO carries; Go omits an empty list.
        v.ConnectUrls = server.ClientConnectUrls() is { Length: > 0 } urls ? urls : null;
    }
}
