using NatsBroker.JetStream.Api;

namespace NatsBroker.JetStream;

/// <summary>
/// The JetStream API errors we answer with: code, err_code and description exactly as nats-server's
/// server/errors.json (the constant names are kept in the member names for cross-reference).
/// </summary>
internal static class JsErrors
{
    private static ApiError E(int code, int errCode, string description) => new() { Code = code, ErrCode = errCode, Description = description };

    public static ApiError NotEnabled { get; } = E(503, 10076, "JetStream not enabled");
    public static ApiError BadRequest { get; } = E(400, 10003, "bad request");
    public static ApiError InvalidJson(string err) => E(400, 10025, $"invalid JSON: {err}");
    public static ApiError NotEmptyRequest { get; } = E(400, 10038, "expected an empty request payload");
    public static ApiError StreamNotFound { get; } = E(404, 10059, "stream not found");
    public static ApiError StreamNameExist { get; } = E(400, 10058, "stream name already in use with a different configuration");
    public static ApiError StreamMismatch { get; } = E(400, 10056, "stream name in subject does not match request");
    public static ApiError StreamSubjectOverlap { get; } = E(400, 10065, "subjects overlap with an existing stream");
    public static ApiError StreamInvalidConfig(string err) => E(500, 10052, err);
    public static ApiError StreamCreate(string err) => E(500, 10049, err);
    public static ApiError StreamUpdate(string err) => E(500, 10069, err);
    public static ApiError StreamGeneral(string err) => E(500, 10051, err);
    public static ApiError StreamReplicasNotSupported { get; } = E(500, 10074, "replicas > 1 not supported in non-clustered mode");
    public static ApiError StreamNameContainsPathSeparators { get; } = E(400, 10128, "Stream name can not contain path separators");
    public static ApiError StreamNotMatch { get; } = E(400, 10060, "expected stream does not match");
    public static ApiError StreamWrongLastSequence(ulong seq) => E(400, 10071, $"wrong last sequence: {seq}");
    public static ApiError StreamWrongLastMsgId(string id) => E(400, 10070, $"wrong last msg ID: {id}");
    public static ApiError StreamMessageExceedsMaximum { get; } = E(400, 10054, "message size exceeds maximum allowed");
    public static ApiError StreamHeaderExceedsMaximum { get; } = E(400, 10097, "header size exceeds maximum allowed of 64k");
    public static ApiError StreamStoreFailed(string err) => E(503, 10077, err);
    public static ApiError StreamSealed { get; } = E(400, 10109, "invalid operation on sealed stream");
    public static ApiError StreamPurgeFailed(string err) => E(500, 10110, err);
    public static ApiError StreamRollupFailed(string err) => E(500, 10111, err);
    public static ApiError StreamMsgDeleteFailed(string err) => E(500, 10057, err);
    public static ApiError StreamTooManyRequests { get; } = E(429, 10167, "too many requests");
    public static ApiError SequenceNotFound(ulong seq) => E(400, 10043, $"sequence {seq} not found");
    public static ApiError NoMessageFound { get; } = E(404, 10037, "no message found");
    public static ApiError MaximumStreamsLimit { get; } = E(400, 10027, "maximum number of streams reached");
    public static ApiError MaximumConsumersLimit { get; } = E(400, 10026, "maximum consumers limit reached");
    // Account JetStream and its limits (JsAccount.Limits.cs).
    public static ApiError NotEnabledForAccount { get; } = E(503, 10039, "JetStream not enabled for account");
    public static ApiError AccountResourcesExceeded { get; } = E(400, 10002, "resource limits exceeded for account");
    public static ApiError InsufficientResources { get; } = E(503, 10023, "insufficient resources");
    public static ApiError MemoryResourcesExceeded { get; } = E(500, 10028, "insufficient memory resources available");
    public static ApiError StorageResourcesExceeded { get; } = E(500, 10047, "insufficient storage resources available");
    public static ApiError StreamMaxBytesRequired { get; } = E(400, 10113, "account requires a stream config to have max bytes set");
    public static ApiError StreamMaxStreamBytesExceeded { get; } = E(400, 10122, "stream max bytes exceeds account limit max stream bytes");
    public static ApiError ConsumerMaxPendingAckExcess(int limit) => E(400, 10121, $"consumer max ack pending exceeds system limit of {limit}");

