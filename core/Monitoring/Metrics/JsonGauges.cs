using System.Text;
using System.Text.Json;
using Prometheus;

namespace NatsBroker.Monitoring.Metrics;

/// <summary>
/// prometheus-nats-exporter's generic collector (collector/collector.go NATSCollector) over one monitoring
/// document: every top-level number becomes the gauge <c>{system}_{endpoint}_{key}{server_id}</c>, and the strings
/// server_id, server_name and version become <c>{system}_{endpoint}_{key}{server_id,value}</c> = 1. Nested objects
/// and arrays are not exported, as the exporter does not export them. Gauges are created the first time their key
/// appears, so a field the JSON gains later is exported without a code change here.
/// </summary>
internal sealed class JsonGauges(MetricFactory factory, string system, string endpoint)
{
    private static readonly HashSet<string> LabelKeys = new(StringComparer.Ordinal) { "server_id", "server_name", "version" };

    private readonly Dictionary<string, GaugeFamily> _families = new(StringComparer.Ordinal);

    public void Scrape(JsonElement document, string serverId)
    {
        foreach (var family in _families.Values) family.BeginScrape();
        foreach (var property in document.EnumerateObject())
        {
            switch (property.Value.ValueKind)
            {
                case JsonValueKind.Number:
                    Family(property.Name, labelled: false).Set(property.Value.GetDouble(), serverId);
                    break;
                case JsonValueKind.String when LabelKeys.Contains(property.Name):
                    Family(property.Name, labelled: true).Set(1, serverId, property.Value.GetString() ?? "");
                    break;
            }
        }
        foreach (var family in _families.Values) family.EndScrape();
    }

    private GaugeFamily Family(string key, bool labelled)
    {
        if (_families.TryGetValue(key, out var family)) return family;
        var name = $"{system}_{endpoint}_{Sanitize(key)}";
        family = labelled ? new GaugeFamily(factory, name, key, "server_id", "value") : new GaugeFamily(factory, name, key, "server_id");
        _families.Add(key, family);
        return family;
    }

    /// <summary>Metric names allow [a-zA-Z0-9_:]; the monitoring JSON's keys are snake_case already.</summary>
    private static string Sanitize(string key)
    {
        var sb = new StringBuilder(key.Length);
        foreach (var c in key) sb.Append(char.IsAsciiLetterOrDigit(c) || c == '_' ? c : '_');
        return sb.ToString();
    }
}
