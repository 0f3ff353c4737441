using System.Collections.Concurrent;
using System.Runtime.CompilerServices;
using System.Text;
using System.Text.Json;
using Microsoft.Extensions.Logging;
using NatsBroker.Contracts;
using NatsBroker.JetStream.Api;

namespace NatsBroker.JetStream;

/// <summary>
/// One consumer of a stream (nats-server consumer.go): its config, its delivery state, its waiting pull requests
/// (pull) or deliver subject (push), outstanding acks and redeliveries. Acks and pull requests are queued by other
/// threads and handled by the consumer's own loop task, which does all store reads and deliveries under the
/// consumer's lock. Durable consumers of file streams keep their state in an <see cref="IConsumerStore"/> and their
/// config in consumers/&lt;name&gt;.json. Split: JsConsumer.Delivery.cs (delivery loop), JsConsumer.Acks.cs.
/// </summary>
internal sealed partial class JsConsumer
{
    /// <summary>Acks and pull requests queued before new ones are dropped (they are redelivered / retried).</summary>
    public const int InboxLimit = 100_000;

    private readonly JsStream _stream;
    private readonly Lock _lock = new();
    private readonly ConcurrentQueue<AckItem> _acks = new();
    private readonly ConcurrentQueue<PullRequest> _pulls = new();
    private readonly SemaphoreSlim _wake = new(0, 1);
    private readonly CancellationTokenSource _stop = new();
    /// <summary>The filter subjects (none: all), replaced whole by an update; read without the lock by the stream's worker.</summary>
    private volatile byte[][] _filters;
    /// <summary>Length of "$JS.ACK.&lt;stream&gt;.&lt;consumer&gt;." (UTF-8), which starts every delivery's reply subject.</summary>
    private readonly int _ackPrefixLength;
    private int _inboxCount;
    private int _kicked;
    private Task? _loop;
    private IConsumerStore? _store;

    // Delivery state (under _lock). The delivered and ack floor figures follow nats-server's consumer store
    // (memstore.go consumerMemStore SetStarting / UpdateDelivered / UpdateAcks), which consumer info reports.
    private ulong _nextStreamSeq;
    /// <summary>The last consumer sequence given out (nats-server o.dseq-1; the store's Delivered.Consumer).</summary>
    private ulong _deliveredConsumerSeq;
    /// <summary>The store's Delivered.Stream: the start - 1, then the highest stream sequence delivered.</summary>
    private ulong _deliveredStreamSeq;
    /// <summary>The store's AckFloor (consumer, stream).</summary>
    private ulong _ackFloorConsumerSeq, _ackFloorStreamSeq;
    private readonly Dictionary<ulong, PendingMsg> _pending = [];
    private readonly SortedSet<ulong> _redeliver = [];
    private Queue<ulong>? _lastPerSubject;
    /// <summary>nats-server's o.sseq while the last-per-subject skip list is walked: its first entry, then the last one delivered + 1.</summary>
    private ulong _lastPerSubjectCursor;
    private long _numPending;
    /// <summary>Redelivery counts by stream sequence (nats-server o.rdc): num_redelivered is their number.</summary>
    private readonly Dictionary<ulong, ulong> _redelivered = [];
    private readonly LinkedList<PullRequest> _waiting = new();
    private long _lastActiveTick = Environment.TickCount64;
    private long _nextHeartbeatTick;
    private DateTime? _deliveredLastActive, _ackLastActive;
    private readonly StoredMessage _msg = new(1024);

    private sealed class PendingMsg
    {
        /// <summary>The consumer sequence of the first delivery, kept on redelivery (nats-server trackPending).</summary>
        public ulong ConsumerSeq;
        /// <summary>When it was last delivered (Unix nanoseconds), as nats-server's pending Timestamp.</summary>
        public long Timestamp;
        public ulong Deliveries;
        public long DeadlineTick;
    }

    private JsConsumer(JsStream stream, string name, ConsumerConfig config, DateTime created, bool durable)
    {
        _stream = stream;
        Name = name;
        NameBytes = Encoding.UTF8.GetBytes(name);
        Config = config;
        Created = created;
        IsDurable = durable;
        _filters = FilterBytes(config);
        var ackPrefix = Encoding.UTF8.GetBytes($"$JS.ACK.{stream.Name}.{name}.");
        _ackPrefixLength = ackPrefix.Length;
        _replyScratch = new byte[ackPrefix.Length + 5 * 21];
        ackPrefix.CopyTo(_replyScratch, 0);
        DeliverSubject = config.DeliverSubject is { Length: > 0 } d ? Encoding.UTF8.GetBytes(d) : null;
    }

