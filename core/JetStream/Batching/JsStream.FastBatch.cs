using System.Buffers;
using System.Buffers.Text;
using System.Text;
using System.Text.Json;
using NatsBroker.JetStream.Api;
using NatsBroker.JetStream.Batching;

namespace NatsBroker.JetStream;

// Fast-ingest batch publish (ADR-50, nats-server 2.14 stream.go processJetStreamFastBatchMsg and
// jetstream_batching.go): the batch state travels in the reply subject; messages are stored as they come (no
// staging, no size limit) and answered only with a flow acknowledgement every N messages, gap and error reports,
// and the final PubAck. On one server each message is stored before the next is read, so the acknowledgement for
// batch sequence N means every message up to N was stored (gap mode fail) or handled (gap mode ok).
internal sealed partial class JsStream
{
    public static ReadOnlySpan<byte> FastBatchSuffix => ".$FI"u8;

    private volatile FastBatchSet? _fastBatches;
    private readonly byte[] _flowScratch = new byte[96];
    private FastBatch? _lastFastBatch; // inside the ingest gate only
    private FastBatchReplyParser? _fastReplies; // inside the ingest gate only; made by the stream's first fast-ingest message

    private FastBatchSet FastBatches => _fastBatches ??= new FastBatchSet(Js.BatchCounters, Js.Options);

    private void ClearFastBatches() => _fastBatches?.Clear();

    /// <summary>One fast-ingest message (or ping); true when a message was stored.</summary>
    private bool ProcessFast(in Inbound m)
    {
        var cfg = _config;
        var reply = m.Reply;
        var hdr = m.Headers;
        if (cfg.Sealed) return Fail(reply, JsErrors.StreamSealed);
        if (cfg.MaxMsgSize >= 0 && (hdr.Length > cfg.MaxMsgSize || m.Payload.Length > cfg.MaxMsgSize - hdr.Length))
            return Fail(reply, JsErrors.StreamMessageExceedsMaximum);
        if (cfg.AllowBatched != true) return Fail(reply, BatchErrors.BatchPublishDisabled);
        if (!(_fastReplies ??= new()).TryParse(reply, out var fb)) return Fail(reply, BatchErrors.BatchPublishInvalidPattern);
        var idBytes = reply[fb.Id];
        if (idBytes.Length > MaxBatchIdLength) return Fail(reply, BatchErrors.BatchPublishInvalidBatchId);

        var set = FastBatches;
        if (!set.TryGet(idBytes, _lastFastBatch, out var b))
        {
            if (fb.Seq != 1) return Fail(reply, BatchErrors.BatchPublishUnknownBatchId);
            b = set.Start(Encoding.UTF8.GetString(idBytes), fb.GapOk, fb.Flow)!;
            if (b is null) return Fail(reply, BatchErrors.BatchPublishTooManyInflight);
        }
        _lastFastBatch = b;
        string id = b.Id;
        // Nats-Required-Api-Level (nats-server 2.14): too high ends the batch with the error; the header is never stored.
        if (ApiLevel.Present(hdr))
        {
            if (ApiLevel.RequiresMore(hdr))
            {
                set.Remove(b);
                return Fail(reply, JsErrors.RequiredApiLevel);
            }
            return ProcessFastStripped(m, set, b, fb);
        }
        return ProcessFastMessage(m, set, b, fb);
    }

    /// <summary>The message again, its headers without Nats-Required-Api-Level (a rare path: one copy).</summary>
    private bool ProcessFastStripped(in Inbound m, FastBatchSet set, FastBatch b, FastBatchReply fb)
    {
        var w = new ArrayBufferWriter<byte>(m.Headers.Length);
        ApiLevel.Strip(m.Headers, w);
        int total = m.Subject.Length + m.Reply.Length + w.WrittenCount + m.Payload.Length;
        var buf = InboundBuffers.Rent(Math.Max(1, total));
        m.Subject.CopyTo(buf);
        m.Reply.CopyTo(buf.AsSpan(m.Subject.Length));
        w.WrittenSpan.CopyTo(buf.AsSpan(m.Subject.Length + m.Reply.Length));
        m.Payload.CopyTo(buf.AsSpan(m.Subject.Length + m.Reply.Length + w.WrittenCount));
        var stripped = new Inbound(buf, m.Subject.Length, m.Reply.Length, w.WrittenCount, m.Payload.Length);
        try
        {
            // The reply subject is the same bytes, so the parsed ranges in fb still apply to stripped.Reply.
            return ProcessFastMessage(stripped, set, b, fb);
        }
        finally
        {
            stripped.Return();
        }
    }

