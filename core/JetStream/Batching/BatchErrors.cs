using NatsBroker.JetStream.Api;

namespace NatsBroker.JetStream.Batching;

/// <summary>
/// The errors of atomic and fast-ingest batch publishing, counters and schedules: code, err_code and description
/// as nats-server's server/errors.json (2.12–2.14; constant names kept in the member names).
/// </summary>
internal static class BatchErrors
{
    private static ApiError E(int code, int errCode, string description) => new() { Code = code, ErrCode = errCode, Description = description };

    public static ApiError AtomicPublishDisabled => E(400, 10174, "atomic publish is disabled");
    public static ApiError AtomicPublishMissingSeq => E(400, 10175, "atomic publish sequence is missing");
    public static ApiError AtomicPublishIncompleteBatch => E(400, 10176, "atomic publish batch is incomplete");
    public static ApiError AtomicPublishUnsupportedHeaderBatch(string header) => E(400, 10177, $"atomic publish unsupported header used: {header}");
    public static ApiError AtomicPublishInvalidBatchId => E(400, 10179, "atomic publish batch ID is invalid");
    public static ApiError AtomicPublishTooLargeBatch(int size) => E(400, 10199, $"atomic publish batch is too large: {size}");
    public static ApiError AtomicPublishInvalidBatchCommit => E(400, 10200, "atomic publish batch commit is invalid");
    public static ApiError AtomicPublishContainsDuplicateMessage => E(400, 10201, "atomic publish batch contains duplicate message id");
    public static ApiError AtomicPublishTooManyInflight => E(429, 10210, "atomic publish too many inflight");

    public static ApiError BatchPublishDisabled => E(400, 10205, "batch publish is disabled");
    public static ApiError BatchPublishInvalidPattern => E(400, 10206, "batch publish pattern is invalid");
    public static ApiError BatchPublishInvalidBatchId => E(400, 10207, "batch publish ID is invalid");
    public static ApiError BatchPublishUnknownBatchId => E(400, 10208, "batch publish ID unknown");
    public static ApiError BatchPublishTooManyInflight => E(429, 10211, "batch publish too many inflight");

    public static ApiError StreamWrongLastSequenceConstant => E(400, 10164, "wrong last sequence");
    public static ApiError StreamExpectedLastSeqPerSubjectInvalid => E(400, 10193, "missing sequence for expected last sequence per subject");

    public static ApiError MessageIncrDisabled => E(400, 10168, "message counters is disabled");
    public static ApiError MessageIncrMissing => E(400, 10169, "message counter increment is missing");
    public static ApiError MessageIncrPayload => E(400, 10170, "message counter has payload");
    public static ApiError MessageIncrInvalid => E(400, 10171, "message counter increment is invalid");
    public static ApiError MessageCounterBroken => E(400, 10172, "message counter is broken");
    // Mirrors copy their origin: they neither count, nor take batches (stream.go checkStreamCfg).
    public static ApiError MirrorWithCounters { get; } = E(400, 10173, "stream mirrors can not also calculate counters");
    public static ApiError MirrorWithAtomicPublish { get; } = E(400, 10198, "stream mirrors can not also use atomic publishing");
    public static ApiError MirrorWithBatchPublish { get; } = E(400, 10209, "stream mirrors can not also use batch publishing");
}
