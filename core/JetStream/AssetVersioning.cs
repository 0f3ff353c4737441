using System.Globalization;
using NatsBroker.JetStream.Api;

namespace NatsBroker.JetStream;

/// <summary>
/// ADR-44 asset versioning (nats-server 2.12+ jetstream_versioning.go). Stream and consumer configs carry in their
/// <c>metadata</c> the API level a server needs to run them (<c>_nats.req.level</c>, stored with the config: set at
/// create and update, kept from the existing asset when an identical create is compared); responses that describe
/// one asset (create, update, info, consumer reset) add the answering server's <c>_nats.ver</c> and
/// <c>_nats.level</c>, which are never stored. Lists show the stored metadata only, as nats-server's do.
/// Keys are kept in ordinal order, the order Go's encoding/json writes a map in.
/// </summary>
internal static class AssetVersioning
{
    public const string RequiredLevelKey = "_nats.req.level";
    public const string ServerVersionKey = "_nats.ver";
    public const string ServerLevelKey = "_nats.level";

    /// <summary>nats-server setStaticStreamMetadata: the level the stream's features need (levels of 2.14).</summary>
    public static void SetStatic(StreamConfig cfg)
    {
        int level = 0;
        if (cfg.AllowMsgTtl || cfg.SubjectDeleteMarkerTtl > 0) level = Math.Max(level, 1); // TTLs, 2.11
        if (cfg.AllowMsgCounter == true) level = Math.Max(level, 2); // counters, 2.12
        if (cfg.AllowAtomic == true) level = Math.Max(level, 2); // atomic batches, 2.12
        if (cfg.AllowMsgSchedules == true) level = Math.Max(level, 2); // schedules, 2.12
        if (cfg.PersistMode == "async") level = Math.Max(level, 2); // async persist, 2.12
        if (cfg.AllowBatched == true) level = Math.Max(level, 4); // fast batches, 2.14
        cfg.Metadata = WithRequired(cfg.Metadata, level.ToString(CultureInfo.InvariantCulture));
    }

    /// <summary>nats-server setStaticConsumerMetadata.</summary>
    public static void SetStatic(ConsumerConfig cfg)
    {
        int level = 0;
        if (cfg.PauseUntil is { } p && p != default) level = Math.Max(level, 1); // pause, 2.11
        if (cfg.PriorityPolicy is not (null or "none") || cfg.PriorityTimeout is > 0 or < 0 || cfg.PriorityGroups is { Length: > 0 })
            level = Math.Max(level, 1); // priority groups, 2.11
        if (cfg.AckPolicy == AckPolicy.FlowControl) level = Math.Max(level, 4); // 2.14
        cfg.Metadata = WithRequired(cfg.Metadata, level.ToString(CultureInfo.InvariantCulture));
    }

    /// <summary>
    /// nats-server copyStreamMetadata: <paramref name="cfg"/> takes <paramref name="prev"/>'s required level (or
    /// none), so that comparing a create with the existing stream ignores versioning.
    /// </summary>
    public static void CopyStatic(StreamConfig cfg, StreamConfig prev) => cfg.Metadata = CopyRequired(cfg.Metadata, prev.Metadata);

    /// <summary>nats-server copyConsumerMetadata.</summary>
    public static void CopyStatic(ConsumerConfig cfg, ConsumerConfig prev) => cfg.Metadata = CopyRequired(cfg.Metadata, prev.Metadata);

    /// <summary>nats-server setDynamicStreamMetadata: a copy of the config whose metadata names this server.</summary>
    public static StreamConfig WithDynamic(StreamConfig cfg)
    {
        var copy = cfg.ShallowCopy();
        copy.Metadata = WithServer(cfg.Metadata);
        return copy;
    }

    /// <summary>nats-server setDynamicConsumerMetadata.</summary>
    public static ConsumerConfig WithDynamic(ConsumerConfig cfg)
    {
        var copy = cfg.ShallowCopy();
        copy.Metadata = WithServer(cfg.Metadata);
        return copy;
    }

    private static Dictionary<string, string> WithRequired(Dictionary<string, string>? metadata, string level)
    {
        var m = Static(metadata);
        m[RequiredLevelKey] = level;
        return Ordered(m);
    }

    private static Dictionary<string, string>? CopyRequired(Dictionary<string, string>? metadata, Dictionary<string, string>? prev)
    {
        var m = Static(metadata);
        if (prev is not null && prev.TryGetValue(RequiredLevelKey, out var level))
        {
            m[RequiredLevelKey] = level;
            return Ordered(m);
        }
        m.Remove(RequiredLevelKey);
        // setOrDeleteIn*Metadata: an emptied map is no map.
        return m.Count == 0 ? null : m;
    }

    private static Dictionary<string, string> WithServer(Dictionary<string, string>? metadata)
    {
        var m = new Dictionary<string, string>(metadata ?? [], StringComparer.Ordinal)
        {
            [ServerVersionKey] = Server.NatsServer.CompatibleVersion,
            [ServerLevelKey] = ApiLevel.Current.ToString(CultureInfo.InvariantCulture),
        };
        return Ordered(m);
    }

    /// <summary>A copy without the dynamic keys (nats-server deleteDynamicMetadata), in ordinal key order.</summary>
    private static Dictionary<string, string> Static(Dictionary<string, string>? metadata)
    {
        var m = Ordered(metadata);
        m.Remove(ServerVersionKey);
        m.Remove(ServerLevelKey);
        return m;
    }

    /// <summary>A copy in ordinal key order (a Dictionary that is only added to enumerates in insertion order).</summary>
    private static Dictionary<string, string> Ordered(Dictionary<string, string>? metadata)
    {
        var m = new Dictionary<string, string>(StringComparer.Ordinal);
        if (metadata is null) return m;
        foreach (var kv in metadata.OrderBy(kv => kv.Key, StringComparer.Ordinal)) m.Add(kv.Key, kv.Value);
        return m;
    }
}