    public string Name { get; }
    public byte[] NameBytes { get; }
    public ConsumerConfig Config { get; private set; }
    public DateTime Created { get; }
    public bool IsDurable { get; }
    /// <summary>The push consumer's deliver subject (null: pull); an update may move it (read under the lock).</summary>
    public byte[]? DeliverSubject { get; private set; }
    public bool IsPull => DeliverSubject is null;
    private bool AckNone => Config.AckPolicy == AckPolicy.None;
    private bool AckAll => Config.AckPolicy == AckPolicy.All;
    /// <summary>The 2.14 flow_control ack policy: acked as "all" up to the sequences a flow-control answer names.</summary>
    private bool AckFlowControl => Config.AckPolicy == AckPolicy.FlowControl;
    private long AckWaitMs => Math.Max(1, (Config.AckWait ?? 30_000_000_000) / 1_000_000);

    /// <summary>
    /// How long a delivery may stay unacknowledged: the backoff entry for this delivery count when a backoff
    /// schedule is set (the last entry repeats), else ack_wait (nats-server consumer.go ackWait with backoff).
    /// </summary>
    private long RedeliveryDelayMs(ulong deliveries)
    {
        if (Config.Backoff is { Length: > 0 } b)
        {
            int i = (int)Math.Min((ulong)b.Length - 1, Math.Max(1, deliveries) - 1);
            return Math.Max(1, b[i] / 1_000_000);
        }
        return AckWaitMs;
    }

    /// <summary>
    /// Creates a consumer for a validated config; durable consumers of file streams open their state store. With
    /// <paramref name="fromSnapshot"/> (a restored stream, Snapshots/StreamRestorer.cs) the consumer resumes from that
    /// delivery state, which a durable of a file stream also stores.
    /// </summary>
    public static ApiError? Create(JsStream stream, string name, ConsumerConfig config, DateTime created, bool recovering, out JsConsumer? consumer,
        ConsumerState? fromSnapshot = null)
    {
        bool durable = !string.IsNullOrEmpty(config.DurableName);
        var c = new JsConsumer(stream, name, config, created, durable);
        consumer = null;
        var state = fromSnapshot ?? new ConsumerState();
        bool restored = fromSnapshot is { Delivered.Stream: > 0 };
        if (durable && stream.Dir is not null)
        {
            var status = stream.Store.OpenConsumer(name, out var cs);
            if (status != StoreStatus.Ok || cs is null) return JsErrors.ConsumerStoreFailed(stream.Store.LastError ?? status.ToString());
            c._store = cs;
            if (fromSnapshot is not null)
            {
                status = cs.Update(fromSnapshot);
                if (status != StoreStatus.Ok) return JsErrors.ConsumerStoreFailed(stream.Store.LastError ?? status.ToString());
            }
            else if (recovering && cs.GetState(state) == StoreStatus.Ok && state.Delivered.Stream > 0) restored = true;
            if (!recovering) c.WriteMeta();
        }
        lock (c._lock)
        {
            if (restored) c.Restore(state);
            else c.InitStart();
        }
        consumer = c;
        return null;
    }

    private void WriteMeta()
    {
        DurableFiles.CreateDirectory(_stream.ConsumersDir);
        var meta = new ConsumerMeta { Name = Name, Config = Config, Created = Created };
        DurableFiles.Replace(Path.Combine(_stream.ConsumersDir, Name + ".json"), JsonSerializer.SerializeToUtf8Bytes(meta, JsJsonContext.Default.ConsumerMeta));
    }

    private static byte[][] FilterBytes(ConsumerConfig config)
    {
        var filters = config.FilterSubjects is { Length: > 0 } fs ? fs : config.FilterSubject is { Length: > 0 } f ? [f] : [];
        return filters.Contains(">") ? [] : [.. filters.Select(Encoding.UTF8.GetBytes)];
    }

