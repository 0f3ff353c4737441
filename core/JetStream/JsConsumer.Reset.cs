using NatsBroker.Contracts;
using NatsBroker.JetStream.Api;

namespace NatsBroker.JetStream;

// $JS.API.CONSUMER.RESET.<stream>.<consumer> (nats-server 2.14 consumer.go processResetReq / resetStartingSeqLocked /
// resetLocalStartingSeq): delivery starts again at a sequence, as if everything before it had been acknowledged and
// nothing after it delivered.
internal sealed partial class JsConsumer
{
    /// <summary>
    /// Moves delivery to <paramref name="seq"/> (0: back to the ack floor + 1, redelivering what is pending). A
    /// given sequence is allowed for deliver all; for by_start_sequence / by_start_time only at or after the
    /// configured start; otherwise refused. Returns the sequence, or null with nats-server's reason.
    /// </summary>
    public ulong? Reset(ulong seq, out string? error)
    {
        error = null;
        lock (_lock)
        {
            if (seq == 0)
            {
                seq = AckFloorLocked().Stream + 1;
            }
            else
            {
                switch (Config.DeliverPolicy)
                {
                    case DeliverPolicy.All:
                        break;
                    case DeliverPolicy.ByStartSequence:
                        if (seq < (Config.OptStartSeq ?? 0)) { error = "below start seq"; return null; }
                        break;
                    case DeliverPolicy.ByStartTime:
                        if (seq < FirstSequenceAtOrAfter(Config.OptStartTime is { } t ? GoTime.ToUnixNanos(t) : 0)) { error = "below start time"; return null; }
                        break;
                    default:
                        error = "not allowed";
                        return null;
                }
            }
            if (seq == 0) seq = 1;
            // nats-server resetLocalStartingSeq: pending and redeliveries dropped, the delivered and ack floors at seq-1.
            _pending.Clear();
            _redeliver.Clear();
            _lastPerSubject = null;
            _nextStreamSeq = seq;
            _redelivered.Clear();
            _deliveredStreamSeq = seq - 1;
            _deliveredConsumerSeq = 0;
            _ackFloorConsumerSeq = 0;
            _ackFloorStreamSeq = seq - 1;
            _deliveredLastActive = null;
            _ackLastActive = null;
            _store?.Update(new ConsumerState { Delivered = new SequencePair(0, seq - 1), AckFloor = new SequencePair(0, seq - 1) });
            RecountPending();
        }
        Kick();
        return seq;
    }

    /// <summary>The stream sequence of the first message stored at or after <paramref name="nanos"/> (nats-server GetSeqFromTime).</summary>
    private ulong FirstSequenceAtOrAfter(long nanos)
    {
        var state = _stream.Store.GetState();
        for (ulong s = state.FirstSequence; s <= state.LastSequence;)
        {
            if (_stream.Store.LoadNext(default, s, _msg) != StoreStatus.Ok) break;
            if (_msg.Timestamp >= nanos) return _msg.Sequence;
            s = _msg.Sequence + 1;
        }
        return state.LastSequence + 1;
    }
}
