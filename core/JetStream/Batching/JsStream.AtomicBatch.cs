using System.Buffers;
using System.Buffers.Text;
using System.Text;
using System.Text.Json;
using NatsBroker.Contracts;
using NatsBroker.JetStream.Api;
using NatsBroker.JetStream.Batching;

namespace NatsBroker.JetStream;

// Atomic batch publish (ADR-50, nats-server stream.go processJetStreamAtomicBatchMsg and jetstream_batching.go
// checkMsgHeadersPreClusteredProposal): messages carrying Nats-Batch-Id / Nats-Batch-Sequence are staged by the
// ingest worker until the one with Nats-Batch-Commit, then checked together against the stream as it was before
// the batch and stored with one IStreamStore.AppendBatch (all or nothing, also across a crash).
internal sealed partial class JsStream
{
    public const string BatchIdHeader = "Nats-Batch-Id";
    public const string BatchSeqHeader = "Nats-Batch-Sequence";
    public const string BatchCommitHeader = "Nats-Batch-Commit";
    private const string ExpectedLastSubjSeqSubjectHeader = "Nats-Expected-Last-Subject-Sequence-Subject";
    /// <summary>nats-server limits batch ids to 64 characters.</summary>
    private const int MaxBatchIdLength = 64;

    private volatile AtomicBatchSet? _atomicBatches;
    private StagedBatch? _lastAtomicBatch; // worker thread only: the batch of the previous batch message
    // Commit-time bookkeeping, reused (worker thread only).
    private readonly Dictionary<string, (ulong Ops, ulong Bytes)> _batchInflight = new(StringComparer.Ordinal);
    private readonly HashSet<string> _batchMsgIds = new(StringComparer.Ordinal);
    private readonly Dictionary<string, ulong> _batchExpectedPerSubject = new(StringComparer.Ordinal);
    private char[] _subjectChars = new char[256];

    private AtomicBatchSet AtomicBatches => _atomicBatches ??= new AtomicBatchSet(Js.BatchCounters, Js.Options, id => SendBatchAbandoned(id, "timeout"));

    /// <summary>Drops the staged atomic batches (stream stopped, or allow_atomic turned off).</summary>
    private void ClearAtomicBatches() => _atomicBatches?.Clear();

    /// <summary>One message of an atomic batch; true when the batch was committed (messages stored).</summary>
    private bool ProcessAtomic(in Inbound m, ReadOnlySpan<byte> batchId)
    {
        var cfg = _config;
        var reply = m.Reply;
        var hdr = m.Headers;
        if (cfg.Sealed) return Fail(reply, JsErrors.StreamSealed);
        if (cfg.MaxMsgSize >= 0 && (hdr.Length > cfg.MaxMsgSize || m.Payload.Length > cfg.MaxMsgSize - hdr.Length))
            return Fail(reply, JsErrors.StreamMessageExceedsMaximum);
        if (cfg.AllowAtomic != true) return Fail(reply, BatchErrors.AtomicPublishDisabled);
        if (batchId.Length > MaxBatchIdLength) return Fail(reply, BatchErrors.AtomicPublishInvalidBatchId);
        if (!NatsHeaders.TryGetUInt64(hdr, BatchSeqHeader, out ulong seq, out _)) return Fail(reply, BatchErrors.AtomicPublishMissingSeq);

        bool commit = NatsHeaders.Has(hdr, BatchCommitHeader);
        var commitValue = NatsHeaders.Get(hdr, BatchCommitHeader);
        bool eob = commit && commitValue.SequenceEqual("eob"u8);
        bool commitInvalid = commit && !eob && !commitValue.SequenceEqual("1"u8);
        ulong size = eob ? seq - 1 : seq; // the end-of-batch marker is not stored, nor counted

        var set = AtomicBatches;
        if (!set.TryGet(batchId, _lastAtomicBatch, out var batch))
        {
            if (seq != 1)
            {
                int maxSize = BatchLimits.AtomicBatchSize(Js.Options);
                return Fail(reply, size > (ulong)maxSize
                    ? BatchErrors.AtomicPublishTooLargeBatch(maxSize)
                    : BatchErrors.AtomicPublishIncompleteBatch);
            }
            if (set.Start(Encoding.UTF8.GetString(batchId), out batch) != AtomicBatchSet.StartResult.Started) return Fail(reply, BatchErrors.AtomicPublishTooManyInflight);
        }
        _lastAtomicBatch = batch;
        string id = batch!.Id;
        if (commitInvalid)
        {
            Drop(set, batch!);
            return Fail(reply, BatchErrors.AtomicPublishInvalidBatchCommit);
        }
        // Nats-Required-Api-Level (nats-server 2.12+): too high abandons the batch ("unsupported"); the header is
        // never stored.
        if (ApiLevel.Present(hdr))
        {
            if (ApiLevel.RequiresMore(hdr))
            {
                Drop(set, batch!);
                SendBatchAbandoned(id, "unsupported");
                return Fail(reply, JsErrors.RequiredApiLevel);
            }
            var w = _scheduleHdr ??= new ArrayBufferWriter<byte>(256);
            w.ResetWrittenCount();
            ApiLevel.Strip(hdr, w);
            hdr = w.WrittenSpan;
        }
        if (seq != (ulong)batch!.Count + 1 || (seq == 1 && eob))
        {
            Drop(set, batch);
            SendBatchAbandoned(id, "incomplete");
            return Fail(reply, BatchErrors.AtomicPublishIncompleteBatch);
        }
        int maxBatchSize = BatchLimits.AtomicBatchSize(Js.Options);
        if (size > (ulong)maxBatchSize)
        {
            Drop(set, batch);
            SendBatchAbandoned(id, "large");
            return Fail(reply, BatchErrors.AtomicPublishTooLargeBatch(maxBatchSize));
        }
        batch.Add(m.Subject, hdr, m.Payload);
        if (!commit)
        {
            // An empty reply: staged (nats-server answers every non-commit message that has a reply this way).
            if (!reply.IsEmpty) Answer(reply, default);
            return false;
        }
        if (!set.Remove(batch))
        {
            // Timed out between the last message and this commit (the sweep already sent the advisory).
            batch.Dispose();
            return Fail(reply, BatchErrors.AtomicPublishIncompleteBatch);
        }
        try
        {
            return CommitAtomic(batch, eob, reply);
        }
        finally
        {
            batch.Dispose();
        }
    }

