using System.Text.Json.Serialization;

namespace NatsBroker.JetStream.Api;

// JSON shapes of the JetStream API (ADR-1; nats-server server/stream.go, consumer.go, jetstream_api.go).
// Names are snake_case through JsJsonContext's naming policy. Go's `omitempty` fields are nullable here and
// skipped when null; fields nats-server always writes are non-nullable. Durations are nanoseconds, as in Go.

/// <summary>An API error (nats-server ApiError): HTTP-like code, JetStream err_code, description.</summary>
public sealed class ApiError
{
    public int Code { get; set; }
    [JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingDefault)] public int ErrCode { get; set; }
    [JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] public string? Description { get; set; }
}

/// <summary>Any API response: nats-server writes "type" and, on failure, "error".</summary>
public class ApiResponse
{
    [JsonPropertyOrder(-10)] public string Type { get; set; } = "";
    [JsonPropertyOrder(-9)] public ApiError? Error { get; set; }
}

public sealed class ErrorResponse : ApiResponse;

public sealed class SubjectTransformConfig
{
    public string Src { get; set; } = "";
    public string Dest { get; set; } = "";
}

public sealed class StreamConsumerLimits
{
    public long? InactiveThreshold { get; set; }
    public int? MaxAckPending { get; set; }
}

public sealed class RePublishConfig
{
    public string Src { get; set; } = "";
    public string Dest { get; set; } = "";
    public bool? HeadersOnly { get; set; }
}

public sealed class Placement
{
    public string? Cluster { get; set; }
    public string[]? Tags { get; set; }
    public string? Preferred { get; set; }
}

/// <summary>nats-server ExternalStream: a source or mirror in another account or domain (api / deliver prefixes).</summary>
public sealed class ExternalStream
{
    public string Api { get; set; } = "";
    public string Deliver { get; set; } = "";
}

public sealed class StreamSourceConfig
{
    public string Name { get; set; } = "";
    public ulong? OptStartSeq { get; set; }
    public DateTime? OptStartTime { get; set; }
    public string? FilterSubject { get; set; }
    public SubjectTransformConfig[]? SubjectTransforms { get; set; }
    public ExternalStream? External { get; set; }
    /// <summary>2.14: a durable consumer on the origin to read through (name and deliver subject; config checks only).</summary>
    public StreamConsumerSource? Consumer { get; set; }
}

/// <summary>nats-server StreamConsumerSource (2.14): the origin's durable consumer a mirror or source reads through.</summary>
public sealed class StreamConsumerSource
{
    public string? Name { get; set; }
    public string? DeliverSubject { get; set; }
}

/// <summary>nats-server StreamSourceInfo: a mirror's or source's progress in STREAM.INFO.</summary>
public sealed class StreamSourceInfo
{
    public string Name { get; set; } = "";
    public ExternalStream? External { get; set; }
    public ulong Lag { get; set; }
    /// <summary>Nanoseconds since the source was last active; -1 when it never was.</summary>
    public long Active { get; set; }
    public ApiError? Error { get; set; }
    public string? FilterSubject { get; set; }
    public SubjectTransformConfig[]? SubjectTransforms { get; set; }
}

