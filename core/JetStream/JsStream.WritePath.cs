using System.Text;
using NatsBroker.Contracts;
using NatsBroker.JetStream.Api;

namespace NatsBroker.JetStream;

// The write path of one published message in three steps (nats-server stream.go processJetStreamMsgWithBatch, whose
// clustered form checks on the leader, proposes, applies on every replica from applyStreamEntries and answers after
// the store returned):
//   check: limits, expectations, the duplicate window, headers (rollup, TTL, counters, schedules), account limits.
//          Reads the stream and its store, changes nothing; its outcome is a CheckedMessage, a duplicate or an error.
//   apply: append, the duplicate window and last msg id, rollup purges, account usage, republish, the consumers'
//          counts, schedules, interest removal. Decided by the checked message and the stream's state alone, so a
//          replica holding the same state would make the same changes from the same checked message.
//   ack:   the PubAck, after apply; held until the store's commit while the store needs one (Answer / FlushAcks), so
//          in the default sync mode no PubAck leaves before its message reached the OS.
// Atomic batches (Batching/JsStream.AtomicBatch.cs) check every staged message at the commit, then apply them as
// one IStreamStore.AppendBatch; mirrored copies (JsStream.Sources.cs StoreMirrored) skip the check: the origin
// made it.
internal sealed partial class JsStream
{
    /// <summary>What <see cref="CheckOne"/> decided.</summary>
    private enum CheckOutcome { Accepted, Duplicate, Refused }

    /// <summary>The Nats-Rollup a checked message asks for (its value was checked).</summary>
    private enum RollupKind { None, Subject, All }

    /// <summary>
    /// A message the check accepted, with everything the apply step needs decided: the subject after the stream's
    /// transform, the header block and payload as they will be stored (counter totals and a schedule's rollup
    /// written in), the arrival time, TTL and duplicate-window id. Spans into the inbound buffer or the stream's
    /// scratch buffers: valid until the next message (inside the ingest gate only); no allocation.
    /// </summary>
    private ref struct CheckedMessage
    {
        public ReadOnlySpan<byte> Subject;
        public ReadOnlySpan<byte> Headers;
        public ReadOnlySpan<byte> Payload;
        public string MsgId;
        public long Now;
        public long Ttl;
        public RollupKind Rollup;
        public bool Counter;
        public bool ScheduleHeaders;
        /// <summary>The account (or server) has a finite limit of this stream's storage kind: usage is kept exact.</summary>
        public bool Limited;
        /// <summary>The last sequence of the subject before this message, for a republish's Nats-Last-Sequence.</summary>
        public ulong RepublishLast;
    }

    /// <summary>
    /// Check, apply and ack of one message, answered on <paramref name="reply"/> (none when empty). The outcome is
    /// also left in <see cref="_lastIngestError"/> / <see cref="_lastDuplicateSeq"/> / <see cref="_lastStoredSeq"/>
    /// for callers that answer themselves (fast-ingest batches, schedules).
    /// </summary>
    private bool StoreOne(in Inbound m, ReadOnlySpan<byte> reply)
    {
        if (m.OriginSeq > 0) return StoreMirrored(m);
        _lastIngestError = null;
        _lastDuplicateSeq = 0;
        var cfg = _config;
        switch (CheckOne(m, cfg, out var cm, out var error, out ulong duplicateSeq))
        {
            case CheckOutcome.Refused:
                return Fail(reply, error!);
            case CheckOutcome.Duplicate:
                _lastDuplicateSeq = duplicateSeq;
                if (!reply.IsEmpty) Answer(reply, PubAck(duplicateSeq, duplicate: true));
                return false;
        }
        ulong seq = ApplyOne(ref cm, cfg, out var applyError);
        if (seq == 0) return Fail(reply, applyError!);
        AckOne(reply, seq, cm.Counter);
        return true;
    }

