using NatsBroker.Configuration;

namespace NatsBroker.JetStream.Batching;

/// <summary>
/// The batch publish limits in force (ADR-50): nats-server stream.go's streamDefaultMax* values, each replaced by
/// the matching <c>jetstream { limits { batch { ... } } }</c> key when that is above 0 (opts.go
/// parseJetStreamLimitsBatch; stream.go processJetStreamAtomicBatchMsg / processJetStreamFastBatchMsg read them at
/// every new batch with the same <c>&gt; 0</c> test). The inflight keys apply to atomic and fast batches alike; the
/// size limit only to atomic ones (fast batches have none).
/// </summary>
internal static class BatchLimits
{
    /// <summary>nats-server streamDefaultMaxAtomicBatchInflightPerStream.</summary>
    public const int DefaultAtomicInflightPerStream = 50;
    /// <summary>nats-server streamDefaultMaxAtomicBatchInflightTotal.</summary>
    public const int DefaultAtomicInflightTotal = 1_000;
    /// <summary>nats-server streamDefaultMaxAtomicBatchSize.</summary>
    public const int DefaultAtomicBatchSize = 1_000;
    /// <summary>nats-server streamDefaultMaxFastBatchInflightPerStream.</summary>
    public const int DefaultFastInflightPerStream = 1_000;
    /// <summary>nats-server streamDefaultMaxFastBatchInflightTotal.</summary>
    public const int DefaultFastInflightTotal = 50_000;

    public static int AtomicInflightPerStream(ServerOptions o) => Or(o.JetStreamBatchMaxInflightPerStream, DefaultAtomicInflightPerStream);
    public static int AtomicInflightTotal(ServerOptions o) => Or(o.JetStreamBatchMaxInflightTotal, DefaultAtomicInflightTotal);
    public static int AtomicBatchSize(ServerOptions o) => Or(o.JetStreamBatchMaxMsgs, DefaultAtomicBatchSize);
    public static int FastInflightPerStream(ServerOptions o) => Or(o.JetStreamBatchMaxInflightPerStream, DefaultFastInflightPerStream);
    public static int FastInflightTotal(ServerOptions o) => Or(o.JetStreamBatchMaxInflightTotal, DefaultFastInflightTotal);

    private static int Or(int configured, int fallback) => configured > 0 ? configured : fallback;
}