/// <summary>nats-server StreamConfig.</summary>
public sealed class StreamConfig
{
    public string Name { get; set; } = "";
    public string? Description { get; set; }
    public string[]? Subjects { get; set; }
    public RetentionPolicy Retention { get; set; }
    public int MaxConsumers { get; set; } = -1;
    public long MaxMsgs { get; set; } = -1;
    public long MaxBytes { get; set; } = -1;
    public long MaxAge { get; set; }
    public long MaxMsgsPerSubject { get; set; } = -1;
    public int MaxMsgSize { get; set; } = -1;
    public StreamDiscardPolicy Discard { get; set; }
    public StorageType Storage { get; set; }
    public int NumReplicas { get; set; } = 1;
    public bool? NoAck { get; set; }
    public string? TemplateOwner { get; set; }
    public long? DuplicateWindow { get; set; }
    public Placement? Placement { get; set; }
    public StreamSourceConfig? Mirror { get; set; }
    public StreamSourceConfig[]? Sources { get; set; }
    public string? Compression { get; set; }
    /// <summary>nats-server 2.12 persist_mode: null ("" or "default", omitted as Go's omitempty) or "async".</summary>
    public string? PersistMode { get; set; }
    public ulong? FirstSeq { get; set; }
    public SubjectTransformConfig? SubjectTransform { get; set; }
    public bool Sealed { get; set; }
    public bool DenyDelete { get; set; }
    public bool DenyPurge { get; set; }
    public bool AllowRollupHdrs { get; set; }
    public bool AllowDirect { get; set; }
    public bool MirrorDirect { get; set; }
    public RePublishConfig? Republish { get; set; }
    public bool? DiscardNewPerSubject { get; set; }
    /// <summary>nats-server 2.12 allow_atomic (atomic batch publish, ADR-50); null = false (omitempty).</summary>
    public bool? AllowAtomic { get; set; }
    /// <summary>nats-server 2.14 allow_batched (fast-ingest batch publish, ADR-50); null = false (omitempty).</summary>
    public bool? AllowBatched { get; set; }
    /// <summary>nats-server 2.12 allow_msg_counter (ADR-49 counters); null = false (omitempty).</summary>
    public bool? AllowMsgCounter { get; set; }
    /// <summary>nats-server 2.12 allow_msg_schedules (ADR-51 message schedules); null = false (omitempty).</summary>
    public bool? AllowMsgSchedules { get; set; }
    /// <summary>ADR-43 (2.11): per-message TTL through the Nats-TTL header.</summary>
    public bool AllowMsgTtl { get; set; }
    /// <summary>ADR-43 (2.11): nanoseconds a delete marker left by max-age expiry lives (0 = no markers).</summary>
    public long? SubjectDeleteMarkerTtl { get; set; }
    public Dictionary<string, string>? Metadata { get; set; }
    public StreamConsumerLimits ConsumerLimits { get; set; } = new();

    /// <summary>A member-wise copy (Go's <c>newCfg := *cfg</c>); nested objects are shared.</summary>
    internal StreamConfig ShallowCopy() => (StreamConfig)MemberwiseClone();
}

/// <summary>nats-server StreamState as the API shows it.</summary>
public sealed class StreamStateInfo
{
    public ulong Messages { get; set; }
    public ulong Bytes { get; set; }
    public ulong FirstSeq { get; set; }
    public DateTime FirstTs { get; set; }
    public ulong LastSeq { get; set; }
    public DateTime LastTs { get; set; }
    public ulong[]? Deleted { get; set; }
    public Dictionary<string, ulong>? Subjects { get; set; }
    public int? NumSubjects { get; set; }
    public long? NumDeleted { get; set; }
    public int ConsumerCount { get; set; }
}

public sealed class ClusterInfo
{
    public string? Name { get; set; }
    public string? Leader { get; set; }
}

public sealed class StreamInfoResponse : ApiResponse
{
    public StreamConfig? Config { get; set; }
    public DateTime? Created { get; set; }
    public StreamStateInfo? State { get; set; }
    public ClusterInfo? Cluster { get; set; }
    public StreamSourceInfo? Mirror { get; set; }
    public List<StreamSourceInfo>? Sources { get; set; }
    public DateTime? Ts { get; set; }
    public int? Total { get; set; }
    public int? Offset { get; set; }
    public int? Limit { get; set; }
    [JsonPropertyName("did_create")] public bool? DidCreate { get; set; }
}

