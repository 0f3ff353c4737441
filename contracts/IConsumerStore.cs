namespace NatsBroker.Contracts;

/// <summary>A delivered/acked position: the consumer's own sequence and the stream sequence.</summary>
public readonly record struct SequencePair(ulong Consumer, ulong Stream);

/// <summary>An outstanding (delivered, not yet acked) message.</summary>
public readonly record struct PendingEntry(ulong ConsumerSequence, long Timestamp);

/// <summary>
/// Durable state of a consumer (nats: ConsumerState): delivered, ack floor, pending by stream sequence and
/// redelivery counts by stream sequence. Caller-owned and reusable: <see cref="IConsumerStore.GetState"/>
/// fills it in place.
/// </summary>
public sealed class ConsumerState
{
    public SequencePair Delivered { get; set; }
    public SequencePair AckFloor { get; set; }
    public Dictionary<ulong, PendingEntry> Pending { get; } = [];
    public Dictionary<ulong, ulong> Redelivered { get; } = [];

    public void CopyTo(ConsumerState other)
    {
        other.Delivered = Delivered;
        other.AckFloor = AckFloor;
        other.Pending.Clear();
        foreach (var kv in Pending) other.Pending[kv.Key] = kv.Value;
        other.Redelivered.Clear();
        foreach (var kv in Redelivered) other.Redelivered[kv.Key] = kv.Value;
    }
}

/// <summary>The state store of one consumer, beside its stream's store.</summary>
public interface IConsumerStore : IDisposable
{
    string Name { get; }

    /// <summary>Records a delivery (<paramref name="deliveries"/> &gt; 1 is a redelivery).</summary>
    StoreStatus UpdateDelivered(ulong consumerSequence, ulong streamSequence, ulong deliveries, long timestamp);

    /// <summary>Records an ack of one message; the ack floor advances past contiguous acks.</summary>
    StoreStatus UpdateAcked(ulong consumerSequence, ulong streamSequence);

    /// <summary>Replaces the whole state.</summary>
    StoreStatus Update(ConsumerState state);

    StoreStatus GetState(ConsumerState into);

    /// <summary>Removes the consumer's state.</summary>
    StoreStatus Delete();
}
