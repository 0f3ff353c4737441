using System.Text.Json.Serialization;

namespace NatsBroker.Subscriptions;

/// <summary>
/// A point-in-time view of a <see cref="SubList"/>, with the field meaning of nats-server's /subsz.
/// Match and hit counts are approximate under concurrency (see <see cref="SubList"/>).
/// </summary>
public sealed class SubListStats
{
    [JsonPropertyName("num_subscriptions")]
    public long NumSubscriptions { get; init; }

    /// <summary>Entries currently in the shared match cache.</summary>
    [JsonPropertyName("num_cache")]
    public long NumCache { get; init; }

    [JsonPropertyName("num_inserts")]
    public long NumInserts { get; init; }

    [JsonPropertyName("num_removes")]
    public long NumRemoves { get; init; }

    /// <summary>Calls that reached the shared SubList (L1 hits in a connection are not counted, as in nats-server).</summary>
    [JsonPropertyName("num_matches")]
    public long NumMatches { get; init; }

    /// <summary>Shared-cache hits divided by matches, 0..1.</summary>
    [JsonPropertyName("cache_hit_rate")]
    public double CacheHitRate { get; init; }

    /// <summary>Largest fan-out (plain subs + queue groups) among cached results.</summary>
    [JsonPropertyName("max_fanout")]
    public long MaxFanout { get; init; }

    /// <summary>Mean fan-out among cached results.</summary>
    [JsonPropertyName("avg_fanout")]
    public double AvgFanout { get; init; }
}
