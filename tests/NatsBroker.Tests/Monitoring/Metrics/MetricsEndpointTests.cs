using NatsBroker.Tests.Infrastructure;
using NATS.Client.Core;
using NATS.Client.JetStream;
using NATS.Client.JetStream.Models;

namespace NatsBroker.Tests.Monitoring.Metrics;

/// <summary>
/// /metrics scraped over HTTP as Prometheus scrapes it, in both formats, and parsed by the Prometheus project's own
/// parsers; the figures checked against the traffic and the JetStream state that produced them.
/// </summary>
public sealed class MetricsEndpointTests
{
    private static async Task<(string ContentType, string Body)> ScrapeAsync(MonitoredBroker broker, bool openMetrics)
    {
        using var request = new HttpRequestMessage(HttpMethod.Get, "/metrics");
        // What Prometheus 2.x sends: OpenMetrics first, the text format as the fallback.
        if (openMetrics) request.Headers.Accept.ParseAdd("application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1");
        using var response = await broker.Http.SendAsync(request);
        var body = await response.Content.ReadAsStringAsync();
        Assert.True(response.IsSuccessStatusCode, $"/metrics: {(int)response.StatusCode} {body}");
        return (response.Content.Headers.ContentType?.ToString() ?? "", body);
    }

    private static double Value(Dictionary<string, (string Type, List<MetricSample> Samples)> families, string name, Func<MetricSample, bool>? where = null)
    {
        Assert.True(families.TryGetValue(name, out var family), $"{name} is missing; families: {string.Join(", ", families.Keys.Order())}");
        var samples = family.Samples.Where(where ?? (_ => true)).ToList();
        Assert.True(samples.Count == 1, $"{name}: expected one matching sample, found {samples.Count}");
        return samples[0].Value;
    }

    private static Action<NatsBroker.Configuration.ServerOptions> JetStreamOptions(string dir) => o =>
    {
        o.JetStream = true;
        o.StoreDir = dir;
    };

