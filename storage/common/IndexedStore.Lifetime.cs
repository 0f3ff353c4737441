using NatsBroker.Contracts;

namespace NatsBroker.Storage.Internal;

/// <summary>
/// Snapshot and restore, the consumer-store registry, delete and close.
/// </summary>
internal abstract partial class IndexedStore
{
    protected void RegisterConsumer(string name, IConsumerStore store) => _consumers[name] = store;
    internal void ForgetConsumer(string name)
    {
        lock (Sync) _consumers.Remove(name);
    }

    public virtual ValueTask<StoreStatus> SnapshotAsync(Stream destination, CancellationToken cancellationToken = default)
        => StoreSnapshot.WriteAsync(this, destination, cancellationToken);

    public virtual async ValueTask<StoreStatus> RestoreAsync(Stream source, CancellationToken cancellationToken = default)
    {
        var (st, err) = await StoreSnapshot.RestoreAsync(this, source, cancellationToken).ConfigureAwait(false);
        if (st != StoreStatus.Ok) LastError = err;
        else st = await FlushAsync(cancellationToken).ConfigureAwait(false);
        return st;
    }

    public StoreStatus OpenConsumer(string name, out IConsumerStore? consumer)
    {
        lock (Sync)
        {
            consumer = null;
            if (IsClosed) return StoreStatus.Closed;
            if (string.IsNullOrEmpty(name) || name is "." or ".." || name.AsSpan().IndexOfAny("/\\\0") >= 0)
                return StoreStatus.InvalidArgument;
            if (!_consumers.TryGetValue(name, out consumer))
            {
                consumer = CreateConsumerStore(name);
                _consumers[name] = consumer;
            }
            return StoreStatus.Ok;
        }
    }

    public IReadOnlyList<string> ConsumerNames()
    {
        lock (Sync) return [.. _consumers.Keys];
    }

    public StoreStatus Delete()
    {
        lock (Sync)
        {
            if (!IsClosed)
            {
                IsClosed = true;
                _expiryTimer?.Dispose();
            }
            return DeleteEngine();
        }
    }

    public void Dispose()
    {
        if (!IsClosed) BeforeClose();
        lock (Sync)
        {
            if (IsClosed) return;
            IsClosed = true;
            _expiryTimer?.Dispose();
            foreach (var c in _consumers.Values) c.Dispose();
            CloseEngine();
        }
        GC.SuppressFinalize(this);
    }

    public ValueTask DisposeAsync()
    {
        Dispose();
        return ValueTask.CompletedTask;
    }
}