/// <summary>One entry of STREAM.LIST (a StreamInfo without "type").</summary>
public sealed class StreamInfo
{
    public StreamConfig Config { get; set; } = new();
    public DateTime Created { get; set; }
    public StreamStateInfo State { get; set; } = new();
    public ClusterInfo? Cluster { get; set; }
    public StreamSourceInfo? Mirror { get; set; }
    public List<StreamSourceInfo>? Sources { get; set; }
    public DateTime? Ts { get; set; }
}

public sealed class StreamInfoRequest
{
    public string? SubjectsFilter { get; set; }
    public bool? DeletedDetails { get; set; }
    public int? Offset { get; set; }
}

public sealed class StreamNamesRequest
{
    public int? Offset { get; set; }
    public string? Subject { get; set; }
}

public sealed class StreamNamesResponse : ApiResponse
{
    public int Total { get; set; }
    public int Offset { get; set; }
    public int Limit { get; set; }
    /// <summary>Written as null when empty (Go's nil slice); the property carries JsonIgnore.Never for that.</summary>
    [System.Text.Json.Serialization.JsonIgnore(Condition = System.Text.Json.Serialization.JsonIgnoreCondition.Never)]
    public List<string>? Streams { get; set; }
}

public sealed class StreamListResponse : ApiResponse
{
    public int Total { get; set; }
    public int Offset { get; set; }
    public int Limit { get; set; }
    public List<StreamInfo> Streams { get; set; } = [];
    public string[]? Missing { get; set; }
}

public sealed class StreamDeleteResponse : ApiResponse
{
    public bool Success { get; set; }
}

public sealed class StreamPurgeRequest
{
    public string? Filter { get; set; }
    public ulong? Seq { get; set; }
    public ulong? Keep { get; set; }
}

public sealed class StreamPurgeResponse : ApiResponse
{
    public bool Success { get; set; }
    public ulong Purged { get; set; }
}

public sealed class MsgGetRequest
{
    public ulong? Seq { get; set; }
    public string? LastBySubj { get; set; }
    public string? NextBySubj { get; set; }
    /// <summary>DIRECT.GET's batch fields: STREAM.MSG.GET refuses them (jsMsgGetRequest).</summary>
    public int? Batch { get; set; }
    public int? MaxBytes { get; set; }
    /// <summary>The first message at or after this time.</summary>
    public DateTime? StartTime { get; set; }
    [System.Text.Json.Serialization.JsonPropertyName("no_hdr")] public bool? NoHdr { get; set; }
}

public sealed class StoredMsgInfo
{
    public string Subject { get; set; } = "";
    public ulong Seq { get; set; }
    public byte[]? Hdrs { get; set; }
    public byte[]? Data { get; set; }
    public DateTime Time { get; set; }
}

public sealed class MsgGetResponse : ApiResponse
{
    public StoredMsgInfo? Message { get; set; }
}

public sealed class MsgDeleteRequest
{
    public ulong Seq { get; set; }
    public bool? NoErase { get; set; }
}

public sealed class MsgDeleteResponse : ApiResponse
{
    public bool Success { get; set; }
}