    /// <summary>
    /// The check step, in nats-server's order: sealed, header and message size, counter headers, the duplicate
    /// window, Nats-Expected-*, schedule headers, rollup, counter totals, TTL, account limits. No side effects
    /// beyond the stream's scratch buffers (counter totals, a schedule's rewritten header block).
    /// </summary>
    private CheckOutcome CheckOne(in Inbound m, StreamConfig cfg, out CheckedMessage cm, out ApiError? error, out ulong duplicateSeq)
    {
        cm = default;
        error = null;
        duplicateSeq = 0;
        var hdr = m.Headers;
        var subject = IngestSubject(m.Subject, cfg);
        if (cfg.Sealed) return Refuse(JsErrors.StreamSealed, out error);
        if (hdr.Length > MaxHeaderSize) return Refuse(JsErrors.StreamHeaderExceedsMaximum, out error);
        if (cfg.MaxMsgSize > 0 && hdr.Length + m.Payload.Length > cfg.MaxMsgSize) return Refuse(JsErrors.StreamMessageExceedsMaximum, out error);

        string msgId = "";
        bool scheduleHeaders = false;
        long now = GoTime.NowNanos();
        if (!hdr.IsEmpty)
        {
            if (CheckCounterHeaders(hdr, m.Payload.Length, cfg, m.Kind == Inbound.KindSourced) is { } counterError) return Refuse(counterError, out error);
            msgId = NatsHeaders.GetString(hdr, NatsHeaders.MsgId);
            if (msgId.Length > 0 && IsDuplicate(msgId, now, cfg, out duplicateSeq)) return CheckOutcome.Duplicate;
            // One scan decides whether any of the four Nats-Expected-* lookups can find something.
            bool expects = NatsHeaders.MentionsExpected(hdr);
            if (expects)
            {
                var expStream = NatsHeaders.Get(hdr, NatsHeaders.ExpectedStream);
                if (!expStream.IsEmpty && !expStream.SequenceEqual(NameBytes)) return Refuse(JsErrors.StreamNotMatch, out error);
                if (NatsHeaders.TryGetUInt64(hdr, NatsHeaders.ExpectedLastSeq, out ulong expLast, out bool hasLast) || hasLast)
                {
                    ulong last = Store.GetState().LastSequence;
                    if (!hasLast || expLast != last) return Refuse(JsErrors.StreamWrongLastSequence(last), out error);
                }
                if (NatsHeaders.TryGetUInt64(hdr, NatsHeaders.ExpectedLastSubjSeq, out ulong expSubj, out bool hasSubj) || hasSubj)
                {
                    ulong lastForSubject = LastSequenceOf(subject);
                    if (expSubj != lastForSubject) return Refuse(JsErrors.StreamWrongLastSequence(lastForSubject), out error);
                }
            }
            // Message schedules (ADR-51): only messages that mention a Nats-Schedule* header pay for the checks.
            scheduleHeaders = MentionsSchedule(hdr);
            if (scheduleHeaders && m.Kind != Inbound.KindScheduled && !NatsHeaders.Has(hdr, JsSourcing.SourceHeader)
                && CheckScheduleHeaders(subject, ref hdr, cfg) is { } scheduleError)
                return Refuse(scheduleError, out error);
            var expId = expects ? NatsHeaders.GetString(hdr, NatsHeaders.ExpectedLastMsgId) : "";
            if (expId.Length > 0 && expId != _lastMsgId) return Refuse(JsErrors.StreamWrongLastMsgId(_lastMsgId), out error);
            var rollup = NatsHeaders.Get(hdr, NatsHeaders.Rollup);
            if (!rollup.IsEmpty)
            {
                if (!cfg.AllowRollupHdrs) return Refuse(JsErrors.StreamRollupFailed("rollup not permitted"), out error);
                if (!rollup.SequenceEqual("sub"u8) && !rollup.SequenceEqual("all"u8))
                    return Refuse(JsErrors.StreamRollupFailed($"rollup value invalid: \"{Encoding.UTF8.GetString(rollup)}\""), out error);
            }
        }

        var payload = m.Payload;
        bool counter = cfg.AllowMsgCounter == true;
        if (counter)
        {
            if (CountIncrement(subject, hdr, m.Payload, out payload, out bool counterHeaders) is { } countError) return Refuse(countError, out error);
            if (counterHeaders) hdr = _counterHdr!.WrittenSpan;
            // nats-server checks the new total (and headers) against max_payload, then max_msg_size.
            int maxPayload = Js.Options.MaxPayload;
            if (hdr.Length > maxPayload || payload.Length > maxPayload - hdr.Length) return Refuse(JsErrors.StreamMessageExceedsMaximum, out error);
            if (cfg.MaxMsgSize > 0 && hdr.Length + payload.Length > cfg.MaxMsgSize) return Refuse(JsErrors.StreamMessageExceedsMaximum, out error);
        }
        if (!TryMessageTtl(hdr, cfg, out long ttl, out var ttlError)) return Refuse(ttlError!, out error);
        ulong republishLast = RepublishLastSequence(subject, cfg);
        // Account / server storage limits (processJetStreamMsg's limitsExceeded / wouldExceedLimits); only a limited
        // account pays for them: two counter reads here, one store state read after the append (JsAccount.Limits.cs).
        // The message counts what the store will add (wouldExceedLimits: memStoreMsgSize / fileStoreMsgSize).
        bool memory = cfg.Storage == StorageType.Memory;
        bool limited = _account.IsLimited(memory);
        if (limited && _account.CheckIngest(memory, Store.StoredSize(subject.Length, hdr.Length, payload.Length)) is { } limitError) return Refuse(limitError, out error);

        cm.Subject = subject;
        cm.Headers = hdr;
        cm.Payload = payload;
        cm.MsgId = msgId;
        cm.Now = now;
        cm.Ttl = ttl > 0 ? ttl : 0;
        // Read from the header block as stored: a schedule message carries the "Nats-Rollup: sub" written in above.
        cm.Rollup = hdr.IsEmpty ? RollupKind.None : RollupOf(NatsHeaders.Get(hdr, NatsHeaders.Rollup));
        cm.Counter = counter;
        cm.ScheduleHeaders = scheduleHeaders;
        cm.Limited = limited;
        cm.RepublishLast = republishLast;
        return CheckOutcome.Accepted;
    }

