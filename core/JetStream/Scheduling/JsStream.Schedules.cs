using System.Buffers;
using System.Text;
using Microsoft.Extensions.Logging;
using NatsBroker.Contracts;
using NatsBroker.JetStream.Api;
using NatsBroker.JetStream.Scheduling;

namespace NatsBroker.JetStream;

// Message schedules (ADR-51, nats-server 2.12–2.14: stream.go processJetStreamMsg's schedule checks and
// processJetStreamMsgWithRollup, scheduler.go, memstore.go/filestore.go storeRawMsg and runMsgScheduling).
// A message with Nats-Schedule on a stream with allow_msg_schedules holds a schedule for its subject (it gets
// Nats-Rollup: sub, so the newest message of the subject is the schedule). When it fires, the ingest worker stores a
// copy on Nats-Schedule-Target (or the last message of Nats-Schedule-Source) with the schedule headers removed and
// Nats-Scheduler / Nats-Schedule-Next (a time, or "purge" for @at, which then purges the schedule subject) added.
// The schedule state belongs to the ingest worker: a timer only queues a tick into the ingest queue. After a
// restart the state is rebuilt from the stored messages (Start → RecoverSchedules).
internal sealed partial class JsStream
{
    /// <summary>Go's lower bound between two scheduler runs (scheduler.go resetTimer), for ingest's sake.</summary>
    private const long MinScheduleDelayNanos = 250_000_000;
    /// <summary>A timer waits at most this long (System.Threading.Timer's limit is ~49 days); a run then re-plans.</summary>
    private const long MaxScheduleDelayNanos = 24L * 3600 * 1_000_000_000;

    private volatile MsgScheduling? _scheduling;
    private Timer? _scheduleTimer;
    private long _scheduleDeadline; // ingest worker only; 0 when no run is planned
    private int _scheduleTickQueued;
    private ArrayBufferWriter<byte>? _scheduleHdr; // ingest worker only: the rewritten header block

    /// <summary>True when a header block may mention a schedule header (one vectorised scan; no allocation).</summary>
    private static bool MentionsSchedule(ReadOnlySpan<byte> hdr) => hdr.IndexOf("\r\nNats-Schedul"u8) >= 0;

