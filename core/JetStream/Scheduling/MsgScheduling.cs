namespace NatsBroker.JetStream.Scheduling;

/// <summary>
/// The schedules of one stream (nats-server scheduler.go MsgScheduling): per schedule subject the sequence of the
/// message holding it and when it fires next, ordered by that time, and the subjects whose produced message is on
/// its way into the stream (not fired again until it is stored). Owned by the stream's ingest worker: no locks.
/// </summary>
internal sealed class MsgScheduling
{
    private readonly Dictionary<string, (ulong Seq, long Ts)> _schedules = new(StringComparer.Ordinal);
    private readonly Dictionary<ulong, string> _seqToSubject = [];
    private readonly SortedSet<(long Ts, ulong Seq)> _byTime = [];
    private readonly HashSet<string> _inflight = new(StringComparer.Ordinal);

    public int Count => _schedules.Count;

    /// <summary>The message at <paramref name="seq"/> holds the schedule of <paramref name="subject"/> (replacing an older one).</summary>
    public void Add(ulong seq, string subject, long ts)
    {
        if (_schedules.TryGetValue(subject, out var old))
        {
            _seqToSubject.Remove(old.Seq);
            _byTime.Remove((old.Ts, old.Seq));
        }
        _schedules[subject] = (seq, ts);
        _byTime.Add((ts, seq));
        _seqToSubject[seq] = subject;
        _inflight.Remove(subject);
    }

    /// <summary>A repeating schedule's message was stored: it fires next at <paramref name="ts"/>.</summary>
    public void Update(string subject, long ts)
    {
        if (!_schedules.TryGetValue(subject, out var cur)) return;
        _byTime.Remove((cur.Ts, cur.Seq));
        _byTime.Add((ts, cur.Seq));
        _schedules[subject] = (cur.Seq, ts);
        _inflight.Remove(subject);
    }

    public void MarkInflight(string subject)
    {
        if (_schedules.ContainsKey(subject)) _inflight.Add(subject);
    }

    public bool IsInflight(string subject) => _inflight.Contains(subject);

    public void Remove(ulong seq)
    {
        if (_seqToSubject.TryGetValue(seq, out var subject)) RemoveSubject(subject);
    }

    public void RemoveSubject(string subject)
    {
        if (!_schedules.Remove(subject, out var cur)) return;
        _byTime.Remove((cur.Ts, cur.Seq));
        _seqToSubject.Remove(cur.Seq);
        _inflight.Remove(subject);
    }

    /// <summary>When the earliest schedule fires (Unix nanoseconds), or null when there is none.</summary>
    public long? NextFire => _byTime.Count == 0 ? null : _byTime.Min.Ts;

    /// <summary>The schedules due at <paramref name="now"/>, as (sequence, fire time), earliest first.</summary>
    public List<(ulong Seq, long Ts)> Due(long now)
    {
        var due = new List<(ulong, long)>();
        foreach (var (ts, seq) in _byTime)
        {
            if (ts > now) break;
            due.Add((seq, ts));
        }
        return due;
    }
}
