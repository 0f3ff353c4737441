using System.Text.Json;
using Prometheus;

namespace NatsBroker.Monitoring.Metrics;

/// <summary>
/// The <c>gnatsd_*</c> families prometheus-nats-exporter publishes for a server's /varz, /subsz, /connz, /routez,
/// /leafz and /healthz (collector/collector.go, connz.go, routez.go, leafz.go, healthz.go), under the same names
/// and labels, so dashboards and alerts written for the exporter work against /metrics unchanged. The exporter's
/// <c>server_id</c> label is the ID it was given for the server; here it is the server's own ID.
/// </summary>
internal sealed class CoreMetrics
{
    private const string System = "gnatsd";

    private readonly JsonGauges _varz;
    private readonly JsonGauges _subsz;
    private readonly GaugeFamily _connzNumConnections, _connzTotal, _connzOffset, _connzLimit, _connzPendingBytes,
        _connzSubscriptions, _connzInBytes, _connzOutBytes, _connzInMsgs, _connzOutMsgs;
    private readonly GaugeFamily _routezServerId, _routezNumRoutes;
    private readonly GaugeFamily _leafzNodes;
    private readonly GaugeFamily _healthzStatus;

    public CoreMetrics(MetricFactory factory)
    {
        _varz = new JsonGauges(factory, System, "varz");
        _subsz = new JsonGauges(factory, System, "subsz");
        GaugeFamily Connz(string name) => new(factory, $"{System}_connz_{name}", name, "server_id");
        _connzNumConnections = Connz("num_connections");
        _connzTotal = Connz("total");
        _connzOffset = Connz("offset");
        _connzLimit = Connz("limit");
        _connzPendingBytes = Connz("pending_bytes");
        _connzSubscriptions = Connz("subscriptions");
        _connzInBytes = Connz("in_bytes");
        _connzOutBytes = Connz("out_bytes");
        _connzInMsgs = Connz("in_msgs");
        _connzOutMsgs = Connz("out_msgs");
        _routezServerId = new GaugeFamily(factory, $"{System}_routez_server_id", "server_id", "server_id", "value");
        _routezNumRoutes = new GaugeFamily(factory, $"{System}_routez_num_routes", "num_routes", "server_id");
        _leafzNodes = new GaugeFamily(factory, $"{System}_leafz_conn_nodes_total", "nodes_total", "server_id");
        _healthzStatus = new GaugeFamily(factory, $"{System}_healthz_status", "status", "server_id");
    }

    public void Scrape(MonitorEndpoints endpoints, string serverId)
    {
        _varz.Scrape(JsonSerializer.SerializeToElement(endpoints.BuildVarz(), MonitorJsonContext.Compact.Varz), serverId);
        _subsz.Scrape(JsonSerializer.SerializeToElement(endpoints.Subsz(), MonitorJsonContext.Compact.Subsz), serverId);
        ScrapeConnz(endpoints.Connz(), serverId);

        var routez = endpoints.BuildRoutez();
        Once(_routezServerId, 1, serverId, routez.ServerId);
        Once(_routezNumRoutes, routez.NumRoutes, serverId);
        Once(_leafzNodes, endpoints.BuildLeafz().LeafNodes, serverId);
        // The exporter: 0 when /healthz says "ok", 1 otherwise.
        Once(_healthzStatus, MonitorEndpoints.BuildHealthz().Status == "ok" ? 0 : 1, serverId);
    }

    /// <summary>
    /// As the exporter computes them from one /connz page (default limit 1024): the page's counts, and the sums of
    /// its connections' figures.
    /// </summary>
    private void ScrapeConnz(Connz connz, string serverId)
    {
        double pending = 0, subs = 0, inBytes = 0, outBytes = 0, inMsgs = 0, outMsgs = 0;
        foreach (var c in connz.Connections)
        {
            pending += c.PendingBytes;
            subs += c.Subscriptions;
            inBytes += c.InBytes;
            outBytes += c.OutBytes;
            inMsgs += c.InMsgs;
            outMsgs += c.OutMsgs;
        }
        Once(_connzNumConnections, connz.NumConnections, serverId);
        Once(_connzTotal, connz.Total, serverId);
        Once(_connzOffset, connz.Offset, serverId);
        Once(_connzLimit, connz.Limit, serverId);
        Once(_connzPendingBytes, pending, serverId);
        Once(_connzSubscriptions, subs, serverId);
        Once(_connzInBytes, inBytes, serverId);
        Once(_connzOutBytes, outBytes, serverId);
        Once(_connzInMsgs, inMsgs, serverId);
        Once(_connzOutMsgs, outMsgs, serverId);
    }

    private static void Once(GaugeFamily family, double value, params string[] labels)
    {
        family.BeginScrape();
        family.Set(value, labels);
        family.EndScrape();
    }
}