    private static void Drop(AtomicBatchSet set, StagedBatch batch)
    {
        set.Remove(batch);
        batch.Dispose();
    }

    private bool CommitAtomic(StagedBatch batch, bool eob, ReadOnlySpan<byte> reply)
    {
        if (eob)
        {
            batch.RemoveLast();
            // The last stored message carries the commit header, as if the batch had been committed with it.
            var w = new ArrayBufferWriter<byte>(batch.Headers(batch.Count - 1).Length + 64);
            NatsHeaders.AppendHeaders(batch.Headers(batch.Count - 1), [(BatchCommitHeader, "1")], w);
            batch.ReplaceLastHeaders(w.WrittenSpan);
        }
        var error = CheckBatch(batch);
        if (error is not null) return Fail(reply, error);

        var cfg = _config;
        // The account's / server's storage limits for the whole batch (JsAccount.Limits.cs): all or nothing.
        bool memory = cfg.Storage == StorageType.Memory;
        bool limited = _account.IsLimited(memory);
        if (limited)
        {
            long size = 0;
            for (int i = 0; i < batch.Count; i++) size += Store.StoredSize(batch.Subject(i).Length, batch.Headers(i).Length, batch.Payload(i).Length);
            if (_account.CheckIngest(memory, size) is { } limitError) return Fail(reply, limitError);
        }
        long now = GoTime.NowNanos();
        var result = Store.AppendBatch(batch, now);
        if (!result.IsOk) return Fail(reply, AppendFailed(result.Status));
        if (limited) _account.SyncUsage(this);
        int n = batch.Count;
        ulong first = result.Sequence - (ulong)n + 1;
        for (int i = 0; i < n; i++)
        {
            ulong seq = first + (ulong)i;
            var hdr = batch.Headers(i);
            if (hdr.IsEmpty) continue;
            var msgId = NatsHeaders.GetString(hdr, NatsHeaders.MsgId);
            if (msgId.Length > 0)
            {
                _dedupe[msgId] = (seq, now);
                _dedupeOrder.Enqueue((msgId, now));
                _lastMsgId = msgId;
            }
            var rollup = NatsHeaders.Get(hdr, NatsHeaders.Rollup);
            if (rollup.SequenceEqual("sub"u8)) Store.Purge(batch.Subject(i), seq, 0);
            else if (rollup.SequenceEqual("all"u8)) Store.Purge(default, seq, 0);
        }
        foreach (var c in _consumerSnapshot)
        {
            for (int i = 0; i < n; i++) c.OnStored(batch.Subject(i));
        }
        for (int i = 0; i < n && (_scheduling is { Count: > 0 } || _config.AllowMsgSchedules == true); i++)
        {
            var hdr = batch.Headers(i);
            if (_scheduling is { Count: > 0 } || MentionsSchedule(hdr)) OnScheduleStored(batch.Subject(i), hdr, first + (ulong)i, now, cfg);
        }
        if (cfg.Retention == RetentionPolicy.Interest && _consumerSnapshot.Length == 0)
        {
            for (ulong s = first; s <= result.Sequence; s++) Store.Remove(s);
        }
        if (!reply.IsEmpty) Answer(reply, BatchPubAck(result.Sequence, batch.Id, (ulong)n));
        return true;
    }

