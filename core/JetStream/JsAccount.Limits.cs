using NatsBroker.Configuration;
using NatsBroker.JetStream.Api;

namespace NatsBroker.JetStream;

// An account's JetStream limits and storage usage (nats-server jetstream.go JetStreamAccountLimits, jsAccount usage,
// checkAllLimits / checkBytesLimits, jsNonClusteredStreamLimitsCheck, wouldExceedLimits; stream.go checkStreamCfg's
// max bytes checks; consumer.go's account max_consumers and max_ack_pending).
internal sealed partial class JsAccount
{
    /// <summary>Bytes stored by this account's memory / file streams as last synced (<see cref="SyncUsage"/>).</summary>
    private long _memUsed, _storeUsed;

    /// <summary>The limits now: an account JWT update may change them while the server runs.</summary>
    public JetStreamAccountLimits Limits => Service.LimitsOf(Account) ?? JetStreamAccountLimits.Dynamic;

    public long MemoryUsed => Math.Max(0, Interlocked.Read(ref _memUsed));
    public long StoreUsed => Math.Max(0, Interlocked.Read(ref _storeUsed));

    /// <summary>
    /// Whether a store of this kind has a finite limit (this account's or the server's max_memory_store /
    /// max_file_store): only then does ingest keep the usage exact after every stored message.
    /// </summary>
    public bool IsLimited(bool memory)
    {
        var l = Limits;
        return memory ? l.MaxMemory >= 0 || Options.JetStreamMaxMemory >= 0 : l.MaxStore >= 0 || Options.JetStreamMaxStore >= 0;
    }

    /// <summary>
    /// The check before a message whose stored size (IStreamStore.StoredSize) is <paramref name="size"/> is stored
    /// (processJetStreamMsg): the server over
    /// its max_*_store → 10023; this account's usage plus the message over its limit → 10002. Null = store it.
    /// Reads two counters: no allocation, no lock.
    /// </summary>
    public ApiError? CheckIngest(bool memory, long size)
    {
        var l = Limits;
        long serverMax = memory ? Options.JetStreamMaxMemory : Options.JetStreamMaxStore;
        if (serverMax >= 0 && Service.Used(memory) > serverMax) return JsErrors.InsufficientResources;
        long max = memory ? l.MaxMemory : l.MaxStore;
        if (max >= 0 && (memory ? MemoryUsed : StoreUsed) + size > max) return JsErrors.AccountResourcesExceeded;
        return null;
    }

    /// <summary>
    /// Brings the account's usage up to a stream's stored bytes now (after a store, purge or message delete, and
    /// once a second for all streams: age, acks and discard-old removals happen inside the store). A race between
    /// two syncs of one stream can leave the older reading; the next sync corrects it.
    /// </summary>
    public void SyncUsage(JsStream stream)
    {
        long now = stream.IsDeleted ? 0 : (long)stream.Store.GetState().Bytes;
        long before = stream.ExchangeAccountedBytes(now);
        if (now != before) Interlocked.Add(ref stream.Config.Storage == StorageType.Memory ? ref _memUsed : ref _storeUsed, now - before);
        // A delete that ran between the read and the exchange has already taken the stream out: take it out again.
        if (now != 0 && stream.IsDeleted) ForgetUsage(stream);
    }

    /// <summary>
    /// Syncs every stream of a kind that has a limit (the server's usage timer); an unlimited account costs nothing
    /// (its figures are then only those of its last syncs, and become exact within a second once it gets a limit).
    /// </summary>
    public void SyncAllUsage()
    {
        bool memory = IsLimited(memory: true), file = IsLimited(memory: false);
        if (!memory && !file) return;
        foreach (var s in _snapshot)
        {
            if (!s.IsDeleted && (s.Config.Storage == StorageType.Memory ? memory : file)) SyncUsage(s);
        }
    }

    /// <summary>Takes a deleted stream's bytes out of the usage.</summary>
    private void ForgetUsage(JsStream stream)
    {
        long before = stream.ExchangeAccountedBytes(0);
        if (before != 0) Interlocked.Add(ref stream.Config.Storage == StorageType.Memory ? ref _memUsed : ref _storeUsed, -before);
    }