/// <summary>nats-server ConsumerConfig.</summary>
public sealed class ConsumerConfig
{
    public string? DurableName { get; set; }
    public string? Name { get; set; }
    public string? Description { get; set; }
    public DeliverPolicy DeliverPolicy { get; set; }
    public ulong? OptStartSeq { get; set; }
    public DateTime? OptStartTime { get; set; }
    public AckPolicy AckPolicy { get; set; }
    public long? AckWait { get; set; }
    public int? MaxDeliver { get; set; }
    public long[]? Backoff { get; set; }
    public string? FilterSubject { get; set; }
    public string[]? FilterSubjects { get; set; }
    public ReplayPolicy ReplayPolicy { get; set; }
    public ulong? RateLimitBps { get; set; }
    public string? SampleFreq { get; set; }
    public int? MaxWaiting { get; set; }
    public int? MaxAckPending { get; set; }
    public bool? FlowControl { get; set; }
    public bool? HeadersOnly { get; set; }
    public int? MaxBatch { get; set; }
    public long? MaxExpires { get; set; }
    public int? MaxBytes { get; set; }
    public string? DeliverSubject { get; set; }
    public string? DeliverGroup { get; set; }
    public long? IdleHeartbeat { get; set; }
    public long? InactiveThreshold { get; set; }
    public int NumReplicas { get; set; }
    public bool? MemStorage { get; set; }
    /// <summary>2.11: no deliveries until this time (CONSUMER.PAUSE or the config).</summary>
    public DateTime? PauseUntil { get; set; }
    public Dictionary<string, string>? Metadata { get; set; }
    /// <summary>2.11 priority groups (ADR-42): the groups pull requests name; one pin per consumer today.</summary>
    public string[]? PriorityGroups { get; set; }
    /// <summary>"overflow", "pinned_client" or "prioritized" (2.12); "none" is normalised to absent (Go omitempty).</summary>
    public string? PriorityPolicy { get; set; }
    /// <summary>Nanoseconds a pinned client may go without a pull before it loses the pin (nats-server PinnedTTL).</summary>
    public long? PriorityTimeout { get; set; }

    /// <summary>A member-wise copy (Go's <c>newCfg := *cfg</c>); nested objects are shared.</summary>
    internal ConsumerConfig ShallowCopy() => (ConsumerConfig)MemberwiseClone();
}

public sealed class CreateConsumerRequest
{
    public string? StreamName { get; set; }
    public ConsumerConfig? Config { get; set; }
    public string? Action { get; set; }
    /// <summary>2.11+: refuse (10157) what the defaults would change instead of changing it.</summary>
    public bool? Pedantic { get; set; }
}

public sealed class SequenceInfo
{
    public ulong ConsumerSeq { get; set; }
    public ulong StreamSeq { get; set; }
    public DateTime? LastActive { get; set; }
}

public sealed class ConsumerInfo
{
    public string StreamName { get; set; } = "";
    public string Name { get; set; } = "";
    public DateTime Created { get; set; }
    public ConsumerConfig Config { get; set; } = new();
    public SequenceInfo Delivered { get; set; } = new();
    public SequenceInfo AckFloor { get; set; } = new();
    public int NumAckPending { get; set; }
    public int NumRedelivered { get; set; }
    public int NumWaiting { get; set; }
    public ulong NumPending { get; set; }
    public ClusterInfo? Cluster { get; set; }
    public bool? PushBound { get; set; }
    public bool? Paused { get; set; }
    /// <summary>Nanoseconds until the pause ends (while paused).</summary>
    public long? PauseRemaining { get; set; }
    public DateTime? Ts { get; set; }
    public List<PriorityGroupState>? PriorityGroups { get; set; }
}

/// <summary>nats-server PriorityGroupState: the group and who holds its pin (pinned_ts is the zero time when nobody does).</summary>
public sealed class PriorityGroupState
{
    public string Group { get; set; } = "";
    public string? PinnedClientId { get; set; }
    public DateTime PinnedTs { get; set; }
}

public sealed class ConsumerInfoResponse : ApiResponse
{
    public string? StreamName { get; set; }
    public string? Name { get; set; }
    public DateTime? Created { get; set; }
    public ConsumerConfig? Config { get; set; }
    public SequenceInfo? Delivered { get; set; }
    public SequenceInfo? AckFloor { get; set; }
    public int? NumAckPending { get; set; }
    public int? NumRedelivered { get; set; }
    public int? NumWaiting { get; set; }
    public ulong? NumPending { get; set; }
    public ClusterInfo? Cluster { get; set; }
    public bool? PushBound { get; set; }
    public bool? Paused { get; set; }
    public long? PauseRemaining { get; set; }
    public DateTime? Ts { get; set; }
    public List<PriorityGroupState>? PriorityGroups { get; set; }