    /// <summary>
    /// The checks of every staged message against the stream as it is before the batch plus the messages before
    /// it in the batch (nats-server checkMsgHeadersPreClusteredProposal); null when the batch may be stored.
    /// </summary>
    private ApiError? CheckBatch(StagedBatch batch)
    {
        var cfg = _config;
        var state = Store.GetState();
        ulong clseq = state.LastSequence;
        ulong totalOps = 0, totalBytes = 0;
        _batchInflight.Clear();
        _batchMsgIds.Clear();
        _batchExpectedPerSubject.Clear();
        ExpireDedupe(GoTime.NowNanos(), cfg);
        for (int i = 0; i < batch.Count; i++)
        {
            var subject = batch.Subject(i);
            var hdr = batch.Headers(i);
            // The subject as chars for lookups without a string per message (a string only for a subject new to the batch).
            if (_subjectChars.Length < subject.Length) _subjectChars = new char[subject.Length * 2];
            var subjectChars = _subjectChars.AsSpan(0, Encoding.UTF8.GetChars(subject, _subjectChars));
            var inflightBySubject = _batchInflight.GetAlternateLookup<ReadOnlySpan<char>>();
            bool hasRollup = false;
            if (!hdr.IsEmpty)
            {
                bool expects = NatsHeaders.MentionsExpected(hdr);
                if (expects && !NatsHeaders.Get(hdr, NatsHeaders.ExpectedLastMsgId).IsEmpty) return BatchErrors.AtomicPublishUnsupportedHeaderBatch(NatsHeaders.ExpectedLastMsgId);
                if (hdr.Length > ushort.MaxValue) return JsErrors.StreamHeaderExceedsMaximum;
                var expStream = expects ? NatsHeaders.Get(hdr, NatsHeaders.ExpectedStream) : default;
                if (!expStream.IsEmpty && !expStream.SequenceEqual(NameBytes)) return JsErrors.StreamNotMatch;
                var msgId = NatsHeaders.GetString(hdr, NatsHeaders.MsgId);
                if (msgId.Length > 0)
                {
                    if (_batchMsgIds.Contains(msgId) || _dedupe.ContainsKey(msgId)) return BatchErrors.AtomicPublishContainsDuplicateMessage;
                    _batchMsgIds.Add(msgId);
                }
                if (expects && NatsHeaders.TryGetUInt64(hdr, NatsHeaders.ExpectedLastSeq, out ulong expLast, out _))
                {
                    if (expLast != clseq) return JsErrors.StreamWrongLastSequence(clseq);
                    if (_batchInflight.Count > 0) return BatchErrors.StreamWrongLastSequenceConstant;
                }
                var forSubject = expects ? NatsHeaders.Get(hdr, ExpectedLastSubjSeqSubjectHeader) : default;
                if (expects && NatsHeaders.TryGetUInt64(hdr, NatsHeaders.ExpectedLastSubjSeq, out ulong expSubj, out _))
                {
                    var seqSubject = forSubject.IsEmpty ? subject : forSubject;
                    string key = Encoding.UTF8.GetString(seqSubject);
                    if (_batchInflight.ContainsKey(key)) return BatchErrors.StreamWrongLastSequenceConstant;
                    if (!_batchExpectedPerSubject.TryGetValue(key, out ulong last))
                    {
                        last = LastSequenceOf(seqSubject);
                        _batchExpectedPerSubject[key] = last;
                    }
                    if (last != expSubj) return JsErrors.StreamWrongLastSequence(last);
                }
                else if (!forSubject.IsEmpty)
                {
                    return BatchErrors.StreamExpectedLastSeqPerSubjectInvalid;
                }
                // Message schedules (ADR-51) as for single publishes; a schedule gets Nats-Rollup: sub.
                if (MentionsSchedule(hdr) && !NatsHeaders.Has(hdr, JsSourcing.SourceHeader))
                {
                    var checkedHdr = hdr;
                    if (CheckScheduleHeaders(subject, ref checkedHdr, cfg) is { } scheduleError) return scheduleError;
                    if (checkedHdr.Length != hdr.Length)
                    {
                        batch.ReplaceHeaders(i, checkedHdr);
                        subject = batch.Subject(i);
                        hdr = batch.Headers(i);
                    }
                }
                var rollup = NatsHeaders.Get(hdr, NatsHeaders.Rollup);
                if (!rollup.IsEmpty)
                {
                    hasRollup = true;
                    if (!cfg.AllowRollupHdrs || cfg.DenyPurge) return JsErrors.StreamRollupFailed("rollup not permitted");
                    if (rollup.SequenceEqual("sub"u8))
                    {
                        if (inflightBySubject.ContainsKey(subjectChars)) return JsErrors.StreamRollupFailed("batch rollup sub invalid");
                    }
                    else if (rollup.SequenceEqual("all"u8))
                    {
                        if (_batchInflight.Count > 0) return JsErrors.StreamRollupFailed("batch rollup all invalid");
                    }
                    else
                    {
                        return JsErrors.StreamRollupFailed($"rollup value invalid: \"{Encoding.UTF8.GetString(rollup)}\"");
                    }
                }
            }
            // The store's own figure, as checkMsgHeadersPreClusteredProposal counts inflight bytes (fileStoreMsgSizeRaw /
            // memStoreMsgSizeRaw by the stream's storage).
            ulong size = (ulong)Store.StoredSize(subject.Length, hdr.Length, batch.Payload(i).Length);
            inflightBySubject.TryGetValue(subjectChars, out var inflight);
            inflight = (inflight.Ops + 1, inflight.Bytes + size);
            inflightBySubject[subjectChars] = inflight;
            totalOps++;
            totalBytes += size;
            if (cfg.Discard == StreamDiscardPolicy.New)
            {
                if (cfg.MaxMsgs > 0 && state.Messages + totalOps > (ulong)cfg.MaxMsgs) return JsErrors.StreamStoreFailed("maximum messages exceeded");
                if (cfg.MaxBytes > 0 && state.Bytes + totalBytes > (ulong)cfg.MaxBytes) return JsErrors.StreamStoreFailed("maximum bytes exceeded");
                if (cfg.DiscardNewPerSubject == true && cfg.MaxMsgsPerSubject > 0 && !hasRollup
                    && Store.CountMatching(subject) + inflight.Ops > (ulong)cfg.MaxMsgsPerSubject)
                    return JsErrors.StreamStoreFailed("maximum messages per subject exceeded");
            }
            clseq++;
        }
        return null;
    }

