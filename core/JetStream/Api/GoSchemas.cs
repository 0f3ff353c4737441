namespace NatsBroker.JetStream.Api;

/// <summary>
/// nats-server 2.14.5's request structs as encoding/json sees them (server/stream.go StreamConfig and its parts,
/// consumer.go ConsumerConfig / CreateConsumerRequest, jetstream_api.go JSApi*Request): every field Go knows, so
/// strict decoding refuses exactly the fields nats-server refuses, with Go's type names for the messages.
/// </summary>
internal static class GoSchemas
{
    private static GoType Prim(GoKind kind, string name, int bits = 64) => new() { Kind = kind, Name = name, Bits = bits };

    private static readonly GoType Str = Prim(GoKind.String, "string");
    private static readonly GoType Bool = Prim(GoKind.Bool, "bool");
    private static readonly GoType Int = Prim(GoKind.Int, "int");
    private static readonly GoType Int32 = Prim(GoKind.Int, "int32", 32);
    private static readonly GoType Int64 = Prim(GoKind.Int, "int64");
    private static readonly GoType Uint64 = Prim(GoKind.Uint, "uint64");
    private static readonly GoType Duration = Prim(GoKind.Int, "time.Duration");
    private static readonly GoType Strings = new() { Kind = GoKind.Slice, Name = "[]string", Elem = Str };
    private static readonly GoType Durations = new() { Kind = GoKind.Slice, Name = "[]time.Duration", Elem = Duration };
    private static readonly GoType StringMap = new() { Kind = GoKind.Map, Name = "map[string]string", Elem = Str };
    private static readonly GoType Time = new() { Kind = GoKind.Any, Name = "time.Time", Custom = GoTimeText.UnmarshalJson };

    /// <summary>store.go's policy enums: the quoted JSON text must be one of theirs ("can not unmarshal %q").</summary>
    private static GoType Enum(string name, bool lower, params string[] quoted) => new()
    {
        Kind = GoKind.Any,
        Name = name,
        Custom = raw => Array.IndexOf(quoted, lower ? raw.ToLowerInvariant() : raw) >= 0 ? null : "can not unmarshal " + GoJson.GoQuote(raw),
    };

    /// <summary>filestore.go StoreCompression.UnmarshalJSON: a JSON string "s2" or "none".</summary>
    private static readonly GoType Compression = new()
    {
        Kind = GoKind.Any,
        Name = "server.StoreCompression",
        Custom = raw =>
        {
            if (raw == "null") return "unknown compression algorithm";
            if (raw.Length == 0 || raw[0] != '"') return $"json: cannot unmarshal {RawKind(raw)} into Go value of type string";
            using var doc = System.Text.Json.JsonDocument.Parse(raw);
            return doc.RootElement.GetString() is "s2" or "none" ? null : "unknown compression algorithm";
        },
    };

    private static string RawKind(string raw) => raw[0] switch
    {
        '{' => "object",
        '[' => "array",
        't' or 'f' => "bool",
        _ => "number",
    };

    private static GoType StructType(string name, params GoField[] fields)
    {
        var t = new GoType { Kind = GoKind.Struct, Name = "server." + name };
        t.Struct = new GoStruct(name, fields);
        return t;
    }

    private static GoField F(string json, GoType type) => new(json, [json], type);

    /// <summary>The fields of an embedded struct promoted into the outer one (the embedded name leads Go's path).</summary>
    private static IEnumerable<GoField> Embed(string embeddedName, GoType embedded) =>
        embedded.Struct!.Fields.Select(f => f with { Path = [embeddedName, .. f.Path] });

    private static readonly GoType SubjectTransform = StructType("SubjectTransformConfig", F("src", Str), F("dest", Str));
    private static readonly GoType External = StructType("ExternalStream", F("api", Str), F("deliver", Str));
    private static readonly GoType StreamSource = StructType("StreamSource",
        F("name", Str), F("opt_start_seq", Uint64), F("opt_start_time", Time), F("filter_subject", Str),
        F("subject_transforms", new GoType { Kind = GoKind.Slice, Name = "[]server.SubjectTransformConfig", Elem = SubjectTransform }),
        F("external", External),
        F("consumer", StructType("StreamConsumerSource", F("name", Str), F("deliver_subject", Str))));
    private static readonly GoType Placement = StructType("Placement", F("cluster", Str), F("tags", Strings), F("preferred", Str));