    [SkippableTheory]
    [InlineData(false)]
    [InlineData(true)]
    public async Task Scrape_ParsesAndCarriesTrafficAndJetStreamState(bool openMetrics)
    {
        PrometheusParser.Require();
        var dir = Directory.CreateTempSubdirectory("natsbroker-metrics-");
        try
        {
            await using var broker = await MonitoredBroker.StartAsync(JetStreamOptions(dir.FullName));
            await using var nats = new NatsConnection(new NatsOpts { Url = $"nats://127.0.0.1:{broker.ClientPort}", Name = "metrics-test" });
            var js = new NatsJSContext(nats);
            await js.CreateStreamAsync(new StreamConfig("ORDERS", ["orders.>"]));
            for (int i = 0; i < 7; i++) await js.PublishAsync($"orders.{i}", new byte[10 + i]);
            await js.CreateOrUpdateConsumerAsync("ORDERS", new ConsumerConfig("PROC") { Description = "workers" });

            var (contentType, body) = await ScrapeAsync(broker, openMetrics);
            Assert.StartsWith(openMetrics ? "application/openmetrics-text; version=1.0.0" : "text/plain; version=0.0.4", contentType, StringComparison.Ordinal);
            if (openMetrics) Assert.EndsWith("# EOF\n", body, StringComparison.Ordinal);
            var families = PrometheusParser.Parse(body, openMetrics);

            var serverId = broker.Server.ServerId;
            Assert.All(families.Where(f => f.Key.StartsWith("gnatsd_", StringComparison.Ordinal)).SelectMany(f => f.Value.Samples),
                s => Assert.Equal(serverId, s.Labels["server_id"]));
            Assert.All(families.Values, f => Assert.Equal("gauge", f.Type));

            // /varz and /connz as the exporter maps them: one gauge per number, strings as value labels.
            var varz = await broker.GetJsonAsync("/varz");
            Assert.Equal(1, Value(families, "gnatsd_varz_connections"));
            Assert.Equal(varz.GetProperty("max_payload").GetDouble(), Value(families, "gnatsd_varz_max_payload"));
            Assert.True(Value(families, "gnatsd_varz_in_msgs") >= 7);
            Assert.True(Value(families, "gnatsd_varz_mem") > 0);
            Assert.Equal(1, Value(families, "gnatsd_varz_version", s => s.Labels["value"] == varz.GetProperty("version").GetString()));
            Assert.Equal(1, Value(families, "gnatsd_connz_num_connections"));
            Assert.Equal(1, Value(families, "gnatsd_connz_total"));
            Assert.Equal(1024, Value(families, "gnatsd_connz_limit"));
            Assert.True(Value(families, "gnatsd_connz_in_msgs") >= 7);
            Assert.True(Value(families, "gnatsd_subsz_num_subscriptions") >= 1);
            Assert.Equal(0, Value(families, "gnatsd_routez_num_routes"));
            Assert.Equal(0, Value(families, "gnatsd_leafz_conn_nodes_total"));
            Assert.Equal(0, Value(families, "gnatsd_healthz_status"));

            // /jsz: the server's totals and each stream and consumer with the exporter's labels.
            var jsz = await broker.GetJsonAsync("/jsz");
            Assert.Equal(0, Value(families, "jetstream_server_jetstream_disabled"));
            Assert.Equal(1, Value(families, "jetstream_server_total_streams"));
            Assert.Equal(1, Value(families, "jetstream_server_total_consumers"));
            Assert.Equal(7, Value(families, "jetstream_server_total_messages"));
            Assert.Equal(jsz.GetProperty("bytes").GetDouble(), Value(families, "jetstream_server_total_message_bytes"));
            var info = await js.GetStreamAsync("ORDERS");
            bool Orders(MetricSample s) => s.Labels["stream_name"] == "ORDERS" && s.Labels["account"] == "$G";
            Assert.Equal(7, Value(families, "jetstream_stream_total_messages", Orders));
            Assert.Equal((double)info.Info.State.Bytes, Value(families, "jetstream_stream_total_bytes", Orders));
            Assert.Equal(1, Value(families, "jetstream_stream_first_seq", Orders));
            Assert.Equal(7, Value(families, "jetstream_stream_last_seq", Orders));
            Assert.Equal(1, Value(families, "jetstream_stream_consumer_count", Orders));
            bool Proc(MetricSample s) => Orders(s) && s.Labels["consumer_name"] == "PROC" && s.Labels["consumer_desc"] == "workers";
            Assert.Equal(7, Value(families, "jetstream_consumer_num_pending", Proc));
            Assert.Equal(0, Value(families, "jetstream_consumer_num_ack_pending", Proc));
            Assert.Equal(0, Value(families, "jetstream_consumer_delivered_stream_seq", Proc));
            var sample = families["jetstream_consumer_num_pending"].Samples.Single(Proc);
            foreach (var label in new[] { "server_id", "server_name", "cluster", "domain", "meta_leader", "is_meta_leader", "account_id", "stream_leader", "is_stream_leader", "consumer_leader", "is_consumer_leader", "consumer_created" })
            {
                Assert.True(sample.Labels.ContainsKey(label), $"label {label} missing");
            }
            Assert.True(DateTimeOffset.TryParse(sample.Labels["consumer_created"], System.Globalization.CultureInfo.InvariantCulture, System.Globalization.DateTimeStyles.None, out _));
        }
        finally
        {
            dir.Delete(recursive: true);
        }
    }

    [SkippableFact]
    public async Task Scrape_DropsTheSeriesOfADeletedStreamAndConsumer()
    {
        PrometheusParser.Require();
        var dir = Directory.CreateTempSubdirectory("natsbroker-metrics-");
        try
        {
            await using var broker = await MonitoredBroker.StartAsync(JetStreamOptions(dir.FullName));
            await using var nats = new NatsConnection(new NatsOpts { Url = $"nats://127.0.0.1:{broker.ClientPort}" });
            var js = new NatsJSContext(nats);
            await js.CreateStreamAsync(new StreamConfig("A", ["a.>"]));
            await js.CreateStreamAsync(new StreamConfig("B", ["b.>"]));
            await js.CreateOrUpdateConsumerAsync("A", new ConsumerConfig("CA"));

            var before = PrometheusParser.Parse((await ScrapeAsync(broker, false)).Body, false);
            Assert.Equal(["A", "B"], before["jetstream_stream_total_messages"].Samples.Select(s => s.Labels["stream_name"]).Order());
            Assert.Single(before["jetstream_consumer_num_pending"].Samples);

            await js.DeleteStreamAsync("A");
            var after = PrometheusParser.Parse((await ScrapeAsync(broker, false)).Body, false);
            Assert.Equal(["B"], after["jetstream_stream_total_messages"].Samples.Select(s => s.Labels["stream_name"]));
            Assert.True(!after.TryGetValue("jetstream_consumer_num_pending", out var consumers) || consumers.Samples.Count == 0);
            Assert.Equal(1, Value(after, "jetstream_server_total_streams"));
        }
        finally
        {
            dir.Delete(recursive: true);
        }
    }