    /// <summary>{"stream":"S", "seq":N,"batch":"id","count":C} (nats-server appends the batch fields with Sprintf %q).</summary>
    private ReadOnlySpan<byte> BatchPubAck(ulong seq, string batchId, ulong count)
    {
        string quoted = JsonSerializer.Serialize(batchId, JsJsonContextStrings.Default.String);
        int need = _pubAckPrefix.Length + 64 + Encoding.UTF8.GetMaxByteCount(quoted.Length);
        var buf = need <= _pubAckScratch.Length ? _pubAckScratch : new byte[need];
        _pubAckPrefix.CopyTo(buf, 0);
        int n = _pubAckPrefix.Length;
        Utf8Formatter.TryFormat(seq, buf.AsSpan(n), out int w);
        n += w;
        n += Encoding.UTF8.GetBytes(",\"batch\":", buf.AsSpan(n));
        n += Encoding.UTF8.GetBytes(quoted, buf.AsSpan(n));
        n += Encoding.UTF8.GetBytes(",\"count\":", buf.AsSpan(n));
        Utf8Formatter.TryFormat(count, buf.AsSpan(n), out w);
        n += w;
        buf[n++] = (byte)'}';
        return buf.AsSpan(0, n);
    }

    /// <summary>$JS.EVENT.ADVISORY.STREAM.BATCH_ABANDONED.&lt;stream&gt; (nats-server sendStreamBatchAbandonedAdvisory).</summary>
    private void SendBatchAbandoned(string batchId, string reason)
    {
        var subject = Encoding.UTF8.GetBytes("$JS.EVENT.ADVISORY.STREAM.BATCH_ABANDONED." + Name);
        if (!Js.HasInterest(subject)) return;
        var adv = new BatchAbandonedAdvisory
        {
            Id = Guid.NewGuid().ToString("N"),
            Timestamp = DateTime.UtcNow,
            Stream = Name,
            Domain = Js.Domain is { Length: > 0 } d ? d : null,
            Batch = batchId,
            Reason = reason,
        };
        Js.Publish(subject, default, default, JsonSerializer.SerializeToUtf8Bytes(adv, BatchJsonContext.Default.BatchAbandonedAdvisory));
    }
}
