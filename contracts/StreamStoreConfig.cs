namespace NatsBroker.Contracts;

/// <summary>What to do when a limit is reached (nats: DiscardOld / DiscardNew).</summary>
public enum DiscardPolicy
{
    /// <summary>Remove the oldest messages to make room.</summary>
    Old = 0,
    /// <summary>Refuse the new message with a named error.</summary>
    New = 1,
}

/// <summary>When appended data is made durable (filestore; the memstore ignores it).</summary>
public enum SyncPolicy
{
    /// <summary>
    /// Appends are coalesced in memory and handed to the OS by a background flush within
    /// <see cref="StreamStoreConfig.FlushInterval"/>; fsync runs every <see cref="StreamStoreConfig.SyncInterval"/>
    /// (default 2 minutes, as nats-server). A process crash can lose the last unflushed appends.
    /// </summary>
    Periodic = 0,
    /// <summary>Every append is written and fsynced before it returns (nats: sync_interval: always).</summary>
    Always = 1,
    /// <summary>
    /// nats-server 2.12's <c>persist_mode: async</c>: appends are acknowledged before they reach the OS, a background
    /// flush writes them, and fsync runs every <see cref="StreamStoreConfig.SyncInterval"/> (filestore.go AsyncFlush:
    /// the flush loop writes, the sync timer fsyncs; async persist turns sync always off). An engine whose
    /// <see cref="Periodic"/> mode writes on the appender's thread (as nats-server's default does) defers the write
    /// here: the filestore's periodic mode writes every coalesce_bytes on the appender's thread, its async persist
    /// mode hands those writes to a write-behind (storage/filestore/FileStore.WriteBehind.cs).
    /// </summary>
    AsyncPersist = 2,
}

/// <summary>Limits of a stream. Zero or negative means unlimited.</summary>
public sealed record class StreamLimits
{
    public long MaxMessages { get; init; }
    /// <summary>Limit on <see cref="StreamState.Bytes"/>, counted in <see cref="IStreamStore.StoredSize"/>.</summary>
    public long MaxBytes { get; init; }
    public TimeSpan MaxAge { get; init; }
    public long MaxMessagesPerSubject { get; init; }
    /// <summary>
    /// Largest headers + payload of one message (the subject does not count: nats-server stream.go
    /// processJetStreamMsg compares len(hdr) + len(msg) with max_msg_size).
    /// </summary>
    public int MaxMessageSize { get; init; }
    public DiscardPolicy Discard { get; init; } = DiscardPolicy.Old;
    /// <summary>With <see cref="DiscardPolicy.New"/>: refuse a message when its subject is at its limit.</summary>
    public bool DiscardNewPerSubject { get; init; }

    public static StreamLimits None { get; } = new();
}

/// <summary>Configuration a store is opened with. Engine-specific knobs go in <see cref="EngineOptions"/>.</summary>
public sealed record class StreamStoreConfig
{
    public required string StreamName { get; init; }
    public StreamLimits Limits { get; init; } = StreamLimits.None;
    public SyncPolicy Sync { get; init; } = SyncPolicy.Periodic;
    /// <summary>Fsync period for <see cref="SyncPolicy.Periodic"/>; nats-server's default is 2 minutes.</summary>
    public TimeSpan SyncInterval { get; init; } = TimeSpan.FromMinutes(2);
    /// <summary>How long appended data may wait in memory before the background flush hands it to the OS.</summary>
    public TimeSpan FlushInterval { get; init; } = TimeSpan.FromMilliseconds(10);
    /// <summary>Clock for timestamps and age limits; tests substitute their own.</summary>
    public TimeProvider Clock { get; init; } = TimeProvider.System;
    /// <summary>Free-form engine options ("block_size" = "4194304", ...), from the server config.</summary>
    public IReadOnlyDictionary<string, string> EngineOptions { get; init; } = new Dictionary<string, string>();
}
