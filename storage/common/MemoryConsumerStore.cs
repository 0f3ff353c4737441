using System.Runtime.CompilerServices;
using NatsBroker.Contracts;

namespace NatsBroker.Storage.Internal;

/// <summary>A consumer state kept in memory; persistent engines override <see cref="Persist"/>.</summary>
internal class MemoryConsumerStore(string name, Action<string>? onDelete = null) : IConsumerStore
{
    protected readonly Lock Gate = new();
    protected readonly ConsumerState State = new();
    public string Name { get; } = name;

    protected virtual StoreStatus Persist() => StoreStatus.Ok;
    protected virtual StoreStatus DeleteFiles() => StoreStatus.Ok;

    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    public StoreStatus UpdateDelivered(ulong consumerSequence, ulong streamSequence, ulong deliveries, long timestamp)
    {
        lock (Gate)
        {
            ConsumerStateCodec.ApplyDelivered(State, consumerSequence, streamSequence, deliveries, timestamp);
            return Persist();
        }
    }

    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    public StoreStatus UpdateAcked(ulong consumerSequence, ulong streamSequence)
    {
        lock (Gate)
        {
            ConsumerStateCodec.ApplyAcked(State, consumerSequence, streamSequence);
            return Persist();
        }
    }

    public StoreStatus Update(ConsumerState state)
    {
        ArgumentNullException.ThrowIfNull(state);
        lock (Gate)
        {
            state.CopyTo(State);
            return Persist();
        }
    }

    public StoreStatus GetState(ConsumerState into)
    {
        ArgumentNullException.ThrowIfNull(into);
        lock (Gate)
        {
            State.CopyTo(into);
            return StoreStatus.Ok;
        }
    }

    public StoreStatus Delete()
    {
        // Unregister first, outside Gate: the store takes its own lock and then consumer gates (lock order).
        onDelete?.Invoke(Name);
        lock (Gate)
        {
            return DeleteFiles();
        }
    }

    public virtual void Dispose() => GC.SuppressFinalize(this);
}
