namespace NatsBroker.Contracts;

/// <summary>
/// A stream's message store. All operations are thread-safe. Appends take spans and must not allocate per
/// message in steady state; loads fill a caller-owned <see cref="StoredMessage"/>. Expected outcomes are
/// returned as <see cref="StoreStatus"/>; only operations that really wait on I/O are async.
/// Subjects and filters are UTF-8 bytes; filters may hold '*' and '>' wildcards. An empty filter means all.
/// </summary>
public interface IStreamStore : IDisposable, IAsyncDisposable
{
    /// <summary>The engine's registry name ("memory", "file", ...).</summary>
    string EngineName { get; }

    StreamStoreConfig Config { get; }

    /// <summary>Human-readable detail of the last IoError/DiskFull/Corrupt outcome, or null.</summary>
    string? LastError { get; }

    /// <summary>Problems found when the store was opened (torn tail truncated, corrupt block ranges skipped).</summary>
    IReadOnlyList<string> RecoveryReport { get; }

    /// <summary>
    /// Why the store stopped accepting writes, or null while it is healthy. A persistent engine that could not
    /// write or fsync something it had to make durable turns read-only for good (fail-stop: after a failed
    /// fsync the kernel may have dropped the data, and a retry can "succeed" without it): every later write
    /// returns <see cref="StoreStatus.IoError"/> with this reason, reads keep working, and only a reopen (after
    /// fixing the cause) clears it. The server shows it in its logs and monitoring.
    /// </summary>
    string? Failure => null;

    /// <summary>
    /// What one message counts toward <see cref="StreamState.Bytes"/> and <see cref="StreamLimits.MaxBytes"/> in this
    /// store, so also toward an account's max_memory / max_storage: the host asks it before a publish to check the
    /// account's limits with the figure the store will add. nats-server counts a per-engine figure that includes
    /// its record overhead (memstore.go memStoreMsgSize: subject + headers + payload + 16; filestore.go
    /// fileStoreMsgSize: 22 + subject + payload + 8, plus 4 + headers when there are headers); the built-in engines
    /// count exactly those. The default (an engine that does not say) is subject + headers + payload.
    /// </summary>
    long StoredSize(int subjectLength, int headersLength, int payloadLength) => (long)subjectLength + headersLength + payloadLength;

    /// <summary>
    /// Appends a message at LastSequence+1. <paramref name="timestamp"/> is Unix nanoseconds (0 = now);
    /// <paramref name="ttl"/> is a per-message time to live in nanoseconds (0 = none). Enforces the limits.
    /// </summary>
    AppendResult Append(ReadOnlySpan<byte> subject, ReadOnlySpan<byte> headers, ReadOnlySpan<byte> payload, long timestamp = 0, long ttl = 0);

    /// <summary>
    /// Appends every message of <paramref name="batch"/> at LastSequence+1.. as one unit: either all of them are
    /// stored (and, under <see cref="SyncPolicy.Always"/>, durable before this returns) or none is, also across a
    /// crash (an engine that writes a batch in several steps must discard an incomplete batch when it reopens).
    /// Readers never see part of a batch. Limits are checked for the whole batch first (discard new refuses it
    /// whole); discard-old removals run after it. On success the result holds the batch's LAST sequence (the
    /// first is Sequence - Count + 1). Engines that cannot do this answer <see cref="StoreStatus.NotSupported"/>.
    /// </summary>
    AppendResult AppendBatch(IAppendBatch batch, long timestamp = 0) => new(StoreStatus.NotSupported, 0, 0);

    /// <summary>Appends at an explicit sequence above LastSequence (mirrors, replication, restore); gaps become deleted.</summary>
    StoreStatus AppendAt(ulong sequence, long timestamp, ReadOnlySpan<byte> subject, ReadOnlySpan<byte> headers, ReadOnlySpan<byte> payload, long ttl = 0);

    /// <summary>Advances LastSequence to at least <paramref name="lastSequence"/> without storing messages.</summary>
    StoreStatus SkipTo(ulong lastSequence);

    StoreStatus Load(ulong sequence, StoredMessage into);

    /// <summary>Loads the newest message whose subject is exactly <paramref name="subject"/>, or matches it if it has wildcards.</summary>
    StoreStatus LoadLast(ReadOnlySpan<byte> subject, StoredMessage into);

