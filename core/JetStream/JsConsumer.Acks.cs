using System.Runtime.CompilerServices;
using System.Text;
using System.Text.Json;
using NatsBroker.JetStream.Api;

namespace NatsBroker.JetStream;

// Acknowledgements (nats-server consumer.go processAck): "" / +ACK / +OK, -NAK [{"delay":ns} | Go duration], +WPI,
// +TERM [reason], +NXT [pull request]; any other body only gets the reply. The reply on an ack message (AckSync /
// double ack) is answered once the ack is processed, except where nats-server skips it: stream sequence 0, an ack
// past what was delivered, +NXT (its reply is the pull request's). The ack floor moves as the consumer store's
// (memstore.go consumerMemStore.UpdateAcks), which consumer info reports.
internal sealed partial class JsConsumer
{
    /// <summary>NAK without a (parsable) delay: redelivered at once.</summary>
    private const long NoNakDelay = long.MinValue;

    /// <summary>
    /// Runs on the publisher's thread: classify and queue; never blocks. False when the consumer takes no acks
    /// (ack policy none: nats-server subscribes no ack subject for it, so the caller answers as nobody listening).
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    public bool EnqueueAck(AckTokens tokens, ReadOnlySpan<byte> body, ReadOnlySpan<byte> reply)
    {
        // Neither ack policy none nor flow_control subscribes an ack subject (consumer.go setLeader).
        if (AckNone || AckFlowControl) return false;
        var kind = AckKind.Other;
        long delay = NoNakDelay;
        string? reason = null, nextError = null;
        PullFields next = default;
        if (body.IsEmpty || body.SequenceEqual("+ACK"u8) || body.SequenceEqual("+OK"u8)) kind = AckKind.Ack;
        else if (body.StartsWith("+NXT"u8))
        {
            kind = AckKind.Next;
            nextError = PullRequestBody.Parse(body["+NXT"u8.Length..], out next);
        }
        else if (body.StartsWith("-NAK"u8))
        {
            kind = AckKind.Nak;
            delay = ParseNakDelay(body["-NAK"u8.Length..]);
        }
        else if (body.SequenceEqual("+WPI"u8)) kind = AckKind.Progress;
        else if (body.StartsWith("+TERM"u8))
        {
            kind = AckKind.Term;
            // "+TERM <reason>": the reason goes into the terminated advisory (nats-server 2.10+).
            var r = body["+TERM"u8.Length..].Trim(" \t\r\n"u8);
            if (!r.IsEmpty) reason = Encoding.UTF8.GetString(r);
        }
        else if (reply.IsEmpty || tokens.StreamSeq == 0) return true; // nothing to do and nobody to answer
        if (Interlocked.Increment(ref _inboxCount) > InboxLimit)
        {
            Interlocked.Decrement(ref _inboxCount);
            return true; // dropped: the message is redelivered after ack_wait
        }
        _acks.Enqueue(new AckItem(tokens, kind, delay, reply.IsEmpty ? null : Encoding.UTF8.GetString(reply), reason, next, nextError));
        Kick();
        return true;
    }

    /// <summary>The NAK delay: JSON {"delay": nanoseconds} or a Go duration ("1s"); unparsable means none (processNak).</summary>
    private static long ParseNakDelay(ReadOnlySpan<byte> rest)
    {
        rest = rest.Trim(" \t\r\n"u8);
        if (rest.IsEmpty) return NoNakDelay;
        if (rest[0] != (byte)'{') return GoDuration.TryParse(Encoding.UTF8.GetString(rest), out long d) ? d : NoNakDelay;
        try
        {
            using var doc = JsonDocument.Parse(rest.ToArray());
            if (doc.RootElement.ValueKind != JsonValueKind.Object) return NoNakDelay;
            foreach (var p in doc.RootElement.EnumerateObject())
            {
                if (!p.Name.Equals("delay", StringComparison.OrdinalIgnoreCase)) continue;
                if (p.Value.ValueKind == JsonValueKind.Null) continue;
                return p.Value.TryGetInt64(out long ns) ? ns : NoNakDelay;
            }
            return 0; // a JSON object without a delay: nats-server's zero Delay, due at once
        }
        catch (JsonException)
        {
            return NoNakDelay; // nats-server warns "bad NAK delay value" and treats it as a plain NAK
        }
    }

    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    private void DrainAcks(long now, ref List<ulong>? retained)
    {
        while (_acks.TryDequeue(out var a))
        {
            Interlocked.Decrement(ref _inboxCount);
            ulong sseq = a.Tokens.StreamSeq, dseq = a.Tokens.ConsumerSeq;
            // nats-server skips the reply for stream sequence 0 (skipAckReply), except that an accepted ack on a
            // limits stream answers from updateAcks.
            bool answer = sseq != 0;
            switch (a.Kind)
            {
                case AckKind.Ack:
                case AckKind.Term:
                case AckKind.Next:
                    {
                        bool taken = AckMessage(sseq, dseq, a.Tokens.Deliveries, sample: a.Kind != AckKind.Term, ref retained);
                        answer = taken && (sseq != 0 || _stream.Config.Retention == RetentionPolicy.Limits);
                        if (a.Kind == AckKind.Term) AdviseTerminated(dseq, sseq, a.Tokens.Deliveries, a.Reason);
                        if (a.Kind == AckKind.Next)
                        {
                            answer = false;
                            if (a.Reply is not null) NextFromAck(a, now);
                        }
                        break;
                    }
                case AckKind.Nak:
                    // Out of range (at or below the ack floor, or beyond what was delivered) or not pending: ignored.
                    if (dseq > _ackFloorConsumerSeq && dseq <= _deliveredConsumerSeq + 1 && _pending.TryGetValue(sseq, out var nak))
                    {
                        AdviseNak(dseq, sseq, a.Tokens.Deliveries);
                        if (a.DelayNanos != NoNakDelay)
                        {
                            _redeliver.Remove(sseq);
                            nak.DeadlineTick = now + a.DelayNanos / 1_000_000;
                        }
                        else
                        {
                            _redeliver.Add(sseq);
                        }
                    }
                    break;
                case AckKind.Progress:
                    if (_pending.TryGetValue(sseq, out var wpi)) wpi.DeadlineTick = now + AckWaitMs;
                    break;
            }
            if (answer && a.Reply is not null) _stream.Js.Publish(Encoding.UTF8.GetBytes(a.Reply), default, default, default);
        }
    }