    public static ApiError MirrorMaxMessageSizeTooBig { get; } = E(400, 10030, "stream mirror must have max message size >= source");
    public static ApiError StreamInvalidExternalDeliverySubject(string prefix) => E(400, 10024, $"stream external delivery prefix {prefix} must not contain wildcards");
    public static ApiError StreamExternalDeliverPrefixOverlaps(string prefix, string subject) => E(400, 10022, $"stream external delivery prefix {prefix} overlaps with stream subject {subject}");
    public static ApiError StreamExternalApiOverlap(string prefix, string subject) => E(400, 10021, $"stream external api prefix {prefix} must not overlap with {subject}");
    public static ApiError SourceMaxMessageSizeTooBig { get; } = E(400, 10046, "stream source must have max message size >= target");
    public static ApiError MirrorWithSources { get; } = E(400, 10031, "stream mirrors can not also contain other sources");
    public static ApiError MirrorWithSubjects { get; } = E(400, 10034, "stream mirrors can not contain subjects");
    public static ApiError MirrorWithFirstSeq { get; } = E(400, 10143, "stream mirrors can not have first sequence configured");
    public static ApiError StreamMirrorNotUpdatable { get; } = E(400, 10055, "stream mirror configuration can not be updated");
    public static ApiError SourceDuplicateDetected { get; } = E(400, 10140, "duplicate source configuration detected");
    public static ApiError SourceInvalidStreamName { get; } = E(400, 10141, "sourced stream name is invalid");
    public static ApiError MirrorInvalidStreamName { get; } = E(400, 10142, "mirrored stream name is invalid");
    /// <summary>10157: pedantic mode refuses a value it would otherwise have changed (stream and consumer defaults).</summary>
    public static ApiError Pedantic(string err) => E(400, 10157, "pedantic mode: " + err);
    public static ApiError MirrorDurableConsumerCfgInvalid { get; } = E(400, 10213, "stream mirror consumer config is invalid");
    public static ApiError SourceDurableConsumerCfgInvalid { get; } = E(400, 10215, "stream source consumer config is invalid");
    public static ApiError SourceDurableConsumerDuplicateDetected { get; } = E(400, 10216, "duplicate stream source consumer detected");
    public static ApiError SourceMultipleFiltersNotAllowed { get; } = E(400, 10144, "source with multiple subject transforms cannot also have a single subject filter");
    public static ApiError SourceInvalidSubjectFilter(string err) => E(400, 10145, $"source transform source: {err}");
    public static ApiError SourceInvalidTransformDestination(string err) => E(400, 10146, $"source transform: {err}");
    public static ApiError SourceOverlappingSubjectFilters { get; } = E(400, 10147, "source filters can not overlap");
    public static ApiError MirrorMultipleFiltersNotAllowed { get; } = E(400, 10150, "mirror with multiple subject transforms cannot also have a single subject filter");
    public static ApiError MirrorInvalidSubjectFilter(string err) => E(400, 10151, $"mirror transform source: {err}");
    public static ApiError MirrorOverlappingSubjectFilters { get; } = E(400, 10152, "mirror subject filters can not overlap");
    public static ApiError MirrorInvalidTransformDestination(string err) => E(400, 10154, $"mirror transform: {err}");
    public static ApiError StreamTransformInvalidSource(string err) => E(400, 10155, $"stream transform source: {err}");
    public static ApiError StreamTransformInvalidDestination(string err) => E(400, 10156, $"stream transform: {err}");
    public static ApiError MessageTtlInvalid { get; } = E(400, 10165, "invalid per-message TTL");
    public static ApiError MessageTtlDisabled { get; } = E(400, 10166, "per-message TTL is disabled");
    /// <summary>2.11+: the request's Nats-Required-Api-Level is above this server's (jetstream_versioning.go).</summary>
    public static ApiError RequiredApiLevel { get; } = E(412, 10185, "JetStream minimum api level required");
    /// <summary>2.14 CONSUMER.RESET refused (consumer.go resetStartingSeqLocked's reasons).</summary>
    public static ApiError ConsumerInvalidReset(string err) => E(400, 10204, $"invalid reset: {err}");