    [SkippableFact]
    public async Task Scrape_WithoutJetStream_SaysDisabled()
    {
        PrometheusParser.Require();
        await using var broker = await MonitoredBroker.StartAsync();
        var families = PrometheusParser.Parse((await ScrapeAsync(broker, true)).Body, true);
        Assert.Equal(1, Value(families, "jetstream_server_jetstream_disabled"));
        Assert.Equal(0, Value(families, "gnatsd_varz_connections"));
        // A scrape is counted as a /metrics request, not as the /varz, /connz and /jsz reads behind it.
        var varz = await broker.GetJsonAsync("/varz");
        Assert.Equal(1, varz.GetProperty("http_req_stats").GetProperty("/metrics").GetInt32());
        Assert.False(varz.GetProperty("http_req_stats").TryGetProperty("/jsz", out _));
    }

    /// <summary>
    /// Differential: every gauge prometheus-nats-exporter would derive from nats-server's /varz and /subsz (each
    /// top-level number, and server_id/server_name/version as labels) is in ours, under the same name, for the same
    /// traffic on both servers.
    /// </summary>
    [SkippableTheory]
    [InlineData("2.9.10")]
    [InlineData("2.14.5")]
    public async Task Scrape_HasEveryGaugeTheExporterDerivesFromNatsServer(string version)
    {
        PrometheusParser.Require();
        var exe = version == "2.14.5" ? Prerequisites.RequireOracle214() : Prerequisites.RequireGoServer();
        await using var oracle = await NatsServerOracle.StartAsync(exe);
        await using var broker = await MonitoredBroker.StartAsync();
        var families = PrometheusParser.Parse((await ScrapeAsync(broker, false)).Body, false);
        var missing = new List<string>();
        foreach (var endpoint in new[] { "varz", "subsz" })
        {
            var doc = await oracle.GetJsonAsync("/" + endpoint);
            foreach (var p in doc.EnumerateObject())
            {
                bool exported = p.Value.ValueKind == System.Text.Json.JsonValueKind.Number
                    || (p.Value.ValueKind == System.Text.Json.JsonValueKind.String && p.Name is "server_id" or "server_name" or "version");
                var name = $"gnatsd_{endpoint}_{p.Name}";
                if (exported && !families.ContainsKey(name)) missing.Add(name);
            }
        }
        Assert.True(missing.Count == 0, $"gauges the exporter would publish for nats-server {version} and ours lacks: {string.Join(", ", missing)}");
    }


    /// <summary>Every metric the Grafana dashboard in deploy/ queries is one /metrics publishes (with JetStream on).</summary>
    [SkippableFact]
    public async Task GrafanaDashboard_QueriesOnlyPublishedMetrics()
    {
        PrometheusParser.Require();
        var dashboard = System.Text.Json.JsonDocument.Parse(File.ReadAllText(Path.Combine(TestEnvironment.RepoRoot, "deploy", "grafana", "natsbroker-dashboard.json")));
        var names = dashboard.RootElement.GetProperty("panels").EnumerateArray()
            .SelectMany(p => p.GetProperty("targets").EnumerateArray())
            .SelectMany(t => System.Text.RegularExpressions.Regex.Matches(t.GetProperty("expr").GetString()!, "(gnatsd|jetstream|natsbroker)_[a-z_]+").Select(m => m.Value))
            .Distinct().ToList();
        Assert.NotEmpty(names);
        var dir = Directory.CreateTempSubdirectory("natsbroker-metrics-");
        try
        {
            await using var broker = await MonitoredBroker.StartAsync(JetStreamOptions(dir.FullName));
            var families = PrometheusParser.Parse((await ScrapeAsync(broker, false)).Body, false);
            var unknown = names.Where(n => !families.ContainsKey(n)).ToList();
            Assert.True(unknown.Count == 0, $"the dashboard queries metrics /metrics does not publish: {string.Join(", ", unknown)}");
        }
        finally
        {
            dir.Delete(recursive: true);
        }
    }
}
