using NatsBroker.Server;
using Prometheus;

namespace NatsBroker.Monitoring.Metrics;

/// <summary>
/// Ours alone (nats-server has no separate protocol gateway processes): per protocol gateway (tls-terminator,
/// websocket, mqtt; gateways/README.md) and proxy key, the end users it has connected through the core and their
/// traffic as the core counts it, the figures /varz <c>connected_gateways</c> and /connz <c>proxy</c> show.
/// </summary>
internal sealed class GatewayMetrics
{
    private static readonly string[] Labels = ["server_id", "gateway", "key", "supervised"];

    private readonly GaugeFamily _connections, _inMsgs, _outMsgs, _inBytes, _outBytes;
    private readonly GaugeFamily[] _all;

    public GatewayMetrics(MetricFactory factory)
    {
        GaugeFamily Gauge(string name, string help) => new(factory, $"natsbroker_gateway_{name}", help, Labels);
        _connections = Gauge("connections", "Open end-user connections through the protocol gateway");
        _inMsgs = Gauge("in_msgs", "Messages received from the gateway's open connections");
        _outMsgs = Gauge("out_msgs", "Messages sent to the gateway's open connections");
        _inBytes = Gauge("in_bytes", "Bytes received from the gateway's open connections");
        _outBytes = Gauge("out_bytes", "Bytes sent to the gateway's open connections");
        _all = [_connections, _inMsgs, _outMsgs, _inBytes, _outBytes];
    }

    public void Scrape(NatsServer server, string serverId)
    {
        foreach (var f in _all) f.BeginScrape();
        var supervised = server.SupervisedProxyKeys;
        var groups = new Dictionary<(string Key, string Gateway), (long Conns, long InMsgs, long OutMsgs, long InBytes, long OutBytes)>();
        foreach (var c in server.Clients)
        {
            if (c.ProxyKey is not { } key) continue;
            var id = (key, c.ProxiedClient?.Gateway ?? "");
            groups.TryGetValue(id, out var sum);
            groups[id] = (sum.Conns + 1, sum.InMsgs + c.InMsgs, sum.OutMsgs + c.OutMsgs,
                sum.InBytes + c.InBytes, sum.OutBytes + c.OutBytes);
        }
        foreach (var ((key, gateway), sum) in groups)
        {
            string[] labels = [serverId, gateway, key, supervised.Contains(key) ? "true" : "false"];
            _connections.Set(sum.Conns, labels);
            _inMsgs.Set(sum.InMsgs, labels);
            _outMsgs.Set(sum.OutMsgs, labels);
            _inBytes.Set(sum.InBytes, labels);
            _outBytes.Set(sum.OutBytes, labels);
        }
        foreach (var f in _all) f.EndScrape();
    }
}