    /// <summary>stream.go StreamConfig (2.14.5).</summary>
    public static readonly GoType StreamConfig = StructType("StreamConfig",
        F("name", Str), F("description", Str), F("subjects", Strings),
        F("retention", Enum("server.RetentionPolicy", false, "\"limits\"", "\"interest\"", "\"workqueue\"")),
        F("max_consumers", Int), F("max_msgs", Int64), F("max_bytes", Int64), F("max_age", Duration),
        F("max_msgs_per_subject", Int64), F("max_msg_size", Int32),
        F("discard", Enum("server.DiscardPolicy", true, "\"old\"", "\"new\"")),
        F("storage", Enum("server.StorageType", false, "\"memory\"", "\"file\"")),
        F("num_replicas", Int), F("no_ack", Bool), F("duplicate_window", Duration), F("placement", Placement),
        F("mirror", StreamSource),
        F("sources", new GoType { Kind = GoKind.Slice, Name = "[]*server.StreamSource", Elem = StreamSource }),
        F("compression", Compression), F("first_seq", Uint64), F("subject_transform", SubjectTransform),
        F("republish", StructType("RePublish", F("src", Str), F("dest", Str), F("headers_only", Bool))),
        F("allow_direct", Bool), F("mirror_direct", Bool), F("discard_new_per_subject", Bool), F("sealed", Bool),
        F("deny_delete", Bool), F("deny_purge", Bool), F("allow_rollup_hdrs", Bool),
        F("consumer_limits", StructType("StreamConsumerLimits", F("inactive_threshold", Duration), F("max_ack_pending", Int))),
        F("allow_msg_ttl", Bool), F("subject_delete_marker_ttl", Duration), F("allow_msg_counter", Bool),
        F("allow_atomic", Bool), F("allow_msg_schedules", Bool),
        F("persist_mode", Enum("server.PersistModeType", false, "\"default\"", "\"\"", "\"async\"")),
        F("allow_batched", Bool), F("metadata", StringMap));

    /// <summary>stream.go StreamConfigRequest: StreamConfig embedded, plus pedantic (STREAM.CREATE / UPDATE).</summary>
    public static readonly GoType StreamConfigRequest = StructType("StreamConfigRequest",
        [.. Embed("StreamConfig", StreamConfig), F("pedantic", Bool)]);

    /// <summary>consumer.go ConsumerConfig (2.14.5).</summary>
    public static readonly GoType ConsumerConfig = StructType("ConsumerConfig",
        F("durable_name", Str), F("name", Str), F("description", Str),
        F("deliver_policy", Enum("server.DeliverPolicy", false, "\"all\"", "\"undefined\"", "\"last\"", "\"last_per_subject\"", "\"new\"", "\"by_start_sequence\"", "\"by_start_time\"")),
        F("opt_start_seq", Uint64), F("opt_start_time", Time),
        F("ack_policy", Enum("server.AckPolicy", false, "\"none\"", "\"all\"", "\"explicit\"", "\"flow_control\"")),
        F("ack_wait", Duration), F("max_deliver", Int), F("backoff", Durations), F("filter_subject", Str),
        F("filter_subjects", Strings),
        F("replay_policy", Enum("server.ReplayPolicy", false, "\"instant\"", "\"original\"")),
        F("rate_limit_bps", Uint64), F("sample_freq", Str), F("max_waiting", Int), F("max_ack_pending", Int),
        F("flow_control", Bool), F("headers_only", Bool), F("max_batch", Int), F("max_expires", Duration),
        F("max_bytes", Int), F("deliver_subject", Str), F("deliver_group", Str), F("idle_heartbeat", Duration),
        F("inactive_threshold", Duration), F("num_replicas", Int), F("mem_storage", Bool), F("direct", Bool),
        F("sourcing", Bool), F("metadata", StringMap), F("pause_until", Time), F("priority_groups", Strings),
        F("priority_policy", new GoType
        {
            Kind = GoKind.Any,
            Name = "server.PriorityPolicy",
            Custom = raw => raw is "\"overflow\"" or "\"pinned_client\"" or "\"prioritized\"" or "\"none\"" ? null : "unknown priority policy: " + raw,
        }),
        F("priority_timeout", Duration));

