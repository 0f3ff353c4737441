using System.Text;
using NatsBroker.Contracts;

[assembly: StreamStoreEngine(typeof(NatsBroker.Storage.TestEngine.ListStoreFactory))]

namespace NatsBroker.Storage.TestEngine;

/// <summary>A plug-in engine: a sorted dictionary of whole messages, O(n) where it is simplest. Not for production.</summary>
public sealed class ListStoreFactory : IStreamStoreFactory
{
    public string Name => "testlist";
    public bool IsPersistent => false;
    public StoreOpenResult Open(StreamStoreConfig config, string? directory) => StoreOpenResult.Ok(new ListStore(config));
}

internal sealed class ListStore(StreamStoreConfig config) : IStreamStore
{
    private sealed record Msg(string Subject, byte[] Subj, byte[] Hdr, byte[] Payload, long Ts, long Ttl)
    {
        public ulong Size => (ulong)(Subj.Length + Hdr.Length + Payload.Length);
    }

    private readonly Lock _lock = new();
    private readonly SortedDictionary<ulong, Msg> _msgs = [];
    private readonly Dictionary<string, Consumer> _consumers = [];
    private StreamLimits _limits = config.Limits;
    private ulong _last;
    private ulong _firstEmpty = 1;
    private long _lastTs;
    private bool _closed;

    public string EngineName => "testlist";
    public StreamStoreConfig Config { get; } = config;
    public string? LastError => _failure;
    public string? Failure => _failure;

    /// <summary>
    /// Engine option <c>fail_after_appends</c> (a test knob): after that many appends the store turns read-only as a
    /// file store does after an fsync error, so the host's reporting of <see cref="IStreamStore.Failure"/> can be tested.
    /// </summary>
    private readonly long _failAfterAppends = config.EngineOptions.TryGetValue("fail_after_appends", out var v) && long.TryParse(v, out var n) ? n : -1;
    private long _appends;
    private string? _failure;
    public IReadOnlyList<string> RecoveryReport => [];

    private long Now => (Config.Clock.GetUtcNow().UtcTicks - DateTime.UnixEpoch.Ticks) * 100;
    private ulong Bytes => _msgs.Values.Aggregate(0UL, (a, m) => a + m.Size);
    private ulong First => _msgs.Count > 0 ? _msgs.Keys.First() : _last + 1;

    public AppendResult Append(ReadOnlySpan<byte> subject, ReadOnlySpan<byte> headers, ReadOnlySpan<byte> payload, long timestamp = 0, long ttl = 0)
    {
        lock (_lock)
        {
            if (_failure is not null) return new AppendResult(StoreStatus.IoError, 0, 0);
            if (_failAfterAppends >= 0 && _appends >= _failAfterAppends)
            {
                _failure = $"testlist store '{Config.StreamName}': injected write failure after {_appends} appends; the store is read-only";
                return new AppendResult(StoreStatus.IoError, 0, 0);
            }
            _appends++;
            if (timestamp == 0) timestamp = Now;
            var st = Add(_last + 1, timestamp, subject, headers, payload, ttl);
            return new AppendResult(st, st == StoreStatus.Ok ? _last : 0, timestamp);
        }
    }

    public StoreStatus AppendAt(ulong sequence, long timestamp, ReadOnlySpan<byte> subject, ReadOnlySpan<byte> headers, ReadOnlySpan<byte> payload, long ttl = 0)
    {
        lock (_lock)
        {
            if (sequence <= _last) return StoreStatus.SequenceMismatch;
            return Add(sequence, timestamp == 0 ? Now : timestamp, subject, headers, payload, ttl);
        }
    }

    private StoreStatus Add(ulong seq, long ts, ReadOnlySpan<byte> subject, ReadOnlySpan<byte> headers, ReadOnlySpan<byte> payload, long ttl)
    {
        if (_closed) return StoreStatus.Closed;
        if (subject.IsEmpty || !SubjectMatch.IsLiteral(subject)) return StoreStatus.InvalidArgument;
        // This engine counts subject + headers + payload (IStreamStore.StoredSize's default); max_msg_size counts
        // headers + payload (StreamLimits.MaxMessageSize).
        var size = subject.Length + headers.Length + payload.Length;
        if (_limits.MaxMessageSize > 0 && headers.Length + payload.Length > _limits.MaxMessageSize) return StoreStatus.MessageTooLarge;
        Expire();
        var subj = Encoding.UTF8.GetString(subject);
        if (_limits.Discard == DiscardPolicy.New)
        {
            // A subject at max_msgs_per_subject replaces its oldest message (unless discard_new_per_subject refuses it).
            var oldest = _limits.MaxMessagesPerSubject > 0 ? _msgs.Values.Where(m => m.Subject == subj).ToList() : [];
            bool atSubjectLimit = _limits.MaxMessagesPerSubject > 0 && oldest.Count >= _limits.MaxMessagesPerSubject;
            if (atSubjectLimit && _limits.DiscardNewPerSubject) return StoreStatus.MaxMessagesPerSubjectExceeded;
            if (_limits.MaxMessages > 0 && _msgs.Count + 1 > _limits.MaxMessages && !atSubjectLimit) return StoreStatus.MaxMessagesExceeded;
            if (_limits.MaxBytes > 0 && Bytes + (ulong)size > (ulong)_limits.MaxBytes && (!atSubjectLimit || (int)oldest[0].Size < size))
                return StoreStatus.MaxBytesExceeded;
        }
        _hasTtl |= ttl > 0;
        _msgs[seq] = new Msg(subj, subject.ToArray(), headers.ToArray(), payload.ToArray(), ts, ttl);
        _last = seq;
        _lastTs = ts;
        Enforce();
        return StoreStatus.Ok;
    }