    public static ConsumerInfoResponse From(string type, ConsumerInfo i) => new()
    {
        Type = type,
        StreamName = i.StreamName,
        Name = i.Name,
        Created = i.Created,
        Config = i.Config,
        Delivered = i.Delivered,
        AckFloor = i.AckFloor,
        NumAckPending = i.NumAckPending,
        NumRedelivered = i.NumRedelivered,
        NumWaiting = i.NumWaiting,
        NumPending = i.NumPending,
        Cluster = i.Cluster,
        PushBound = i.PushBound,
        Paused = i.Paused,
        PauseRemaining = i.PauseRemaining,
        Ts = i.Ts,
        PriorityGroups = i.PriorityGroups,
    };
}

public sealed class ConsumerNamesResponse : ApiResponse
{
    public int Total { get; set; }
    public int Offset { get; set; }
    public int Limit { get; set; }
    public List<string> Consumers { get; set; } = [];
}

public sealed class ConsumerListResponse : ApiResponse
{
    public int Total { get; set; }
    public int Offset { get; set; }
    public int Limit { get; set; }
    public List<ConsumerInfo> Consumers { get; set; } = [];
}

public sealed class ConsumerDeleteResponse : ApiResponse
{
    public bool Success { get; set; }
}

public sealed class OffsetRequest
{
    public int? Offset { get; set; }
}

/// <summary>A pull request body ($JS.API.CONSUMER.MSG.NEXT).</summary>
public sealed class NextRequest
{
    public int? Batch { get; set; }
    public long? Expires { get; set; }
    public bool? NoWait { get; set; }
    public int? MaxBytes { get; set; }
    public long? IdleHeartbeat { get; set; }
    // nats-server PriorityGroup, embedded in JSApiConsumerGetNextRequest (ADR-42).
    public string? Group { get; set; }
    public long? MinPending { get; set; }
    public long? MinAckPending { get; set; }
    public string? Id { get; set; }
    public int? Priority { get; set; }
}

public sealed class AccountLimits
{
    public long MaxMemory { get; set; } = -1;
    public long MaxStorage { get; set; } = -1;
    public int MaxStreams { get; set; } = -1;
    public int MaxConsumers { get; set; } = -1;
    public int MaxAckPending { get; set; } = -1;
    public long MemoryMaxStreamBytes { get; set; } = -1;
    public long StorageMaxStreamBytes { get; set; } = -1;
    public bool MaxBytesRequired { get; set; }
}

public sealed class ApiStats
{
    /// <summary>The API level this server implements (nats-server 2.11+ "level", always written).</summary>
    public int Level { get; set; } = ApiLevel.Current;
    public ulong Total { get; set; }
    public ulong Errors { get; set; }
}

public sealed class AccountInfoResponse : ApiResponse
{
    public ulong Memory { get; set; }
    public ulong Storage { get; set; }
    public long ReservedMemory { get; set; }
    public long ReservedStorage { get; set; }
    public int Streams { get; set; }
    public int Consumers { get; set; }
    public AccountLimits Limits { get; set; } = new();
    public string? Domain { get; set; }
    public ApiStats Api { get; set; } = new();
}

/// <summary>PubAck (nats-server JSPubAckResponse): an error alone, or stream/seq/duplicate.</summary>
public sealed class PubAckResponse
{
    public ApiError? Error { get; set; }
    public string? Stream { get; set; }
    public ulong? Seq { get; set; }
    public string? Domain { get; set; }
    public bool? Duplicate { get; set; }
}

/// <summary>What we persist per stream (meta.json beside the store): its config and creation time.</summary>
public sealed class StreamMeta
{
    public StreamConfig Config { get; set; } = new();
    public DateTime Created { get; set; }
}

/// <summary>What we persist per durable consumer (consumers/&lt;name&gt;.json).</summary>
public sealed class ConsumerMeta
{
    public string Name { get; set; } = "";
    public ConsumerConfig Config { get; set; } = new();
    public DateTime Created { get; set; }
}