    public static ApiError ConsumerNotFound { get; } = E(404, 10014, "consumer not found");
    public static ApiError ConsumerConfigRequired { get; } = E(400, 10078, "consumer config required");
    public static ApiError ConsumerCreate(string err) => E(500, 10012, err);
    public static ApiError ConsumerNameExist { get; } = E(400, 10013, "consumer name already in use");
    public static ApiError ConsumerAlreadyExists { get; } = E(400, 10148, "consumer already exists");
    public static ApiError ConsumerDoesNotExist { get; } = E(400, 10149, "consumer does not exist");
    public static ApiError ConsumerBadDurableName { get; } = E(400, 10103, "durable name can not contain '.', '*', '>'");
    public static ApiError ConsumerNameContainsPathSeparators { get; } = E(400, 10127, "Consumer name can not contain path separators");
    public static ApiError ConsumerDurableNameNotInSubject { get; } = E(400, 10016, "consumer expected to be durable but no durable name set in subject");
    public static ApiError ConsumerDurableNameNotMatchSubject { get; } = E(400, 10017, "consumer name in subject does not match durable name in request");
    public static ApiError ConsumerDurableNameNotSet { get; } = E(400, 10018, "consumer expected to be durable but a durable name was not set");
    public static ApiError ConsumerCreateFilterSubjectMismatch { get; } = E(400, 10131, "Consumer create request did not match filtered subject from create subject");
    public static ApiError ConsumerCreateDurableAndNameMismatch { get; } = E(400, 10132, "Consumer Durable and Name have to be equal if both are provided");
    public static ApiError ConsumerDuplicateFilterSubjects { get; } = E(400, 10136, "consumer cannot have both FilterSubject and FilterSubjects specified");
    public static ApiError ConsumerMultipleFiltersNotAllowed { get; } = E(400, 10137, "consumer with multiple subject filters cannot use subject based API");
    public static ApiError ConsumerOverlappingSubjectFilters { get; } = E(400, 10138, "consumer subject filters cannot overlap");
    public static ApiError ConsumerEmptyFilter { get; } = E(400, 10139, "consumer filter in FilterSubjects cannot be empty");
    public static ApiError ConsumerDeliverToWildcards { get; } = E(400, 10079, "consumer deliver subject has wildcards");
    public static ApiError ConsumerPushMaxWaiting { get; } = E(400, 10080, "consumer in push mode can not set max waiting");
    public static ApiError ConsumerMaxPendingAckPolicyRequired { get; } = E(400, 10082, "consumer requires ack policy for max ack pending");
    public static ApiError ConsumerSmallHeartbeat { get; } = E(400, 10083, "consumer idle heartbeat needs to be >= 100ms");
    public static ApiError ConsumerPullRequiresAck { get; } = E(400, 10084, "consumer in pull mode requires explicit ack policy on workqueue stream");
    public static ApiError ConsumerMaxWaitingNegative { get; } = E(400, 10087, "consumer max waiting needs to be positive");
    public static ApiError ConsumerPullWithRateLimit { get; } = E(400, 10086, "consumer in pull mode can not have rate limit set");
    public static ApiError ConsumerFcRequiresPush { get; } = E(400, 10089, "consumer flow control requires a push based consumer");
    public static ApiError ConsumerWithFlowControlNeedsHeartbeats { get; } = E(400, 10108, "consumer with flow control also needs heartbeats");
    public static ApiError ConsumerInvalidPolicy(string err) => E(400, 10094, err);
    public static ApiError ConsumerWqRequiresExplicitAck { get; } = E(400, 10098, "workqueue stream requires explicit ack");
    public static ApiError ConsumerWqMultipleUnfiltered { get; } = E(400, 10099, "multiple non-filtered consumers not allowed on workqueue stream");
    public static ApiError ConsumerWqConsumerNotUnique { get; } = E(400, 10100, "filtered consumer not unique on workqueue stream");
    public static ApiError ConsumerWqConsumerNotDeliverAll { get; } = E(400, 10101, "consumer must be deliver all on workqueue stream");
    public static ApiError ConsumerInvalidDeliverSubject { get; } = E(400, 10112, "invalid push consumer deliver subject");
    public static ApiError ConsumerMaxDeliverBackoff { get; } = E(400, 10116, "max deliver is required to be > length of backoff values");
    public static ApiError ConsumerStoreFailed(string err) => E(500, 10104, $"error creating store for consumer: {err}");
    public static ApiError ConsumerExistingActive { get; } = E(400, 10105, "consumer already exists and is still active");
    public static ApiError ConsumerNameTooLong(int max) => E(400, 10102, $"consumer name is too long, maximum allowed is {max}");
    public static ApiError ConsumerInvalidSampling(string value) => E(400, 10095, $"failed to parse consumer sampling configuration: strconv.Atoi: parsing \"{value.TrimEnd('%')}\": invalid syntax");
    public static ApiError ConsumerMaxRequestBatchNegative { get; } = E(400, 10114, "consumer max request batch needs to be > 0");
    // 2.10-2.14 consumer config refusals (consumer.go checkConsumerCfg, jetstream_api.go jsConsumerCreateRequest).
    public static ApiError ConsumerEphemeralWithDurableName { get; } = E(400, 10020, "consumer expected to be ephemeral but a durable name was set in request");
    public static ApiError ConsumerDeliverCycle { get; } = E(400, 10081, "consumer deliver subject forms a cycle");
    public static ApiError ConsumerHbRequiresPush { get; } = E(400, 10088, "consumer idle heartbeat requires a push based consumer");
    public static ApiError ConsumerDescriptionTooLong(int max) => E(400, 10107, $"consumer description is too long, maximum allowed is {max}");
    public static ApiError ConsumerMaxRequestExpiresTooSmall { get; } = E(400, 10115, "consumer max request expires needs to be >= 1ms");
    public static ApiError ConsumerReplicasExceedsStream { get; } = E(400, 10126, "consumer config replica count exceeds parent stream");
    public static ApiError ReplicasCountCannotBeNegative { get; } = E(400, 10133, "replicas count cannot be negative");
    public static ApiError ConsumerReplicasShouldMatchStream { get; } = E(400, 10134, "consumer config replicas must match interest retention stream's replicas");
    public static ApiError ConsumerMetadataLength(string limit) => E(400, 10135, $"consumer metadata exceeds maximum size of {limit}");
    public static ApiError ConsumerInactiveThresholdExcess(string limit) => E(400, 10153, $"consumer inactive threshold exceeds system limit of {limit}");
    public static ApiError ConsumerAckPolicyInvalid { get; } = E(400, 10181, "consumer ack policy invalid");
    public static ApiError ConsumerAckWaitNegative { get; } = E(400, 10183, "consumer ack wait needs to be positive");
    public static ApiError ConsumerBackOffNegative { get; } = E(400, 10184, "consumer backoff needs to be positive");
    public static ApiError ConsumerAckFcRequiresPush { get; } = E(400, 10218, "flow control ack policy requires a push based consumer");
    public static ApiError ConsumerAckFcRequiresFc { get; } = E(400, 10219, "flow control ack policy requires flow control");
    public static ApiError ConsumerAckFcRequiresMaxAckPending { get; } = E(400, 10220, "flow control ack policy requires max ack pending");
    public static ApiError ConsumerAckFcRequiresNoAckWait { get; } = E(400, 10221, "flow control ack policy requires unset ack wait");
    public static ApiError ConsumerAckFcRequiresNoMaxDeliver { get; } = E(400, 10222, "flow control ack policy requires unset max deliver");
    /// <summary>Cluster-only APIs on a server without clustering (jsStreamLeaderStepDownRequest and the like).</summary>
    public static ApiError ClusterRequired { get; } = E(503, 10010, "JetStream clustering support required");
}
