using NatsBroker.Routing;

namespace NatsBroker.JetStream;

// Inline ingest of memory streams: a publish is stored and answered on the publisher's own thread when nothing is
// queued before it, instead of waking the ingest worker (a thread-pool hop that cost a synchronous publisher most of
// its round trip). nats-server 2.9.10 does the same for every client publish (stream.go processInboundJetStreamMsg
// calls processJetStreamMsg in the client's read loop when the stream is not clustered); here only memory streams
// go inline, because a memory store's append is no I/O, and file streams keep their store writes on the worker.
//
// The ingest gate: the worker handles each drain of the queue inside it, an inline publisher only tries to enter it
// (never waits on a socket thread) and goes inline only when every queued message has been handled, so messages are
// stored in the order they were queued and the state the ingest path keeps (dedupe window, batches, counters, the
// PubAck batch, schedules) is only ever touched by the gate's holder, one thread at a time. Fields documented as
// "worker thread only" / "ingest worker only" mean: inside the ingest gate.
internal sealed partial class JsStream
{
    private readonly Lock _ingestGate = new();
    /// <summary>Memory streams only: whether a publish may be stored on the publisher's thread.</summary>
    private readonly bool _inlineIngest;
    private bool _inlineStopped; // inside the gate

    /// <summary>
    /// Stores and answers <paramref name="m"/> on this thread when the gate is free and nothing is queued before it;
    /// false when it must be queued instead. Called only for a client's own publish (the caller checks the origin):
    /// a server worker publishing (a consumer delivering under its lock, an ingest worker's reply or advisory) may
    /// hold locks this path takes (consumer locks in OnStored), so its publishes are queued as before. Not inside
    /// another publish (publish nesting is bounded, and a chain of streams would run into the bound), and never
    /// re-entered by the gate's own holder.
    /// </summary>
    /// <param name="publisherBatch">
    /// The publisher's delivery batch: the PubAck goes into it and is written when the publisher's read loop flushes
    /// its batch, once per read (nats-server queues the ack on the client and flushes it at the end of its read loop).
    /// Flushing each ack on its own cost an asynchronous publisher one send and one wake-up of its reader per message
    /// (js-asyncpub-256-mem: 150 K/s, against 860 K/s into a file stream, whose worker flushes once per drain).
    /// </param>
    private bool TryIngestInline(in Inbound m, DeliveryBatch publisherBatch)
    {
        if (Router.Depth > 1 || _ingestGate.IsHeldByCurrentThread || !_ingestGate.TryEnter()) return false;
        try
        {
            // Inside the gate every message the worker took off the queue is counted handled: equal counts mean
            // nothing published before this message is still waiting to be stored.
            if (_inlineStopped || Volatile.Read(ref _ingestQueued) != Volatile.Read(ref _ingestHandled)) return false;
            _replyBatch = publisherBatch;
            bool stored;
            try
            {
                stored = ProcessGuarded(m);
            }
            finally
            {
                _replyBatch = _ackBatch;
            }
            if (stored) KickConsumers();
            return true;
        }
        finally
        {
            _ingestGate.Exit();
        }
    }

    /// <summary>After the worker stopped: no later publish is stored inline (one under way finishes first).</summary>
    private void StopInlineIngest()
    {
        lock (_ingestGate) _inlineStopped = true;
    }
}
