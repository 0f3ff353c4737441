namespace NatsBroker.Contracts;

/// <summary>A point-in-time summary of a stream (nats: StreamState). Times are Unix nanoseconds.</summary>
public readonly record struct StreamState
{
    public ulong Messages { get; init; }
    /// <summary>Sum of the stored sizes of the messages (<see cref="IStreamStore.StoredSize"/>: the engine's figure).</summary>
    public ulong Bytes { get; init; }
    /// <summary>First sequence; when the stream is empty, LastSequence + 1.</summary>
    public ulong FirstSequence { get; init; }
    public long FirstTimestamp { get; init; }
    public ulong LastSequence { get; init; }
    public long LastTimestamp { get; init; }
    /// <summary>Removed sequences between first and last.</summary>
    public ulong Deleted { get; init; }
    public int Subjects { get; init; }
    public int Consumers { get; init; }
}