    /// <summary>
    /// The schedule checks of a published message (nats-server processJetStreamMsg, in its order), on the ingest
    /// worker; null when it may be stored. A schedule message without Nats-Rollup gets "Nats-Rollup: sub" in a
    /// rewritten header block (<paramref name="hdr"/>). Messages the scheduler produced and sourced copies are not
    /// checked (nats-server passes them as sourced).
    /// </summary>
    private ApiError? CheckScheduleHeaders(ReadOnlySpan<byte> subject, ref ReadOnlySpan<byte> hdr, StreamConfig cfg)
    {
        bool allowed = cfg.AllowMsgSchedules == true;
        if (!MsgSchedulePattern.TryLocation(hdr, out var zone)) return allowed ? ScheduleErrors.TimeZoneInvalid : ScheduleErrors.Disabled;
        string pattern = NatsHeaders.GetString(hdr, MsgSchedulePattern.PatternHeader);
        long now = GoTime.NowNanos();
        if (!MsgSchedulePattern.TryNext(pattern, zone, now, now, out var next)) return allowed ? ScheduleErrors.PatternInvalid : ScheduleErrors.Disabled;
        string subj = Encoding.UTF8.GetString(subject);
        if (next.Has)
        {
            if (!allowed) return ScheduleErrors.Disabled;
            var ttl = NatsHeaders.GetString(hdr, MsgSchedulePattern.TtlHeader);
            if (ttl.Length > 0 && !ParseTtl(ttl, out _)) return ScheduleErrors.TtlInvalid;
            var rollup = NatsHeaders.Get(hdr, MsgSchedulePattern.RollupHeader);
            if (!rollup.IsEmpty && !rollup.SequenceEqual("sub"u8)) return ScheduleErrors.RollupInvalid;
            if (ttl.Length > 0 && !cfg.AllowMsgTtl) return JsErrors.MessageTtlDisabled;
            string target = NatsHeaders.GetString(hdr, MsgSchedulePattern.TargetHeader);
            if (target.Length == 0 || !MsgSchedulePattern.IsValidPublishSubject(target) || target == subj) return ScheduleErrors.TargetInvalid;
            string source = NatsHeaders.GetString(hdr, MsgSchedulePattern.SourceHeader);
            if (source.Length > 0 && (source == target || source == subj || !MsgSchedulePattern.IsValidPublishSubject(source))) return ScheduleErrors.SourceInvalid;
            var subjects = cfg.Subjects ?? [];
            if (!subjects.Any(s => JsSubjects.Collide(s, target))) return ScheduleErrors.TargetInvalid;
            if (source.Length > 0 && !subjects.Any(s => JsSubjects.Collide(s, source))) return ScheduleErrors.SourceInvalid;
            var own = NatsHeaders.Get(hdr, NatsHeaders.Rollup);
            if (own.IsEmpty)
            {
                var w = _scheduleHdr ??= new ArrayBufferWriter<byte>(256);
                w.ResetWrittenCount();
                NatsHeaders.AppendHeaders(hdr, [(NatsHeaders.Rollup, "sub")], w);
                hdr = w.WrittenSpan;
            }
            else if (!own.SequenceEqual("sub"u8))
            {
                return ScheduleErrors.RollupInvalid;
            }
        }
        var scheduleNext = NatsHeaders.Get(hdr, MsgSchedulePattern.NextHeader);
        var scheduler = NatsHeaders.GetString(hdr, MsgSchedulePattern.SchedulerHeader);
        if (!scheduleNext.IsEmpty)
        {
            // Clients may use Nats-Schedule-Next only to purge a schedule, naming it in Nats-Scheduler.
            if (!scheduleNext.SequenceEqual("purge"u8)) return ScheduleErrors.SchedulerInvalid;
            if (scheduler.Length == 0 || scheduler == subj || !MsgSchedulePattern.IsValidPublishSubject(scheduler)) return ScheduleErrors.SchedulerInvalid;
            if (!allowed) return ScheduleErrors.Disabled;
            // The purged subject must hold a schedule, if it holds anything (nats-server stays lenient when empty).
            var probe = t_probe ??= new StoredMessage(64);
            if (Store.LoadLast(Encoding.UTF8.GetBytes(scheduler), probe) == StoreStatus.Ok
                && NatsHeaders.Get(probe.Headers, MsgSchedulePattern.PatternHeader).IsEmpty)
                return ScheduleErrors.SchedulerInvalid;
        }
        else if (scheduler.Length > 0)
        {
            return ScheduleErrors.SchedulerInvalid;
        }
        return null;
    }

    /// <summary>
    /// After a message with schedule headers was stored (nats-server storeRawMsg and processJetStreamMsgWithRollup):
    /// a schedule is added or replaced, a plain message on a schedule subject ends its schedule, a produced
    /// repeating message moves its schedule on, and "Nats-Schedule-Next: purge" purges the schedule subject.
    /// </summary>
    private void OnScheduleStored(ReadOnlySpan<byte> subject, ReadOnlySpan<byte> hdr, ulong seq, long ts, StreamConfig cfg)
    {
        var scheduling = _scheduling;
        var nextText = NatsHeaders.Get(hdr, MsgSchedulePattern.NextHeader);
        string scheduler = NatsHeaders.GetString(hdr, MsgSchedulePattern.SchedulerHeader);
        if (scheduling is not null)
        {
            if (TryScheduleOf(hdr, ts, out var next)) scheduling.Add(seq, Encoding.UTF8.GetString(subject), next.Nanos);
            else if (scheduler.Length == 0) scheduling.RemoveSubject(Encoding.UTF8.GetString(subject));
            if (!nextText.IsEmpty && !nextText.SequenceEqual("purge"u8) && scheduler.Length > 0
                && MsgSchedulePattern.TryParseRfc3339(Encoding.ASCII.GetString(nextText), out long at))
                scheduling.Update(scheduler, at);
            ResetScheduleTimer();
        }
        if (nextText.SequenceEqual("purge"u8) && scheduler.Length > 0 && cfg.AllowRollupHdrs && !cfg.DenyPurge)
        {
            var purged = Store.Purge(Encoding.UTF8.GetBytes(scheduler));
            scheduling?.RemoveSubject(scheduler);
            if (purged.Purged > 0)
            {
                foreach (var c in _consumerSnapshot) c.OnStreamChanged();
            }
        }
    }