    /// <summary>
    /// +ACK / +TERM / +NXT of one message (nats-server processAckMsg with the store's UpdateAcks). False when the ack
    /// is past the next sequence to deliver (ignored, unanswered).
    /// </summary>
    private bool AckMessage(ulong sseq, ulong dseq, ulong deliveries, bool sample, ref List<ulong>? retained)
    {
        if (sseq >= NextStreamSeqGo) return false;
        bool dropOnAck = _stream.Config.Retention != RetentionPolicy.Limits;
        if (AckAll || AckFlowControl) // processAckMsg: "case AckAll, AckFlowControl"
        {
            if (dseq <= _ackFloorConsumerSeq || sseq <= _ackFloorStreamSeq) return true; // already below the floor
            // The floor becomes the acked delivery, as the ack subject names it, when that message is pending.
            if (_pending.ContainsKey(sseq)) (_ackFloorConsumerSeq, _ackFloorStreamSeq) = (dseq, sseq);
            List<ulong>? acked = null;
            foreach (var (s, _) in _pending) if (s <= sseq) (acked ??= []).Add(s);
            foreach (var s in acked ?? [])
            {
                _pending.Remove(s, out var p);
                _redeliver.Remove(s);
                _redelivered.Remove(s);
                _store?.UpdateAcked(p!.ConsumerSeq, s);
                if (dropOnAck) (retained ??= []).Add(s);
            }
            _redelivered.Remove(sseq);
        }
        else
        {
            if (_pending.Remove(sseq, out var p))
            {
                // Sampled acks: explicit +ACK / +NXT of a pending message (nats-server processAckMsg doSample).
                if (sample) SampleAck(p.ConsumerSeq, sseq, deliveries, p.Timestamp);
                _store?.UpdateAcked(p.ConsumerSeq, sseq);
                if (dropOnAck) (retained ??= []).Add(sseq);
                MoveAckFloor(p.ConsumerSeq, sseq);
            }
            _redelivered.Remove(sseq);
            _redeliver.Remove(sseq);
        }
        _ackLastActive = DateTime.UtcNow;
        return true;
    }

    /// <summary>
    /// After an explicit ack of the delivery <paramref name="dseq"/> (its first consumer sequence): nothing pending
    /// puts the floor at what was delivered; the ack right above the floor moves it up to just below the next pending
    /// message (consumerMemStore.UpdateAcks).
    /// </summary>
    private void MoveAckFloor(ulong dseq, ulong sseq)
    {
        if (dseq <= _ackFloorConsumerSeq) return;
        if (_pending.Count == 0)
        {
            (_ackFloorConsumerSeq, _ackFloorStreamSeq) = (_deliveredConsumerSeq, _deliveredStreamSeq);
            return;
        }
        if (dseq != _ackFloorConsumerSeq + 1) return;
        (_ackFloorConsumerSeq, _ackFloorStreamSeq) = (dseq, sseq);
        if (_deliveredConsumerSeq <= dseq) return;
        ulong next = ulong.MaxValue;
        PendingMsg? first = null;
        foreach (var (s, p) in _pending)
        {
            if (s > sseq && s < next && s <= _deliveredStreamSeq) (next, first) = (s, p);
        }
        if (first is { ConsumerSeq: > 0 }) (_ackFloorConsumerSeq, _ackFloorStreamSeq) = (first.ConsumerSeq - 1, next - 1);
    }

    /// <summary>+NXT: the ack's reply asks for more, checked as a MSG.NEXT request (nats-server processNextMsgRequest).</summary>
    private void NextFromAck(in AckItem a, long now)
    {
        var reply = Encoding.UTF8.GetBytes(a.Reply!);
        if (a.NextError is { } bad)
        {
            _stream.Js.Publish(reply, default, NatsHeaders.Status(400, "Bad Request - " + bad), default);
            return;
        }
        if (RefusePull(a.Next) is { } refused)
        {
            _stream.Js.Publish(reply, default, refused, default);
            return;
        }
        Admit(NewPull(reply, a.Next, now), now);
    }

    /// <summary>
    /// An ack subject no consumer subscribes (wrong token count, unknown consumer, ack policy none): a request
    /// gets nats-server's no-responders status naming the subject; a plain publish nothing.
    /// </summary>
    internal static void NoAckSubscriber(JsAccount js, ReadOnlySpan<byte> subject, ReadOnlySpan<byte> reply)
    {
        if (!reply.IsEmpty) js.Publish(reply, default, JetStreamService.NoRespondersStatus(subject), default);
    }
}
