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

/// <summary>
/// The batch state a fast-ingest message carries in its reply subject,
/// <c>&lt;prefix&gt;.&lt;id&gt;.&lt;flow&gt;.&lt;gap&gt;.&lt;seq&gt;.&lt;op&gt;.$FI</c> (nats-server stream.go getFastBatch).
/// </summary>
internal readonly struct FastBatchReply
{
    public const int OpStart = 0, OpAppend = 1, OpCommit = 2, OpCommitEob = 3, OpPing = 4;

    /// <summary>Where the batch id is in the reply subject.</summary>
    public Range Id { get; init; }
    public ushort Flow { get; init; }
    public bool GapOk { get; init; }
    public ulong Seq { get; init; }
    public int Op { get; init; }
    public bool Commit => Op is OpCommit or OpCommitEob;

    /// <summary>False for a reply that ends in .$FI but breaks the pattern (nats-server answers "batch publish pattern is invalid").</summary>
    public static bool TryParse(ReadOnlySpan<byte> reply, out FastBatchReply parsed)
    {
        parsed = default;
        var rest = reply[..^4]; // without ".$FI"
        if (!Last(ref rest, out var opToken)) return false;
        long op = ParseInt(opToken);
        if (op is < OpStart or > OpPing) return false;
        if (!Last(ref rest, out var seqToken)) return false;
        if (!System.Buffers.Text.Utf8Parser.TryParse(seqToken, out ulong seq, out int used) || used != seqToken.Length || seq == 0 || seq == ulong.MaxValue) return false;
        if (seq == 1 && op == OpCommitEob) return false;
        if (op == OpStart && seq != 1) return false;
        if (op == OpAppend && seq <= 1) return false;
        if (!Last(ref rest, out var gapToken)) return false;
        bool gapOk;
        if (gapToken.SequenceEqual("ok"u8)) gapOk = true;
        else if (gapToken.SequenceEqual("fail"u8)) gapOk = false;
        else return false;
        if (!Last(ref rest, out var flowToken)) return false;
        long flow = ParseInt(flowToken);
        if (flow <= 0) flow = 10;
        else if (flow > ushort.MaxValue) flow = ushort.MaxValue;
        if (!Last(ref rest, out var idToken)) return false;
        int idStart = rest.Length + 1;
        parsed = new FastBatchReply { Id = new Range(idStart, idStart + idToken.Length), Flow = (ushort)flow, GapOk = gapOk, Seq = seq, Op = (int)op };
        return true;
    }

    /// <summary>Takes the last token off <paramref name="rest"/>; false when there is no '.' before it (nats-server LastIndexByte == -1).</summary>
    private static bool Last(ref ReadOnlySpan<byte> rest, out ReadOnlySpan<byte> token)
    {
        int dot = rest.LastIndexOf((byte)'.');
        if (dot < 0)
        {
            token = default;
            return false;
        }
        token = rest[(dot + 1)..];
        rest = rest[..dot];
        return true;
    }

    /// <summary>nats-server parseInt64: decimal digits only, else -1.</summary>
    private static long ParseInt(ReadOnlySpan<byte> s)
    {
        if (s.IsEmpty || s.Length > 18) return -1;
        long n = 0;
        foreach (byte c in s)
        {
            if (c is < (byte)'0' or > (byte)'9') return -1;
            n = n * 10 + (c - '0');
        }
        return n;
    }
}