    /// <summary>A stored message's schedule, computed from when it was stored (nats-server nextMessageSchedule).</summary>
    private static bool TryScheduleOf(ReadOnlySpan<byte> hdr, long ts, out ScheduleNext next)
    {
        next = default;
        if (!MsgSchedulePattern.TryLocation(hdr, out var zone)) return false;
        string pattern = NatsHeaders.GetString(hdr, MsgSchedulePattern.PatternHeader);
        return MsgSchedulePattern.TryNext(pattern, zone, ts, GoTime.NowNanos(), out next) && next.Has;
    }

    /// <summary>On start: the schedules of the stored messages (nats-server recoverMsgSchedulingState, a linear scan).</summary>
    private void RecoverSchedules()
    {
        if (_config.AllowMsgSchedules != true) return;
        var scheduling = new MsgScheduling();
        var msg = new StoredMessage(256);
        ulong seq = Store.GetState().FirstSequence;
        while (Store.LoadNext(default, seq, msg) == StoreStatus.Ok)
        {
            seq = msg.Sequence + 1;
            var hdr = msg.Headers;
            if (hdr.IsEmpty || !MentionsSchedule(hdr)) continue;
            if (TryScheduleOf(hdr, msg.Timestamp, out var next)) scheduling.Add(msg.Sequence, msg.SubjectString, next.Nanos);
        }
        _scheduling = scheduling;
        _scheduleTimer = new Timer(_ => QueueScheduleTick(), null, Timeout.Infinite, Timeout.Infinite);
        ResetScheduleTimer();
    }

    /// <summary>After an update turned schedules on.</summary>
    private void EnableSchedules()
    {
        if (_config.AllowMsgSchedules != true || _scheduling is not null) return;
        _scheduleTimer ??= new Timer(_ => QueueScheduleTick(), null, Timeout.Infinite, Timeout.Infinite);
        _scheduling = new MsgScheduling();
    }

    private void StopSchedules()
    {
        _scheduleTimer?.Dispose();
        _scheduleTimer = null;
    }

    /// <summary>
    /// Plans the next run at the earliest schedule, at least 250 ms from now, never later than one already planned
    /// (nats-server resetTimer: a timer pushed back on every add might never run).
    /// </summary>
    private void ResetScheduleTimer()
    {
        var scheduling = _scheduling;
        var timer = _scheduleTimer;
        if (scheduling is null || timer is null) return;
        if (scheduling.NextFire is not { } next)
        {
            timer.Change(Timeout.Infinite, Timeout.Infinite);
            _scheduleDeadline = 0;
            return;
        }
        long now = GoTime.NowNanos();
        long fireIn = Math.Clamp(next - now, MinScheduleDelayNanos, MaxScheduleDelayNanos);
        long deadline = now + fireIn;
        if (_scheduleDeadline > 0 && deadline > _scheduleDeadline) return;
        _scheduleDeadline = deadline;
        timer.Change(TimeSpan.FromTicks(fireIn / 100), Timeout.InfiniteTimeSpan);
    }

    /// <summary>Timer thread: queue one tick for the ingest worker; when its queue is full, try again later.</summary>
    private void QueueScheduleTick()
    {
        if (IsDeleted || Interlocked.Exchange(ref _scheduleTickQueued, 1) != 0) return;
        if (TryQueue(Inbound.ScheduleTick)) return;
        Volatile.Write(ref _scheduleTickQueued, 0);
        try { _scheduleTimer?.Change(TimeSpan.FromTicks(MinScheduleDelayNanos / 100), Timeout.InfiniteTimeSpan); }
        catch (ObjectDisposedException) { /* the stream stopped meanwhile: nothing left to schedule */ }
    }

