using System.Text;
using NatsBroker.Server;
using Prometheus;

namespace NatsBroker.Monitoring.Metrics;

/// <summary>
/// /metrics on the monitoring port: what prometheus-nats-exporter would publish for this server (the gnatsd_* and
/// jetstream_* families, same names and labels), plus the protocol gateways' figures, without the sidecar.
/// <para>
/// Values are read from the same builders the JSON endpoints use, when a scrape arrives (nothing is counted on the
/// message path). Every family is a gauge, as the exporter declares them: a counter would be renamed
/// <c>..._total</c> in the OpenMetrics format and break the exporter's names. The format follows the scrape's
/// Accept header, as Prometheus negotiates it: OpenMetrics 1.0 when asked for, else the text format 0.0.4.
/// </para>
/// <para>One scrape at a time: the families keep per-scrape state (<see cref="GaugeFamily"/>).</para>
/// </summary>
internal sealed class MetricsExporter
{
    public const string OpenMetricsContentType = "application/openmetrics-text; version=1.0.0; charset=utf-8";
    public const string TextContentType = "text/plain; version=0.0.4; charset=utf-8";

    private readonly NatsServer _server;
    private readonly MonitorEndpoints _endpoints;
    private readonly CollectorRegistry _registry = Prometheus.Metrics.NewCustomRegistry();
    private readonly CoreMetrics _core;
    private readonly JetStreamMetrics _jetStream;
    private readonly GatewayMetrics _gateways;
    private readonly SemaphoreSlim _scrape = new(1, 1);

    public MetricsExporter(NatsServer server, MonitorEndpoints endpoints)
    {
        _server = server;
        _endpoints = endpoints;
        var factory = Prometheus.Metrics.WithCustomRegistry(_registry);
        _core = new CoreMetrics(factory);
        _jetStream = new JetStreamMetrics(factory);
        _gateways = new GatewayMetrics(factory);
    }

    /// <summary>True when the Accept header lists OpenMetrics (Prometheus 2.5+ sends it first).</summary>
    public static bool WantsOpenMetrics(string? accept) =>
        accept is not null && accept.Contains("application/openmetrics-text", StringComparison.OrdinalIgnoreCase);

    public async Task<MonitorResponse> ScrapeAsync(string? accept, CancellationToken ct)
    {
        bool openMetrics = WantsOpenMetrics(accept);
        await _scrape.WaitAsync(ct).ConfigureAwait(false);
        try
        {
            var id = _server.ServerId;
            _core.Scrape(_endpoints, id);
            _jetStream.Scrape(_endpoints, _server.JetStream, id, _server.ServerName, _server.Options.JetStreamDomain);
            _gateways.Scrape(_server, id);
            using var body = new MemoryStream();
            await _registry.CollectAndExportAsTextAsync(body,
                openMetrics ? ExpositionFormat.OpenMetricsText : ExpositionFormat.PrometheusText, ct).ConfigureAwait(false);
            return new MonitorResponse(200, openMetrics ? OpenMetricsContentType : TextContentType, body.ToArray());
        }
        finally
        {
            _scrape.Release();
        }
    }
}
