using NatsBroker.Configuration;

namespace NatsBroker.JetStream.Batching;

/// <summary>
/// Server-wide counts of batches in flight (nats-server globalInflightAtomicBatches / globalInflightFastBatches),
/// one per JetStream service so that several servers in one process do not share them.
/// </summary>
internal sealed class BatchCounters
{
    private int _atomic;
    private int _fast;

    public int AtomicInFlight => Volatile.Read(ref _atomic);
    public int FastInFlight => Volatile.Read(ref _fast);

    /// <param name="max">The server's limit (<see cref="BatchLimits.AtomicInflightTotal"/>).</param>
    public bool TryAddAtomic(int max)
    {
        if (Interlocked.Increment(ref _atomic) <= max) return true;
        Interlocked.Decrement(ref _atomic);
        return false;
    }

    public void RemoveAtomic() => Interlocked.Decrement(ref _atomic);

    /// <param name="max">The server's limit (<see cref="BatchLimits.FastInflightTotal"/>).</param>
    public bool TryAddFast(int max)
    {
        if (Interlocked.Increment(ref _fast) <= max) return true;
        Interlocked.Decrement(ref _fast);
        return false;
    }

    public void RemoveFast() => Interlocked.Decrement(ref _fast);
}

/// <summary>
/// The atomic batches in flight on one stream (ADR-50): staged messages by batch id, the per-stream limit and
/// abandonment after the batch timeout. The ingest worker adds, stages and commits; a sweep timer (running only
/// while batches are in flight) abandons idle ones. Both take <see cref="_lock"/>, which guards the map only.
/// A batch's staged messages belong to the worker: only the worker disposes a <see cref="StagedBatch"/> (after
/// removing it); a batch the sweep or <see cref="Clear"/> dropped is left to the garbage collector, because the
/// worker may still be staging into it.
/// </summary>
internal sealed class AtomicBatchSet : IDisposable
{
    private readonly Dictionary<string, StagedBatch> _batches = new(StringComparer.Ordinal);
    private readonly Lock _lock = new();
    private readonly BatchCounters _counters;
    private readonly ServerOptions _options;
    private readonly TimeSpan _timeout;
    private readonly Action<string> _abandoned;
    private Timer? _sweep;
    private bool _disposed;

    /// <param name="abandoned">Called (outside the lock, on a timer thread) with the id of a batch abandoned for inactivity.</param>
    /// <param name="options">The limits (<see cref="BatchLimits"/>), read at each new batch as nats-server does.</param>
    public AtomicBatchSet(BatchCounters counters, ServerOptions options, Action<string> abandoned)
    {
        _counters = counters;
        _options = options;
        _timeout = options.JetStreamBatchTimeout;
        _abandoned = abandoned;
    }

    public int Count
    {
        get { lock (_lock) return _batches.Count; }
    }

    public enum StartResult { Started, TooManyInStream, TooManyInServer }

    /// <summary>Finds a batch by the id bytes of its header; <paramref name="hint"/> (the previous message's batch) avoids decoding the id.</summary>
    public bool TryGet(ReadOnlySpan<byte> id, StagedBatch? hint, out StagedBatch batch)
    {
        if (hint is not null && hint.IdBytes.AsSpan().SequenceEqual(id))
        {
            lock (_lock)
            {
                if (_batches.TryGetValue(hint.Id, out batch!) && batch == hint)
                {
                    batch.LastActivity = Environment.TickCount64;
                    return true;
                }
            }
        }
        return TryGet(System.Text.Encoding.UTF8.GetString(id), out batch);
    }

    public bool TryGet(string id, out StagedBatch batch)
    {
        lock (_lock)
        {
            if (!_batches.TryGetValue(id, out batch!)) return false;
            batch.LastActivity = Environment.TickCount64;
            return true;
        }
    }

    public StartResult Start(string id, out StagedBatch? batch)
    {
        batch = null;
        lock (_lock)
        {
            if (_disposed || _batches.Count + 1 > BatchLimits.AtomicInflightPerStream(_options)) return StartResult.TooManyInStream;
            if (!_counters.TryAddAtomic(BatchLimits.AtomicInflightTotal(_options))) return StartResult.TooManyInServer;
            batch = new StagedBatch(id) { LastActivity = Environment.TickCount64 };
            _batches[id] = batch;
            if (_sweep is null)
            {
                var period = TimeSpan.FromMilliseconds(Math.Clamp(_timeout.TotalMilliseconds / 10, 10, 1000));
                _sweep = new Timer(static s => ((AtomicBatchSet)s!).Sweep(), this, period, period);
            }
            return StartResult.Started;
        }
    }

    /// <summary>
    /// Removes a batch (committed, failed or abandoned by the worker); false when it was already gone (timed out
    /// meanwhile). The caller disposes it either way once done with it.
    /// </summary>
    public bool Remove(StagedBatch batch)
    {
        lock (_lock)
        {
            if (!_batches.TryGetValue(batch.Id, out var cur) || cur != batch) return false;
            RemoveLocked(batch);
            return true;
        }
    }

    private void RemoveLocked(StagedBatch batch)
    {
        _batches.Remove(batch.Id);
        _counters.RemoveAtomic();
        if (_batches.Count == 0)
        {
            _sweep?.Dispose();
            _sweep = null;
        }
    }

    /// <summary>Removes every batch (stream deleted, stopped, or atomic publish turned off by an update).</summary>
    public void Clear()
    {
        lock (_lock)
        {
            foreach (var b in _batches.Values.ToArray()) RemoveLocked(b);
        }
    }

    private void Sweep()
    {
        List<string>? gone = null;
        lock (_lock)
        {
            long now = Environment.TickCount64;
            foreach (var b in _batches.Values.ToArray())
            {
                if (now - b.LastActivity < (long)_timeout.TotalMilliseconds) continue;
                RemoveLocked(b);
                (gone ??= []).Add(b.Id);
            }
        }
        if (gone is null) return;
        foreach (var id in gone) _abandoned(id);
    }

    public void Dispose()
    {
        lock (_lock)
        {
            _disposed = true;
            foreach (var b in _batches.Values.ToArray()) RemoveLocked(b);
        }
    }
}
