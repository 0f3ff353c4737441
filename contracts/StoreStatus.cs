namespace NatsBroker.Contracts;

/// <summary>
/// Named outcome of a store operation. Expected outcomes (not found, limits, full disk, corrupt data) are
/// reported with these values, never with exceptions. Exceptions are reserved for programming errors.
/// </summary>
public enum StoreStatus
{
    Ok = 0,
    /// <summary>The sequence or subject holds no message (never existed, below first or above last).</summary>
    NotFound,
    /// <summary>The sequence existed inside [first, last] but was removed.</summary>
    Deleted,
    /// <summary>Discard-new: the stream is at max messages (nats: "maximum messages exceeded").</summary>
    MaxMessagesExceeded,
    /// <summary>Discard-new: the stream is at max bytes (nats: "maximum bytes exceeded").</summary>
    MaxBytesExceeded,
    /// <summary>Discard-new per subject: the subject is at max messages per subject.</summary>
    MaxMessagesPerSubjectExceeded,
    /// <summary>The message is larger than the configured maximum message size or the engine's limit.</summary>
    MessageTooLarge,
    /// <summary>Raw append with a sequence not above the last sequence.</summary>
    SequenceMismatch,
    /// <summary>An argument is invalid (empty or invalid subject, bad filter, ...).</summary>
    InvalidArgument,
    /// <summary>The store was disposed.</summary>
    Closed,
    /// <summary>Stored bytes failed their checksum or framing. The rest of the stream stays readable.</summary>
    Corrupt,
    /// <summary>The disk is full or a write was refused; nothing acknowledged before was lost.</summary>
    DiskFull,
    /// <summary>Another I/O error; see the engine's <see cref="IStreamStore.LastError"/>.</summary>
    IoError,
    /// <summary>The directory holds files that are not a store of this engine.</summary>
    NotOurStore,
    /// <summary>The on-disk format version is newer than this engine understands.</summary>
    UnsupportedVersion,
    /// <summary>The engine does not support this operation.</summary>
    NotSupported,
    /// <summary>No engine is registered under the requested name, or a plug-in assembly could not be loaded.</summary>
    UnknownEngine,
    /// <summary>
    /// A load that may not wait (<see cref="IStreamStore.LoadLastCached"/>) would have had to read the disk; the
    /// caller asks again with the waiting variant, off its thread.
    /// </summary>
    WouldBlock,
}

/// <summary>Result of an append: the status, and on success the assigned sequence and timestamp.</summary>
public readonly record struct AppendResult(StoreStatus Status, ulong Sequence, long Timestamp)
{
    public bool IsOk => Status == StoreStatus.Ok;
}

/// <summary>Result of a purge or compact: the status and how many messages were removed.</summary>
public readonly record struct PurgeResult(StoreStatus Status, ulong Purged);