    /// <summary>consumer.go CreateConsumerRequest.</summary>
    public static readonly GoType CreateConsumerRequest = StructType("CreateConsumerRequest",
        F("stream_name", Str), F("config", ConsumerConfig),
        F("action", new GoType
        {
            Kind = GoKind.Any,
            Name = "server.ConsumerAction",
            Custom = raw => raw is "\"create\"" or "\"update\"" or "\"\"" ? null : "unknown consumer action: " + raw,
        }),
        F("pedantic", Bool));

    private static readonly GoType Paged = StructType("ApiPagedRequest", F("offset", Int));

    public static readonly GoType StreamInfoRequest = StructType("JSApiStreamInfoRequest",
        [.. Embed("ApiPagedRequest", Paged), F("deleted_details", Bool), F("subjects_filter", Str)]);
    public static readonly GoType StreamNamesRequest = StructType("JSApiStreamNamesRequest", [.. Embed("ApiPagedRequest", Paged), F("subject", Str)]);
    public static readonly GoType StreamListRequest = StructType("JSApiStreamListRequest", [.. Embed("ApiPagedRequest", Paged), F("subject", Str)]);
    public static readonly GoType ConsumersRequest = StructType("JSApiConsumersRequest", [.. Embed("ApiPagedRequest", Paged)]);
    public static readonly GoType StreamPurgeRequest = StructType("JSApiStreamPurgeRequest", F("seq", Uint64), F("filter", Str), F("keep", Uint64));
    public static readonly GoType MsgGetRequest = StructType("JSApiMsgGetRequest",
        F("seq", Uint64), F("last_by_subj", Str), F("next_by_subj", Str), F("batch", Int), F("max_bytes", Int),
        F("start_time", Time), F("multi_last", Strings), F("up_to_seq", Uint64), F("up_to_time", Time), F("no_hdr", Bool));
    public static readonly GoType MsgDeleteRequest = StructType("JSApiMsgDeleteRequest", F("seq", Uint64), F("no_erase", Bool));
    /// <summary>jetstream_api.go JSApiConsumerPauseRequest (unmarshalRequest, only for a body that is a JSON object or array).</summary>
    public static readonly GoType ConsumerPauseRequest = StructType("JSApiConsumerPauseRequest", F("pause_until", Time));
    /// <summary>JSApiConsumerUnpinRequest (plain json.Unmarshal: unknown fields ignored).</summary>
    public static readonly GoType ConsumerUnpinRequest = StructType("JSApiConsumerUnpinRequest", F("group", Str));
    /// <summary>JSApiConsumerResetRequest (consumer.go processResetReq: plain json.Unmarshal of a non-empty body).</summary>
    public static readonly GoType ConsumerResetRequest = StructType("JSApiConsumerResetRequest", F("seq", Uint64));
    public static readonly GoType StreamSnapshotRequest = StructType("JSApiStreamSnapshotRequest",
        F("deliver_subject", Str), F("no_consumers", Bool), F("chunk_size", Int), F("window_size", Int), F("jsck", Bool));

    private static readonly GoType Uint64s = new() { Kind = GoKind.Slice, Name = "[]uint64", Elem = Uint64 };

    /// <summary>store.go StreamState, as a restore request carries it.</summary>
    private static readonly GoType StreamState = StructType("StreamState",
        F("messages", Uint64), F("bytes", Uint64), F("first_seq", Uint64), F("first_ts", Time), F("last_seq", Uint64),
        F("last_ts", Time), F("num_subjects", Int), F("subjects", new GoType { Kind = GoKind.Map, Name = "map[string]uint64", Elem = Uint64 }),
        F("num_deleted", Int), F("deleted", Uint64s), F("lost", StructType("LostStreamData", F("msgs", Uint64s), F("bytes", Uint64))),
        F("consumer_count", Int));

    /// <summary>JSApiStreamRestoreRequest: a plain StreamConfig (no pedantic) and the state.</summary>
    public static readonly GoType StreamRestoreRequest = StructType("JSApiStreamRestoreRequest", F("config", StreamConfig), F("state", StreamState));

    public static readonly GoType StreamRemovePeerRequest = StructType("JSApiStreamRemovePeerRequest", F("peer", Str));
    public static readonly GoType LeaderStepdownRequest = StructType("JSApiLeaderStepdownRequest", F("placement", Placement));
}
