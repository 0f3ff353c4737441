using System.Buffers.Text;
using System.Runtime.CompilerServices;
using System.Text;
using System.Text.Json;

namespace NatsBroker.JetStream;

// Acknowledgements (nats-server consumer.go processAck): +ACK (or empty), -NAK [{"delay":ns}], +WPI, +TERM [reason],
// +NXT [batch or JSON]. A reply on the ack message (AckSync / double ack) is answered once the ack is processed.
internal sealed partial class JsConsumer
{
    /// <summary>Runs on the publisher's thread: classify and queue; never blocks.</summary>
    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    public void EnqueueAck(AckTokens tokens, ReadOnlySpan<byte> body, ReadOnlySpan<byte> reply)
    {
        var kind = AckKind.Ack;
        long delay = 0;
        string? reason = null;
        int nextBatch = 1;
        var b = body.TrimStart((byte)' ');
        if (b.IsEmpty || b.StartsWith("+ACK"u8)) kind = AckKind.Ack;
        else if (b.StartsWith("-NAK"u8))
        {
            kind = AckKind.Nak;
            delay = ParseNakDelay(b["-NAK"u8.Length..]);
        }
        else if (b.StartsWith("+WPI"u8)) kind = AckKind.Progress;
        else if (b.StartsWith("+TERM"u8))
        {
            kind = AckKind.Term;
            // "+TERM <reason>": the reason goes into the terminated advisory (nats-server 2.10+).
            var r = b["+TERM"u8.Length..].Trim((byte)' ');
            if (!r.IsEmpty) reason = Encoding.UTF8.GetString(r);
        }
        else if (b.StartsWith("+NXT"u8))
        {
            kind = AckKind.Next;
            var rest = b["+NXT"u8.Length..].Trim((byte)' ');
            if (!rest.IsEmpty && Utf8Parser.TryParse(rest, out int n, out _) && n > 0) nextBatch = n;
        }
        else return; // unknown ack body: ignored, as nats-server ignores it
        if (Interlocked.Increment(ref _inboxCount) > InboxLimit)
        {
            Interlocked.Decrement(ref _inboxCount);
            return; // dropped: the message is redelivered after ack_wait
        }
        _acks.Enqueue(new AckItem(tokens, kind, delay, reply.IsEmpty ? null : Encoding.UTF8.GetString(reply), nextBatch, reason));
        Kick();
    }

    private static long ParseNakDelay(ReadOnlySpan<byte> rest)
    {
        rest = rest.Trim((byte)' ');
        if (rest.IsEmpty) return 0;
        try
        {
            var doc = JsonDocument.Parse(rest.ToArray());
            if (doc.RootElement.ValueKind == JsonValueKind.Object && doc.RootElement.TryGetProperty("delay", out var d) && d.TryGetInt64(out long ns)) return ns;
        }
        catch (JsonException)
        {
            // nats-server also accepts a Go duration ("-NAK 1s"); we treat anything unparsable as no delay.
        }
        return 0;
    }

    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    private void DrainAcks(long now, ref List<ulong>? retained)
    {
        bool dropOnAck = _stream.Config.Retention != "limits";
        while (_acks.TryDequeue(out var a))
        {
            Interlocked.Decrement(ref _inboxCount);
            ulong sseq = a.Tokens.StreamSeq;
            switch (a.Kind)
            {
                case AckKind.Ack:
                case AckKind.Term:
                case AckKind.Next:
                    if (AckAll)
                    {
                        List<ulong>? acked = null;
                        foreach (var (s, p) in _pending) if (s <= sseq) (acked ??= []).Add(s);
                        if (acked is not null)
                        {
                            foreach (var s in acked)
                            {
                                var p = _pending[s];
                                _pending.Remove(s);
                                _redeliver.Remove(s);
                                _store?.UpdateAcked(p.ConsumerSeq, s);
                                if (dropOnAck) (retained ??= []).Add(s);
                            }
                        }
                    }
                    else if (_pending.Remove(sseq, out var p))
                    {
                        // Sampled acks: explicit +ACK / +NXT of a pending message (nats-server processAckMsg doSample).
                        if (a.Kind != AckKind.Term) SampleAck(p.ConsumerSeq, sseq, a.Tokens.Deliveries, p.Timestamp);
                        _redeliver.Remove(sseq);
                        _store?.UpdateAcked(p.ConsumerSeq, sseq);
                        if (dropOnAck) (retained ??= []).Add(sseq);
                    }
                    _ackLastActive = DateTime.UtcNow;
                    if (a.Kind == AckKind.Term) AdviseTerminated(a.Tokens.ConsumerSeq, sseq, a.Tokens.Deliveries, a.Reason);
                    if (a.Kind == AckKind.Next && a.Reply is not null)
                    {
                        // +NXT: the ack's reply subject becomes a pull request for the next message(s).
                        _waiting.AddLast(new PullRequest { Reply = Encoding.UTF8.GetBytes(a.Reply), Remaining = a.NextBatch, ExpiresAt = long.MaxValue });
                        continue;
                    }
                    break;
                case AckKind.Nak:
                    if (_pending.TryGetValue(sseq, out var nak))
                    {
                        AdviseNak(a.Tokens.ConsumerSeq, sseq, a.Tokens.Deliveries);
                        if (a.DelayNanos > 0) nak.DeadlineTick = now + a.DelayNanos / 1_000_000;
                        else _redeliver.Add(sseq);
                    }
                    break;
                case AckKind.Progress:
                    if (_pending.TryGetValue(sseq, out var wpi)) wpi.DeadlineTick = now + AckWaitMs;
                    break;
            }
            if (a.Reply is not null) _stream.Js.Publish(Encoding.UTF8.GetBytes(a.Reply), default, default, default);
        }
    }
}