    /// <summary>
    /// Applies an allowed update (nats-server consumer.go updateConfig): the new config is recorded (description,
    /// ack_wait, max_deliver, max_ack_pending, backoff, rate_limit_bps, headers_only, ... are read from it at each
    /// delivery); a new deliver subject takes the deliveries, everything pending being redelivered there
    /// (updateDeliverSubjectLocked / forceExpirePending); new filters select from the next message on, num_pending
    /// is recounted and, on an interest stream, messages no consumer is interested in any more are removed
    /// (cleanupNoInterestMessages).
    /// </summary>
    public void Update(ConsumerConfig next)
    {
        DateTime? oldPause;
        List<ulong>? recheck = null;
        lock (_lock)
        {
            oldPause = Config.PauseUntil;
            if (!IsPull && next.DeliverSubject is { Length: > 0 } ds && ds != Config.DeliverSubject)
            {
                DeliverSubject = Encoding.UTF8.GetBytes(ds);
                foreach (var sseq in _pending.Keys) _redeliver.Add(sseq);
            }
            var oldFilters = Config.FilterSubjects is { Length: > 0 } of ? of : Config.FilterSubject is { Length: > 0 } o1 ? [o1] : [];
            var newFilters = next.FilterSubjects is { Length: > 0 } nf ? nf : next.FilterSubject is { Length: > 0 } n1 ? [n1] : [];
            Config = next;
            if (!oldFilters.SequenceEqual(newFilters))
            {
                _filters = FilterBytes(next);
                RecountPending();
                if (_stream.Config.Retention == RetentionPolicy.Interest) recheck = NoLongerWantedCandidates();
            }
        }
        if (recheck is { Count: > 0 }) _stream.OnConsumerAcked(recheck);
        OnPauseChanged(oldPause, next.PauseUntil);
        if (_store is not null) WriteMeta();
        Kick();
    }

    /// <summary>
    /// Under the lock: the stream sequences from the ack floor on that an interest stream checks again after a
    /// filter change (cleanupNoInterestMessages; past 100,000 nats-server defers to a later interest check, as here).
    /// </summary>
    private List<ulong>? NoLongerWantedCandidates()
    {
        var st = _stream.Store.GetState();
        ulong start = Math.Max(_ackFloorStreamSeq + 1, st.FirstSequence);
        if (st.Messages == 0 || start > st.LastSequence || st.LastSequence - start > 100_000) return null;
        var seqs = new List<ulong>((int)(st.LastSequence - start + 1));
        for (ulong s = start; s <= st.LastSequence; s++) seqs.Add(s);
        return seqs;
    }

    /// <summary>
    /// Where delivery starts, per deliver policy, and the figures that says (nats-server consumer.go
    /// selectStartingSeqNo): delivered and ack floor are (0, start - 1) until something is delivered.
    /// </summary>
    private void InitStart()
    {
        var state = _stream.Store.GetState();
        ulong sseq = 0;
        switch (Config.DeliverPolicy)
        {
            case DeliverPolicy.Last:
                if (_filters.Length == 0) sseq = state.LastSequence;
                else foreach (var f in _filters) if (_stream.Store.LoadLast(f, _msg) == StoreStatus.Ok) sseq = Math.Max(sseq, _msg.Sequence);
                break;
            case DeliverPolicy.New:
                sseq = state.LastSequence + 1;
                break;
            case DeliverPolicy.ByStartSequence:
                sseq = Config.OptStartSeq ?? 0;
                break;
            case DeliverPolicy.ByStartTime:
                sseq = FirstSequenceAtOrAfter(Config.OptStartTime is { } st ? GoTime.ToUnixNanos(st) : 0);
                break;
            case DeliverPolicy.LastPerSubject when _stream.Config.MaxMsgsPerSubject != 1:
                {
                    var subjects = new Dictionary<string, ulong>(StringComparer.Ordinal);
                    if (_filters.Length == 0) _stream.Store.GetSubjectCounts(default, subjects);
                    else foreach (var f in _filters) _stream.Store.GetSubjectCounts(f, subjects);
                    var seqs = new List<ulong>(subjects.Count);
                    foreach (var subject in subjects.Keys)
                    {
                        if (_stream.Store.LoadLast(Encoding.UTF8.GetBytes(subject), _msg) == StoreStatus.Ok) seqs.Add(_msg.Sequence);
                    }
                    seqs.Sort();
                    // The skip list is walked first; then delivery resumes after the stream's last message at creation.
                    _lastPerSubject = new Queue<ulong>(seqs);
                    _nextStreamSeq = state.LastSequence + 1;
                    sseq = seqs.Count > 0 ? seqs[0] : state.LastSequence;
                    _lastPerSubjectCursor = sseq;
                    break;
                }
            default: // all, and last_per_subject on a stream keeping one message per subject
                sseq = state.FirstSequence;
                break;
        }
        bool optStart = Config.OptStartSeq is > 0;
        if (state.FirstSequence == 0 && !optStart) sseq = 1;
        else if (sseq > state.LastSequence && !optStart) sseq = state.LastSequence + 1;
        else if (sseq < state.FirstSequence) sseq = state.FirstSequence;
        if (_lastPerSubject is null) _nextStreamSeq = Math.Max(1, sseq);
        _deliveredConsumerSeq = 0;
        _deliveredStreamSeq = sseq == 0 ? 0 : sseq - 1;
        _ackFloorConsumerSeq = 0;
        _ackFloorStreamSeq = _deliveredStreamSeq;
        RecountPending();
    }