    private bool ProcessFastMessage(in Inbound m, FastBatchSet set, FastBatch b, FastBatchReply fb)
    {
        var reply = m.Reply;
        string id = b.Id;

        if (fb.Op == FastBatchReply.OpPing)
        {
            // Resends the latest flow acknowledgement; reports messages the client sent that never arrived.
            bool sendFlow = true;
            if (fb.Seq > b.LastSeq)
            {
                SendFlowGap(reply, b.LastSeq + 1, fb.Seq + 1);
                if (b.GapOk)
                {
                    b.LastSeq = b.PersistedSeq = fb.Seq;
                    sendFlow = !CheckFlowControl(set, b, reply);
                }
                else
                {
                    EndFastBatch(set, b, reply);
                    sendFlow = false;
                }
            }
            if (sendFlow) SendFlowAck(reply, b.FlowSeq, b.AckMessages);
            return false;
        }

        // Gap detection: the next message must be LastSeq + 1.
        ulong expected = b.LastSeq + 1;
        if (fb.Seq != expected)
        {
            if (fb.Seq > expected) SendFlowGap(reply, expected, fb.Seq);
            if (!(b.GapOk && fb.Seq > expected))
            {
                // A backward gap, or gap mode fail: the batch ends with what was stored.
                EndFastBatch(set, b, reply);
                return false;
            }
        }
        b.LastSeq = fb.Seq;

        if (fb.Op == FastBatchReply.OpCommitEob)
        {
            b.LastSeq--; // the end-of-batch message is not stored, nor counted
            b.PersistedSeq = b.LastSeq;
            EndFastBatch(set, b, reply);
            return false;
        }

        // The first message gets the flow to start at (unless it commits at once: then only the PubAck).
        if (fb.Seq == 1 && !fb.Commit) SendFlowAck(reply, 0, b.AckMessages);

        bool stored = StoreOne(m, default);
        if (stored)
        {
            b.StreamSeq = _lastStoredSeq;
            b.PersistedSeq = b.LastSeq;
            if (fb.Commit)
            {
                EndFastBatch(set, b, reply);
                return true;
            }
            CheckFlowControl(set, b, reply);
            return true;
        }

        // Refused: a duplicate is skipped; any other error is reported (BatchFlowErr).
        bool duplicate = _lastDuplicateSeq != 0;
        var error = _lastIngestError;
        if (duplicate)
        {
            b.PersistedSeq = fb.Seq;
            CheckFlowControl(set, b, reply);
            if (!fb.Commit) return false;
        }
        if (!b.GapOk && b.LastSeq == 1)
        {
            // A batch whose first message fails answers like a plain publish.
            set.Remove(b);
            if (duplicate) Answer(reply, DuplicateBatchPubAck(_lastDuplicateSeq, id, fb.Seq));
            else if (error is not null) Answer(reply, PubAckError(error));
            return false;
        }
        if (!duplicate && error is not null) SendFlowErr(reply, fb.Seq, error);
        if (b.GapOk && !fb.Commit) return false;
        if (!duplicate)
        {
            b.LastSeq--;
            b.PersistedSeq = b.LastSeq;
        }
        EndFastBatch(set, b, reply);
        return false;
    }

    /// <summary>Ends the batch and sends its PubAck: the last stored stream sequence and the batch's size (nats-server fastBatchCommit).</summary>
    private void EndFastBatch(FastBatchSet set, FastBatch b, ReadOnlySpan<byte> reply)
    {
        set.Remove(b);
        if (!reply.IsEmpty) Answer(reply, BatchPubAck(b.StreamSeq, b.Id, b.LastSeq));
    }

    /// <summary>Sends a flow acknowledgement once AckMessages more messages were stored, adjusting the flow (nats-server checkFlowControl).</summary>
    private bool CheckFlowControl(FastBatchSet set, FastBatch b, ReadOnlySpan<byte> reply)
    {
        ulong am = b.AckMessages;
        if (b.PersistedSeq < b.FlowSeq + am) return false;
        ulong steps = (b.PersistedSeq - b.FlowSeq) / am;
        b.FlowSeq += steps * am;
        b.AckMessages = set.NextFlow(b);
        SendFlowAck(reply, b.FlowSeq, b.AckMessages);
        return true;
    }

    /// <summary>{"type":"ack","seq":N,"msgs":F} (nats-server BatchFlowAck).</summary>
    private void SendFlowAck(ReadOnlySpan<byte> reply, ulong seq, ushort msgs)
    {
        if (reply.IsEmpty) return;
        var buf = _flowScratch.AsSpan();
        int n = Write(buf, "{\"type\":\"ack\",\"seq\":"u8);
        Utf8Formatter.TryFormat(seq, buf[n..], out int w);
        n += w;
        n += Write(buf[n..], ",\"msgs\":"u8);
        Utf8Formatter.TryFormat(msgs, buf[n..], out w);
        n += w;
        buf[n++] = (byte)'}';
        Answer(reply, buf[..n]);
    }

    /// <summary>{"type":"gap","last_seq":E,"seq":C} (nats-server BatchFlowGap): E up to C-1 were lost.</summary>
    private void SendFlowGap(ReadOnlySpan<byte> reply, ulong expected, ulong current)
    {
        if (reply.IsEmpty) return;
        var buf = _flowScratch.AsSpan();
        int n = Write(buf, "{\"type\":\"gap\",\"last_seq\":"u8);
        Utf8Formatter.TryFormat(expected, buf[n..], out int w);
        n += w;
        n += Write(buf[n..], ",\"seq\":"u8);
        Utf8Formatter.TryFormat(current, buf[n..], out w);
        n += w;
        buf[n++] = (byte)'}';
        Answer(reply, buf[..n]);
    }

    /// <summary>{"type":"err","seq":N,"error":{...}} (nats-server BatchFlowErr).</summary>
    private void SendFlowErr(ReadOnlySpan<byte> reply, ulong seq, ApiError error)
    {
        if (reply.IsEmpty) return;
        var json = JsonSerializer.SerializeToUtf8Bytes(new BatchFlowErr { Seq = seq, Error = error }, BatchJsonContext.Default.BatchFlowErr);
        Answer(reply, json);
    }

    /// <summary>{"stream":"S", "seq":N,"duplicate": true,"batch":"id","count":C} for a batch whose only message was a duplicate.</summary>
    private byte[] DuplicateBatchPubAck(ulong seq, string batchId, ulong count)
    {
        var ack = Encoding.UTF8.GetString(BatchPubAck(seq, batchId, count));
        int at = ack.IndexOf(",\"batch\"", StringComparison.Ordinal);
        return Encoding.UTF8.GetBytes(ack.Insert(at, ",\"duplicate\": true"));
    }

    private static int Write(Span<byte> dst, ReadOnlySpan<byte> s)
    {
        s.CopyTo(dst);
        return s.Length;
    }
}
