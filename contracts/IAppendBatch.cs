namespace NatsBroker.Contracts;

/// <summary>
/// The messages of one atomic append (<see cref="IStreamStore.AppendBatch"/>): indexed views into memory the
/// caller owns for the duration of the call, so a batch costs no per-message allocation.
/// </summary>
public interface IAppendBatch
{
    int Count { get; }
    ReadOnlySpan<byte> Subject(int index);
    ReadOnlySpan<byte> Headers(int index);
    ReadOnlySpan<byte> Payload(int index);
    /// <summary>Per-message time to live in nanoseconds (0 = none).</summary>
    long Ttl(int index) => 0;
}
