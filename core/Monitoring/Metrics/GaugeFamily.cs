using Prometheus;

namespace NatsBroker.Monitoring.Metrics;

/// <summary>
/// One gauge family whose label sets are rebuilt on every scrape: a label set not set during a scrape (a closed
/// connection's gateway, a deleted stream or consumer) is removed, so a series disappears with what it measured
/// instead of repeating its last value. Not thread-safe: <see cref="MetricsExporter"/> runs one scrape at a time.
/// </summary>
internal sealed class GaugeFamily
{
    private readonly Gauge _gauge;
    private readonly Dictionary<string, string[]> _published = new(StringComparer.Ordinal);
    private readonly HashSet<string> _seen = new(StringComparer.Ordinal);

    public GaugeFamily(MetricFactory factory, string name, string help, params string[] labelNames)
    {
        _gauge = factory.CreateGauge(name, help, labelNames);
    }

    public void BeginScrape() => _seen.Clear();

    public void Set(double value, params string[] labels)
    {
        var key = string.Join('\u0001', labels);
        _seen.Add(key);
        _published.TryAdd(key, labels);
        _gauge.WithLabels(labels).Set(value);
    }

    public void EndScrape()
    {
        if (_seen.Count == _published.Count) return;
        List<string>? stale = null;
        foreach (var key in _published.Keys)
        {
            if (!_seen.Contains(key)) (stale ??= []).Add(key);
        }
        if (stale is null) return;
        foreach (var key in stale)
        {
            _gauge.RemoveLabelled(_published[key]);
            _published.Remove(key);
        }
    }
}
