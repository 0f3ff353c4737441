using NatsBroker.Contracts;
using NatsBroker.JetStream.Api;

namespace NatsBroker.JetStream;

// A consumer in a stream snapshot (Snapshots/README section of core/JetStream/README.md): its config and delivery
// state are taken from the consumer itself (memory streams keep no consumer store), and a restored consumer resumes
// from that state (JsConsumer.Create with fromSnapshot): delivered, pending (redelivered after ack_wait) and
// redelivery counts, so from its ack floor.
internal sealed partial class JsConsumer
{
    /// <summary>The consumer's config as persisted (consumers/&lt;name&gt;.json).</summary>
    internal ConsumerMeta SnapshotMeta()
    {
        lock (_lock) return new ConsumerMeta { Name = Name, Config = Config, Created = Created };
    }

    /// <summary>Fills <paramref name="into"/> with the delivery state (nats-server ConsumerState) under the consumer's lock.</summary>
    internal void CaptureState(ConsumerState into)
    {
        lock (_lock)
        {
            var (floorC, floorS) = AckFloorLocked();
            into.Delivered = new SequencePair(_deliveredConsumerSeq, _deliveredStreamSeq);
            into.AckFloor = new SequencePair(floorC, floorS);
            into.Pending.Clear();
            into.Redelivered.Clear();
            foreach (var (sseq, p) in _pending)
            {
                into.Pending[sseq] = new PendingEntry(p.ConsumerSeq, p.Timestamp);
                if (p.Deliveries > 1) into.Redelivered[sseq] = p.Deliveries - 1;
            }
        }
    }
}
