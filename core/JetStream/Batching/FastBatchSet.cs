using NatsBroker.Configuration;

namespace NatsBroker.JetStream.Batching;

/// <summary>
/// The state of one fast-ingest batch (ADR-50; nats-server jetstream_batching.go fastBatch). On a single server
/// every message is stored before the next is read, so "received" and "persisted" move together here.
/// </summary>
internal sealed class FastBatch(string id, bool gapOk, ushort maxAckMessages)
{
    public string Id { get; } = id;
    public byte[] IdBytes { get; } = System.Text.Encoding.UTF8.GetBytes(id);
    public bool GapOk { get; } = gapOk;
    /// <summary>The flow the client allows at most (from the reply subject).</summary>
    public ushort MaxAckMessages { get; } = maxAckMessages;
    /// <summary>Flow acknowledgement every this many messages (the server's current choice).</summary>
    public ushort AckMessages { get; set; }
    /// <summary>Under the set's lock: the batch left the set (ended, abandoned or swept); it never comes back.</summary>
    public bool Removed { get; set; }
    /// <summary>Highest batch sequence received.</summary>
    public ulong LastSeq { get; set; }
    /// <summary>Highest batch sequence stored (or skipped as a duplicate).</summary>
    public ulong PersistedSeq { get; set; }
    /// <summary>Batch sequence of the last flow acknowledgement.</summary>
    public ulong FlowSeq { get; set; }
    /// <summary>Stream sequence of the batch's last stored message.</summary>
    public ulong StreamSeq { get; set; }
    public long LastActivity { get; set; }
}

/// <summary>
/// The fast-ingest batches in flight on one stream: limits (<see cref="BatchLimits"/>: 1,000 per stream, 50,000 per
/// server unless configured) and silent
/// abandonment after the batch timeout (a sweep timer that runs only while batches exist). The ingest worker
/// owns each batch's fields; <see cref="_lock"/> guards the map (the sweep removes from it).
/// </summary>
internal sealed class FastBatchSet : IDisposable
{
    /// <summary>nats-server fastBatchInit / checkFlowControl: the flow shared by the stream's fast publishers.</summary>
    public const int FlowBudget = 500;

    private readonly Dictionary<string, FastBatch> _batches = new(StringComparer.Ordinal);
    private readonly Lock _lock = new();
    private readonly BatchCounters _counters;
    private readonly ServerOptions _options;
    private readonly TimeSpan _timeout;
    private Timer? _sweep;
    private bool _disposed;

    /// <param name="options">The limits (<see cref="BatchLimits"/>), read at each new batch as nats-server does.</param>
    public FastBatchSet(BatchCounters counters, ServerOptions options)
    {
        _counters = counters;
        _options = options;
        _timeout = options.JetStreamBatchTimeout;
    }

    public int Count
    {
        get { lock (_lock) return _batches.Count; }
    }

    /// <summary>
    /// Finds a batch by the id bytes of a reply subject; <paramref name="hint"/> (the batch of the previous message)
    /// avoids decoding the id when one publisher sends a run of messages.
    /// </summary>
    public bool TryGet(ReadOnlySpan<byte> id, FastBatch? hint, out FastBatch batch)
    {
        if (hint is not null && hint.IdBytes.AsSpan().SequenceEqual(id))
        {
            lock (_lock)
            {
                // A batch is in the set from Start until RemoveLocked: the flag answers without hashing the id.
                if (!hint.Removed)
                {
                    batch = hint;
                    batch.LastActivity = Environment.TickCount64;
                    return true;
                }
            }
        }
        return TryGet(System.Text.Encoding.UTF8.GetString(id), out batch);
    }

    public bool TryGet(string id, out FastBatch batch)
    {
        lock (_lock)
        {
            if (!_batches.TryGetValue(id, out batch!)) return false;
            batch.LastActivity = Environment.TickCount64;
            return true;
        }
    }

    /// <summary>Registers a new batch; null when a limit is reached. Its first flow is the client's (at most 500) when it is the stream's only fast publisher, else 1.</summary>
    public FastBatch? Start(string id, bool gapOk, ushort maxAckMessages)
    {
        lock (_lock)
        {
            if (_disposed || _batches.Count + 1 > BatchLimits.FastInflightPerStream(_options)) return null;
            if (!_counters.TryAddFast(BatchLimits.FastInflightTotal(_options))) return null;
            var b = new FastBatch(id, gapOk, maxAckMessages) { LastActivity = Environment.TickCount64 };
            _batches[id] = b;
            b.AckMessages = _batches.Count > 1 ? (ushort)1 : Math.Min((ushort)FlowBudget, maxAckMessages);
            if (_sweep is null)
            {
                var period = TimeSpan.FromMilliseconds(Math.Clamp(_timeout.TotalMilliseconds / 10, 10, 1000));
                _sweep = new Timer(static s => ((FastBatchSet)s!).Sweep(), this, period, period);
            }
            return b;
        }
    }

    public void Remove(FastBatch batch)
    {
        lock (_lock)
        {
            if (_batches.TryGetValue(batch.Id, out var cur) && cur == batch) RemoveLocked(batch);
        }
    }

    private void RemoveLocked(FastBatch batch)
    {
        batch.Removed = true;
        _batches.Remove(batch.Id);
        _counters.RemoveFast();
        if (_batches.Count == 0)
        {
            _sweep?.Dispose();
            _sweep = null;
        }
    }

    /// <summary>
    /// The flow to ask of a publisher at its next acknowledgement (nats-server checkFlowControl): the budget is
    /// shared by the stream's fast publishers and capped by the client's maximum; the current flow doubles
    /// towards it or halves down to it.
    /// </summary>
    public ushort NextFlow(FastBatch b)
    {
        int count;
        lock (_lock) count = Math.Max(1, _batches.Count);
        int max = Math.Max(1, FlowBudget / count);
        if (max > b.MaxAckMessages) max = b.MaxAckMessages;
        int cur = b.AckMessages;
        if (cur < max) cur = Math.Min(cur * 2, max);
        else if (cur > max) cur = Math.Max(cur / 2, max);
        return (ushort)cur;
    }

    public void Clear()
    {
        lock (_lock)
        {
            foreach (var b in _batches.Values.ToArray()) RemoveLocked(b);
        }
    }

    private void Sweep()
    {
        lock (_lock)
        {
            long now = Environment.TickCount64;
            foreach (var b in _batches.Values.ToArray())
            {
                if (now - b.LastActivity >= (long)_timeout.TotalMilliseconds) RemoveLocked(b);
            }
        }
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
