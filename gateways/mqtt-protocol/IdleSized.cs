using System.Collections.Concurrent;

namespace NatsBroker.MqttGateway;

/// <summary>Per-session collections sized for the idle session most of them belong to.</summary>
internal static class IdleSized
{
    /// <summary>
    /// A concurrent dictionary with one lock stripe and one bucket to start with: most sessions never use most of
    /// their dictionaries (requests, durable bindings, collectors) after connecting, and the defaults (a stripe per
    /// core, 31 buckets) cost every idle session several hundred bytes each (heap dumps of 8,000 idle sessions).
    /// </summary>
    public static ConcurrentDictionary<TKey, TValue> Dictionary<TKey, TValue>(IEqualityComparer<TKey>? comparer = null)
        where TKey : notnull => new(concurrencyLevel: 1, capacity: 1, comparer);
}