    /// <summary>nats-server o.sseq: the next stream sequence the consumer looks at (idle heartbeats report it - 1).</summary>
    private ulong NextStreamSeqGo => _lastPerSubject is { Count: > 0 } ? _lastPerSubjectCursor : _nextStreamSeq;

    private void Restore(ConsumerState state)
    {
        _deliveredConsumerSeq = state.Delivered.Consumer;
        _deliveredStreamSeq = state.Delivered.Stream;
        _ackFloorConsumerSeq = state.AckFloor.Consumer;
        _ackFloorStreamSeq = state.AckFloor.Stream;
        _nextStreamSeq = state.Delivered.Stream + 1;
        foreach (var (sseq, n) in state.Redelivered) _redelivered[sseq] = n;
        long deadline = Environment.TickCount64 + AckWaitMs;
        foreach (var (sseq, p) in state.Pending)
        {
            ulong redelivered = state.Redelivered.TryGetValue(sseq, out var r) ? r : 0;
            _pending[sseq] = new PendingMsg { ConsumerSeq = p.ConsumerSequence, Timestamp = p.Timestamp, Deliveries = redelivered + 1, DeadlineTick = deadline };
        }
        RecountPending();
    }

    /// <summary>Counts the messages at or after the next sequence that match the filters (num_pending).</summary>
    private void RecountPending()
    {
        var st = _stream.Store.GetState();
        long n = _lastPerSubject?.Count ?? 0;
        if (_nextStreamSeq <= st.FirstSequence)
        {
            if (_filters.Length == 0) n += (long)st.Messages;
            else foreach (var f in _filters) n += (long)_stream.Store.CountMatching(f);
        }
        else
        {
            for (ulong s = _nextStreamSeq; s <= st.LastSequence;)
            {
                if (!LoadNextMatching(s, out ulong found)) break;
                n++;
                s = found + 1;
            }
        }
        Interlocked.Exchange(ref _numPending, n);
    }

    /// <summary>Loads into _msg the first message at or after <paramref name="from"/> matching any filter.</summary>
    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    private bool LoadNextMatching(ulong from, out ulong seq)
    {
        seq = 0;
        if (_filters.Length <= 1)
        {
            var filter = _filters.Length == 0 ? default : _filters[0].AsSpan();
            if (_stream.Store.LoadNext(filter, from, _msg) != StoreStatus.Ok) return false;
            seq = _msg.Sequence;
            return true;
        }
        ulong best = ulong.MaxValue;
        foreach (var f in _filters)
        {
            if (_stream.Store.LoadNext(f, from, _msg) == StoreStatus.Ok && _msg.Sequence < best) best = _msg.Sequence;
        }
        if (best == ulong.MaxValue) return false;
        if (_stream.Store.Load(best, _msg) != StoreStatus.Ok) return false;
        seq = best;
        return true;
    }

    public bool Matches(ReadOnlySpan<byte> subject)
    {
        var filters = _filters;
        if (filters.Length == 0) return true;
        foreach (var f in filters) if (SubjectMatch.Matches(subject, f)) return true;
        return false;
    }

    /// <summary>Called by the stream's worker for each stored message (before the batch's kick).</summary>
    public void OnStored(ReadOnlySpan<byte> subject)
    {
        if (Matches(subject)) Interlocked.Increment(ref _numPending);
    }