    private static CheckOutcome Refuse(ApiError reason, out ApiError? error)
    {
        error = reason;
        return CheckOutcome.Refused;
    }

    private static RollupKind RollupOf(ReadOnlySpan<byte> value) =>
        value.SequenceEqual("sub"u8) ? RollupKind.Subject : value.SequenceEqual("all"u8) ? RollupKind.All : RollupKind.None;

    /// <summary>
    /// Whether <paramref name="msgId"/> is inside the duplicate window: known and stored no longer than the window
    /// ago. The same answer <see cref="ExpireDedupe"/> followed by a lookup gives, without removing anything (the
    /// apply step expires the window).
    /// </summary>
    private bool IsDuplicate(string msgId, long now, StreamConfig cfg, out ulong seq)
    {
        long window = cfg.DuplicateWindow ?? DefaultDuplicateWindowNanos;
        if (_dedupe.TryGetValue(msgId, out var dup) && now - dup.Ts <= window)
        {
            seq = dup.Seq;
            return true;
        }
        seq = 0;
        return false;
    }

    /// <summary>
    /// The apply step: stores the checked message and makes its effects; the stored sequence, or 0 with
    /// <paramref name="error"/> when the store refused it (its own limits: discard new, max msgs per subject, ...).
    /// </summary>
    private ulong ApplyOne(ref CheckedMessage cm, StreamConfig cfg, out ApiError? error)
    {
        error = null;
        var result = Store.Append(cm.Subject, cm.Headers, cm.Payload, cm.Now, cm.Ttl);
        if (!result.IsOk)
        {
            error = AppendFailed(result.Status);
            return 0;
        }
        ulong seq = result.Sequence;
        _lastStoredSeq = seq;
        if (cm.Limited) _account.SyncUsage(this);

        if (cm.MsgId.Length > 0)
        {
            ExpireDedupe(cm.Now, cfg);
            _dedupe[cm.MsgId] = (seq, cm.Now);
            _dedupeOrder.Enqueue((cm.MsgId, cm.Now));
            _lastMsgId = cm.MsgId;
        }
        if (cm.Rollup == RollupKind.Subject) Store.Purge(cm.Subject, seq, 0);
        else if (cm.Rollup == RollupKind.All) Store.Purge(default, seq, 0);
        // nats-server republishes before it answers the publisher.
        Republish(cm.Subject, cm.Headers, cm.Payload, seq, cm.Now, cm.RepublishLast, cfg);
        foreach (var c in _consumerSnapshot) c.OnStored(cm.Subject);
        // Schedules: a schedule message, a produced one, or any message on a stream that holds schedules (a plain
        // message on a schedule's subject ends that schedule). After the consumers counted this message, so that
        // a purge of the fired schedule recounts them right.
        if (cm.ScheduleHeaders || _scheduling is { Count: > 0 }) OnScheduleStored(cm.Subject, cm.Headers, seq, cm.Now, cfg);
        if (cfg.Retention == RetentionPolicy.Interest && _consumerSnapshot.Length == 0) Store.Remove(seq);
        return seq;
    }

    /// <summary>The ack step: the PubAck of an applied message (held until the store's commit, see <see cref="Answer"/>).</summary>
    private void AckOne(ReadOnlySpan<byte> reply, ulong seq, bool counter)
    {
        if (!reply.IsEmpty) Answer(reply, counter ? CounterPubAck(seq) : PubAck(seq, duplicate: false));
    }
}