    private void Enforce()
    {
        if (_limits.MaxMessagesPerSubject > 0)
        {
            foreach (var g in _msgs.GroupBy(kv => kv.Value.Subject).ToList())
            {
                foreach (var kv in g.Take(Math.Max(0, g.Count() - (int)_limits.MaxMessagesPerSubject)).ToList()) _msgs.Remove(kv.Key);
            }
        }
        while (_limits.MaxMessages > 0 && _msgs.Count > _limits.MaxMessages) _msgs.Remove(_msgs.Keys.First());
        while (_limits.MaxBytes > 0 && _msgs.Count > 0 && Bytes > (ulong)_limits.MaxBytes) _msgs.Remove(_msgs.Keys.First());
        Expire();
        if (_msgs.Count == 0) _firstEmpty = _last + 1;
    }

    private bool _hasTtl;

    private void Expire()
    {
        if (_limits.MaxAge <= TimeSpan.Zero && !_hasTtl) return;
        long now = Now;
        foreach (var kv in _msgs.ToList())
        {
            bool aged = _limits.MaxAge > TimeSpan.Zero && kv.Value.Ts <= now - (_limits.MaxAge.Ticks * 100);
            bool ttl = kv.Value.Ttl > 0 && kv.Value.Ts + kv.Value.Ttl <= now;
            if (aged || ttl) _msgs.Remove(kv.Key);
        }
    }

    public StoreStatus SkipTo(ulong lastSequence)
    {
        lock (_lock)
        {
            if (lastSequence > _last) _last = lastSequence;
            return StoreStatus.Ok;
        }
    }

    private StoreStatus Fill(ulong seq, StoredMessage into)
    {
        if (!_msgs.TryGetValue(seq, out var m)) return seq >= First && seq <= _last ? StoreStatus.Deleted : StoreStatus.NotFound;
        into.Set(seq, m.Ts, m.Ttl, m.Subj, m.Hdr, m.Payload);
        return StoreStatus.Ok;
    }

    public StoreStatus Load(ulong sequence, StoredMessage into)
    {
        lock (_lock) return Fill(sequence, into);
    }

    public StoreStatus LoadLast(ReadOnlySpan<byte> subject, StoredMessage into)
    {
        lock (_lock)
        {
            foreach (var kv in _msgs.Reverse())
            {
                if (SubjectMatch.Matches(kv.Value.Subj, subject)) return Fill(kv.Key, into);
            }
            return StoreStatus.NotFound;
        }
    }

    public StoreStatus LoadNext(ReadOnlySpan<byte> filter, ulong fromSequence, StoredMessage into)
    {
        lock (_lock)
        {
            foreach (var kv in _msgs)
            {
                if (kv.Key >= fromSequence && SubjectMatch.Matches(kv.Value.Subj, filter)) return Fill(kv.Key, into);
            }
            return StoreStatus.NotFound;
        }
    }

    public StoreStatus Remove(ulong sequence)
    {
        lock (_lock)
        {
            if (_msgs.Remove(sequence))
            {
                if (_msgs.Count == 0) _firstEmpty = _last + 1;
                return StoreStatus.Ok;
            }
            return sequence >= First && sequence <= _last ? StoreStatus.Deleted : StoreStatus.NotFound;
        }
    }

    public StoreStatus Erase(ulong sequence) => Remove(sequence);

    public PurgeResult Purge(ReadOnlySpan<byte> filter = default, ulong upToSequence = 0, ulong keep = 0)
    {
        lock (_lock)
        {
            var f = filter.ToArray();
            var matching = _msgs.Where(kv => SubjectMatch.Matches(kv.Value.Subj, f)).Select(kv => kv.Key).ToList();
            ulong n = 0;
            int removable = Math.Max(0, matching.Count - (int)keep);
            foreach (var seq in matching.Take(removable))
            {
                if (upToSequence != 0 && seq >= upToSequence) break;
                _msgs.Remove(seq);
                n++;
            }
            if (_msgs.Count == 0) _firstEmpty = _last + 1;
            return new(StoreStatus.Ok, n);
        }
    }