    /// <summary>After a purge or message removal: recount what is pending and drop state for removed messages.</summary>
    public void OnStreamChanged()
    {
        lock (_lock)
        {
            var st = _stream.Store.GetState();
            if (_nextStreamSeq < st.FirstSequence) _nextStreamSeq = st.FirstSequence;
            // Redelivery counts of messages that left the stream go too (nats-server checkRedelivered).
            if (_redelivered.Count > 0)
            {
                List<ulong>? gone = null;
                foreach (var sseq in _redelivered.Keys) if (sseq < st.FirstSequence) (gone ??= []).Add(sseq);
                foreach (var sseq in gone ?? []) _redelivered.Remove(sseq);
            }
            RecountPending();
        }
        Kick();
    }

    public void Kick()
    {
        if (Interlocked.Exchange(ref _kicked, 1) == 0)
        {
            try { _wake.Release(); }
            catch (SemaphoreFullException) { }
            catch (ObjectDisposedException) { }
        }
    }

    public void Start()
    {
        StartPacing();
        _loop = Task.Run(LoopAsync);
        SchedulePauseEnd();
    }

    /// <summary>Stops the loop; with <paramref name="delete"/> also removes the durable state and config file.</summary>
    public async Task StopAsync(bool delete)
    {
        StopPauseTimer();
        StopPacing();
        await _stop.CancelAsync().ConfigureAwait(false);
        Kick();
        if (_loop is not null)
        {
            try { await _loop.ConfigureAwait(false); }
            catch (OperationCanceledException) { }
        }
        if (_store is not null)
        {
            if (delete)
            {
                _store.Delete();
                try { File.Delete(Path.Combine(_stream.ConsumersDir, Name + ".json")); }
                catch (IOException ex) { _stream.Js.Logger.LogWarning("JetStream: could not remove consumer file: {Error}", ex.Message); }
            }
            _store.Dispose();
            _store = null;
        }
    }

    /// <summary>Queues a pull request; false (and the caller answers 409) when the inbox is full.</summary>
    public bool EnqueuePull(PullRequest req)
    {
        if (Interlocked.Increment(ref _inboxCount) > InboxLimit)
        {
            Interlocked.Decrement(ref _inboxCount);
            return false;
        }
        _pulls.Enqueue(req);
        Kick();
        return true;
    }

    public ConsumerInfo Info()
    {
        lock (_lock)
        {
            var (floorC, floorS) = AckFloorLocked();
            return new ConsumerInfo
            {
                StreamName = _stream.Name,
                Name = Name,
                Created = Created,
                Config = Config,
                Delivered = new SequenceInfo { ConsumerSeq = _deliveredConsumerSeq, StreamSeq = _deliveredStreamSeq, LastActive = _deliveredLastActive },
                AckFloor = new SequenceInfo { ConsumerSeq = floorC, StreamSeq = floorS, LastActive = _ackLastActive },
                NumAckPending = _pending.Count,
                // nats-server infoWithSnapAndReply: max_deliver 1 disables redeliveries, so none is reported.
                NumRedelivered = Config.MaxDeliver == 1 ? 0 : _redelivered.Count,
                NumWaiting = _waiting.Count + _pulls.Count,
                NumPending = (ulong)Math.Max(0, Interlocked.Read(ref _numPending)),
                Cluster = new ClusterInfo { Leader = _stream.Js.ServerName },
                PushBound = DeliverSubject is not null && _stream.Js.HasInterest(DeliverSubject) ? true : null,
                Paused = PauseRemainingNanos() > 0 ? true : null,
                PauseRemaining = PauseRemainingNanos() is > 0 and var left ? left : null,
                Ts = DateTime.UtcNow,
                PriorityGroups = PriorityGroupsInfo(),
            };
        }
    }

    /// <summary>The ack floor as the consumer store keeps it (memstore.go consumerMemStore.UpdateAcks).</summary>
    private (ulong Consumer, ulong Stream) AckFloorLocked() => (_ackFloorConsumerSeq, _ackFloorStreamSeq);

    /// <summary>For interest retention: true once this consumer no longer needs <paramref name="sseq"/>.</summary>
    public bool IsDoneWith(ulong sseq, ReadOnlySpan<byte> subject)
    {
        if (!Matches(subject)) return true;
        lock (_lock) return sseq < _nextStreamSeq && !_pending.ContainsKey(sseq) && (_lastPerSubject is null || !_lastPerSubject.Contains(sseq));
    }
}