    /// <summary>Bytes the account's streams other than <paramref name="except"/> reserve with max_bytes (tieredReservation).</summary>
    public (long Memory, long Store) Reserved(string? except = null)
    {
        long mem = 0, store = 0;
        foreach (var s in _snapshot)
        {
            var c = s.Config;
            if (s.Name == except || c.MaxBytes <= 0) continue;
            if (c.Storage == StorageType.Memory) mem += c.MaxBytes;
            else store += c.MaxBytes;
        }
        return (mem, store);
    }

    /// <summary>Stream create under the account lock: max_streams, then the byte limits (jsNonClusteredStreamLimitsCheck).</summary>
    private ApiError? CheckStreamLimitsLocked(StreamConfig config)
    {
        var l = Limits;
        if (l.MaxStreams > 0 && _streams.Count >= l.MaxStreams) return JsErrors.MaximumStreamsLimit;
        return CheckStreamConfigLimits(config);
    }

    /// <summary>
    /// What a stream's config may ask of the account and the server (create and update): max_consumers above the
    /// account's (10026), max_bytes beyond what the account / server has left to reserve (10028 / 10047: a stream
    /// without max_bytes reserves 1 byte), then checkStreamCfg's max_bytes_required (10113) and the account's
    /// per-stream maximum (10122).
    /// </summary>
    public ApiError? CheckStreamConfigLimits(StreamConfig config)
    {
        var l = Limits;
        if (config.MaxConsumers > 0 && l.MaxConsumers > 0 && config.MaxConsumers > l.MaxConsumers) return JsErrors.MaximumConsumersLimit;
        bool memory = config.Storage == StorageType.Memory;
        long add = config.MaxBytes < 0 ? 1 : config.MaxBytes;
        var (mem, store) = Reserved(except: config.Name);
        long reserved = memory ? mem : store;
        long max = memory ? l.MaxMemory : l.MaxStore;
        var exceeded = memory ? JsErrors.MemoryResourcesExceeded : JsErrors.StorageResourcesExceeded;
        if (max >= 0 && (reserved > max || add > max - reserved)) return exceeded;
        long serverMax = memory ? Options.JetStreamMaxMemory : Options.JetStreamMaxStore;
        long serverReserved = Service.Reserved(memory, this, config.Name);
        if (serverMax >= 0 && (serverReserved > serverMax || add > serverMax - serverReserved)) return exceeded;
        if (l.MaxBytesRequired && config.MaxBytes <= 0) return JsErrors.StreamMaxBytesRequired;
        long streamMax = memory ? l.MemoryMaxStreamBytes : l.StoreMaxStreamBytes;
        if (streamMax > 0 && config.MaxBytes > streamMax) return JsErrors.StreamMaxStreamBytesExceeded;
        return null;
    }

    /// <summary>
    /// A new consumer of <paramref name="stream"/> (consumer.go addConsumer): the stream's max_consumers, or the
    /// account's when the stream has none or the account's is lower, counts the stream's consumers.
    /// </summary>
    public bool ConsumerLimitReached(JsStream stream)
    {
        int max = stream.Config.MaxConsumers;
        int accountMax = Limits.MaxConsumers;
        if (max <= 0 || (accountMax > 0 && accountMax < max)) max = accountMax;
        return max > 0 && stream.ConsumerCount >= max;
    }

    /// <summary>
    /// The account's max_ack_pending (setConsumerConfigDefaults / checkConsumerCfg): a defaulted value is lowered to
    /// it, an explicit one above it is refused with 10121.
    /// </summary>
    public ApiError? ApplyAckPendingLimit(ConsumerConfig config, bool explicitlySet)
    {
        int max = Limits.MaxAckPending;
        if (max <= 0 || config.MaxAckPending is not > 0 || config.MaxAckPending <= max) return null;
        if (!explicitlySet)
        {
            config.MaxAckPending = max;
            return null;
        }
        return JsErrors.ConsumerMaxPendingAckExcess(max);
    }
}