    /// <summary>
    /// Ingest worker, on a tick: produce the messages of every due schedule, in the schedules' stream order, and
    /// store them as published without a reply (nats-server getScheduledMessages + processJetStreamMsg). True when
    /// one was stored.
    /// </summary>
    private bool RunSchedules()
    {
        Volatile.Write(ref _scheduleTickQueued, 0);
        _scheduleDeadline = 0;
        var scheduling = _scheduling;
        if (scheduling is null) return false;
        long now = GoTime.NowNanos();
        var produced = new List<(ulong Seq, byte[] Buffer, int Subject, int Headers, int Payload)>();
        var msg = new StoredMessage(256);
        var src = new StoredMessage(256);
        foreach (var (seq, ts) in scheduling.Due(now))
        {
            if (Store.Load(seq, msg) != StoreStatus.Ok)
            {
                scheduling.Remove(seq);
                continue;
            }
            string subj = msg.SubjectString;
            if (scheduling.IsInflight(subj)) continue;
            var hdr = msg.Headers;
            string pattern = NatsHeaders.GetString(hdr, MsgSchedulePattern.PatternHeader);
            string ttl = NatsHeaders.GetString(hdr, MsgSchedulePattern.TtlHeader);
            string target = NatsHeaders.GetString(hdr, MsgSchedulePattern.TargetHeader);
            if (pattern.Length == 0 || !MsgSchedulePattern.TryLocation(hdr, out var zone)
                || !MsgSchedulePattern.TryNext(pattern, zone, ts, now, out var next)
                || (ttl.Length > 0 && !ParseTtl(ttl, out _)) || target.Length == 0)
            {
                scheduling.Remove(seq);
                continue;
            }
            string rollup = NatsHeaders.GetString(hdr, MsgSchedulePattern.RollupHeader);
            string source = NatsHeaders.GetString(hdr, MsgSchedulePattern.SourceHeader);
            var body = msg;
            // The source's last message, or the schedule's own content when the source has none.
            if (source.Length > 0 && Store.LoadLast(Encoding.UTF8.GetBytes(source), src) == StoreStatus.Ok) body = src;

            var extra = new List<(string, string)>(4)
            {
                (MsgSchedulePattern.SchedulerHeader, subj),
                (MsgSchedulePattern.NextHeader, next.Repeat ? MsgSchedulePattern.FormatRfc3339Nano(next.Nanos, next.Offset) : MsgSchedulePattern.NextPurge),
            };
            if (ttl.Length > 0) extra.Add((TtlHeader, ttl));
            if (rollup.Length > 0) extra.Add((NatsHeaders.Rollup, rollup));
            var headers = ScheduledHeaders(body.Headers, extra);
            var targetBytes = Encoding.UTF8.GetBytes(target);
            var buf = InboundBuffers.Rent(Math.Max(1, targetBytes.Length + headers.Length + body.PayloadLength));
            targetBytes.CopyTo(buf, 0);
            headers.CopyTo(buf, targetBytes.Length);
            body.Payload.CopyTo(buf.AsSpan(targetBytes.Length + headers.Length));
            produced.Add((seq, buf, targetBytes.Length, headers.Length, body.PayloadLength));
            scheduling.MarkInflight(subj);
        }
        produced.Sort((a, b) => a.Seq.CompareTo(b.Seq));
        bool stored = false;
        foreach (var p in produced)
        {
            var m = new Inbound(p.Buffer, p.Subject, 0, p.Headers, p.Payload, kind: Inbound.KindScheduled);
            try
            {
                if (StoreOne(m, default)) stored = true;
                else if (_lastIngestError is { } err)
                    Js.Logger.LogWarning("JetStream stream {Stream}: a scheduled message was not stored: {Error}", Name, err.Description);
            }
            finally
            {
                m.Return();
            }
        }
        ResetScheduleTimer();
        return stored;
    }

    /// <summary>
    /// The produced message's headers: the schedule's (or source's) without Nats-Schedule*, Nats-Expected-*,
    /// Nats-Msg-Id, Nats-TTL and Nats-Rollup, then <paramref name="extra"/> (nats-server getScheduledMessages).
    /// </summary>
    private static byte[] ScheduledHeaders(ReadOnlySpan<byte> hdr, List<(string Key, string Value)> extra)
    {
        var sb = new StringBuilder();
        var text = Encoding.UTF8.GetString(hdr);
        var lines = text.Split("\r\n");
        sb.Append(lines.Length > 0 && lines[0].StartsWith("NATS/", StringComparison.Ordinal) ? lines[0] : "NATS/1.0").Append("\r\n");
        for (int i = 1; i < lines.Length; i++)
        {
            var line = lines[i];
            if (line.Length == 0) continue;
            int colon = line.IndexOf(':');
            string key = colon < 0 ? line : line[..colon];
            if (key.StartsWith("Nats-Schedule", StringComparison.Ordinal) || key.StartsWith("Nats-Expected-", StringComparison.Ordinal)
                || key is NatsHeaders.MsgId or TtlHeader or NatsHeaders.Rollup)
                continue;
            sb.Append(line).Append("\r\n");
        }
        foreach (var (k, v) in extra) sb.Append(k).Append(": ").Append(v).Append("\r\n");
        sb.Append("\r\n");
        return Encoding.UTF8.GetBytes(sb.ToString());
    }
}