    /// <summary>
    /// <see cref="LoadLast"/> for callers on threads that must not wait on I/O (a client's read loop): answers only
    /// from memory, and returns <see cref="StoreStatus.WouldBlock"/> when the message (or the index entry that finds
    /// it) would have to be read from disk, or when the engine does not offer it (the default). Any other status is
    /// what <see cref="LoadLast"/> would have answered.
    /// </summary>
    StoreStatus LoadLastCached(ReadOnlySpan<byte> subject, StoredMessage into) => StoreStatus.WouldBlock;

    /// <summary>Loads the first message at or after <paramref name="fromSequence"/> whose subject matches <paramref name="filter"/>.</summary>
    StoreStatus LoadNext(ReadOnlySpan<byte> filter, ulong fromSequence, StoredMessage into);

    StoreStatus Remove(ulong sequence);

    /// <summary>Removes the message and overwrites its stored bytes.</summary>
    StoreStatus Erase(ulong sequence);

    /// <summary>
    /// Purges (nats: PurgeEx). Empty <paramref name="filter"/> = every subject. <paramref name="upToSequence"/> &gt; 0
    /// removes only sequences below it. <paramref name="keep"/> &gt; 0 keeps the newest N matching messages.
    /// </summary>
    PurgeResult Purge(ReadOnlySpan<byte> filter = default, ulong upToSequence = 0, ulong keep = 0);

    /// <summary>Removes every message below <paramref name="sequence"/>; the first sequence becomes at least it.</summary>
    PurgeResult Compact(ulong sequence);

    StreamState GetState();

    /// <summary>Adds the per-subject message counts of subjects matching <paramref name="filter"/> to <paramref name="into"/>; returns the number of subjects.</summary>
    int GetSubjectCounts(ReadOnlySpan<byte> filter, IDictionary<string, ulong> into);

    /// <summary>Number of messages matching <paramref name="filter"/> (O(subjects), not O(messages)).</summary>
    ulong CountMatching(ReadOnlySpan<byte> filter);

    /// <summary>Applies new limits, enforcing them at once (discard-old removals).</summary>
    StoreStatus UpdateLimits(StreamLimits limits);

    /// <summary>
    /// True when an append may still sit in the engine's memory when <see cref="Append"/> returns, so that a host must
    /// call <see cref="Commit"/> before it acknowledges it. Fixed for the life of the store.
    /// </summary>
    bool NeedsCommit => false;

    /// <summary>
    /// Makes every append made so far as safe as an acknowledged message must be under <see cref="StreamStoreConfig.Sync"/>,
    /// the point before which a host sends no acknowledgement (JetStream's PubAck), as nats-server's filestore does
    /// before it returns from a store (filestore.go writeMsgRecordLocked: the record is flushed in place unless
    /// AsyncFlush is set):
    /// <list type="bullet">
    /// <item><see cref="SyncPolicy.Periodic"/>: handed to the operating system (the write returned), so a process crash
    /// (kill -9, the OOM killer) loses nothing acknowledged; a power cut can lose what the periodic fsync had not yet
    /// reached.</item>
    /// <item><see cref="SyncPolicy.Always"/>: already written and fsynced by the append; nothing more to do.</item>
    /// <item><see cref="SyncPolicy.AsyncPersist"/>: nothing (ADR-56: the acknowledgement precedes the write).</item>
    /// </list>
    /// One call covers every append before it, so a host that acknowledges in batches pays one write per batch. A
    /// failure here is the store's fail-stop (<see cref="Failure"/>): nothing appended since the last successful
    /// commit may be acknowledged.
    /// </summary>
    StoreStatus Commit() => StoreStatus.Ok;

    /// <summary>Makes everything appended so far durable (write + fsync). Completes when done.</summary>
    ValueTask<StoreStatus> FlushAsync(CancellationToken cancellationToken = default);

    /// <summary>Writes a portable snapshot of messages and consumer states (format: <see cref="StoreSnapshot"/>).</summary>
    ValueTask<StoreStatus> SnapshotAsync(Stream destination, CancellationToken cancellationToken = default);

    /// <summary>Restores a snapshot into this store, which must be empty (never held a message).</summary>
    ValueTask<StoreStatus> RestoreAsync(Stream source, CancellationToken cancellationToken = default);

    /// <summary>Opens (creating if needed) the durable state of a consumer of this stream.</summary>
    StoreStatus OpenConsumer(string name, out IConsumerStore? consumer);

    IReadOnlyList<string> ConsumerNames();

    /// <summary>Deletes the whole store and its files.</summary>
    StoreStatus Delete();
}