    public PurgeResult Compact(ulong sequence)
    {
        lock (_lock)
        {
            ulong n = 0;
            foreach (var seq in _msgs.Keys.Where(k => k < sequence).ToList()) { _msgs.Remove(seq); n++; }
            if (sequence > _last + 1) _last = sequence - 1;
            if (_msgs.Count == 0) _firstEmpty = Math.Max(_last + 1, sequence);
            return new(StoreStatus.Ok, n);
        }
    }

    public StreamState GetState()
    {
        lock (_lock)
        {
            Expire();
            ulong first = _msgs.Count > 0 ? _msgs.Keys.First() : _last + 1;
            _ = _firstEmpty;
            return new StreamState
            {
                Messages = (ulong)_msgs.Count,
                Bytes = Bytes,
                FirstSequence = first,
                FirstTimestamp = _msgs.Count > 0 ? _msgs[first].Ts : 0,
                LastSequence = _last,
                LastTimestamp = _lastTs,
                Deleted = _msgs.Count > 0 ? _last - first + 1 - (ulong)_msgs.Count : 0,
                Subjects = _msgs.Values.Select(m => m.Subject).Distinct().Count(),
                Consumers = _consumers.Count,
            };
        }
    }

    public int GetSubjectCounts(ReadOnlySpan<byte> filter, IDictionary<string, ulong> into)
    {
        lock (_lock)
        {
            var f = filter.ToArray();
            var groups = _msgs.Values.Where(m => SubjectMatch.Matches(m.Subj, f)).GroupBy(m => m.Subject).ToList();
            foreach (var g in groups) into[g.Key] = (into.TryGetValue(g.Key, out var c) ? c : 0) + (ulong)g.Count();
            return groups.Count;
        }
    }

    public ulong CountMatching(ReadOnlySpan<byte> filter)
    {
        lock (_lock)
        {
            var f = filter.ToArray();
            return (ulong)_msgs.Values.Count(m => SubjectMatch.Matches(m.Subj, f));
        }
    }

    public StoreStatus UpdateLimits(StreamLimits limits)
    {
        lock (_lock)
        {
            _limits = limits;
            Enforce();
            return StoreStatus.Ok;
        }
    }

    public ValueTask<StoreStatus> FlushAsync(CancellationToken cancellationToken = default) => ValueTask.FromResult(StoreStatus.Ok);
    public ValueTask<StoreStatus> SnapshotAsync(Stream destination, CancellationToken cancellationToken = default) => StoreSnapshot.WriteAsync(this, destination, cancellationToken);

    public async ValueTask<StoreStatus> RestoreAsync(Stream source, CancellationToken cancellationToken = default)
        => (await StoreSnapshot.RestoreAsync(this, source, cancellationToken).ConfigureAwait(false)).Status;

    public StoreStatus OpenConsumer(string name, out IConsumerStore? consumer)
    {
        lock (_lock)
        {
            if (!_consumers.TryGetValue(name, out var c)) _consumers[name] = c = new Consumer(name, this);
            consumer = c;
            return StoreStatus.Ok;
        }
    }

    public IReadOnlyList<string> ConsumerNames()
    {
        lock (_lock) return [.. _consumers.Keys];
    }

    public StoreStatus Delete()
    {
        Dispose();
        return StoreStatus.Ok;
    }

    public void Dispose()
    {
        lock (_lock) _closed = true;
    }

    public ValueTask DisposeAsync()
    {
        Dispose();
        return ValueTask.CompletedTask;
    }

    private sealed class Consumer(string name, ListStore owner) : IConsumerStore
    {
        private readonly ConsumerState _state = new();
        public string Name => name;

        public StoreStatus UpdateDelivered(ulong consumerSequence, ulong streamSequence, ulong deliveries, long timestamp)
        {
            lock (_state) ConsumerStateCodec.ApplyDelivered(_state, consumerSequence, streamSequence, deliveries, timestamp);
            return StoreStatus.Ok;
        }

        public StoreStatus UpdateAcked(ulong consumerSequence, ulong streamSequence)
        {
            lock (_state) ConsumerStateCodec.ApplyAcked(_state, consumerSequence, streamSequence);
            return StoreStatus.Ok;
        }

        public StoreStatus Update(ConsumerState state)
        {
            lock (_state) state.CopyTo(_state);
            return StoreStatus.Ok;
        }

        public StoreStatus GetState(ConsumerState into)
        {
            lock (_state) _state.CopyTo(into);
            return StoreStatus.Ok;
        }

        public StoreStatus Delete()
        {
            lock (owner._lock) owner._consumers.Remove(name);
            return StoreStatus.Ok;
        }

        public void Dispose()
        {
        }
    }
}
