using System.Buffers;
using System.Buffers.Text;
using System.Text;
using NatsBroker.Contracts;
using NatsBroker.JetStream.Api;
using NatsBroker.Routing;
using NatsBroker.Subscriptions;

namespace NatsBroker.JetStream;

// A stream's ingest (nats-server stream.go processInboundJetStreamMsg and its queue): the inbound queue and its
// worker, answers held until the store's commit, the duplicate window, PubAck texts. The write path of one message
// (check -> apply -> ack) is JsStream.WritePath.cs.
internal sealed partial class JsStream
{
    /// <summary>Default duplicate window (nats-server StreamDefaultDuplicatesWindow).</summary>
    public static readonly long DefaultDuplicateWindowNanos = (long)TimeSpan.FromMinutes(2).TotalMilliseconds * 1_000_000;
    /// <summary>nats-server's max header size for stored messages.</summary>
    private const int MaxHeaderSize = 64 * 1024;

    private readonly byte[] _pubAckPrefix;
    private readonly byte[] _pubAckScratch = new byte[512];
    // Duplicate window (inside the ingest gate only): msg id -> (seq, stored at), plus arrival order for expiry.
    private readonly Dictionary<string, (ulong Seq, long Ts)> _dedupe = new(StringComparer.Ordinal);
    private readonly Queue<(string Id, long Ts)> _dedupeOrder = new();
    private string _lastMsgId = "";
    /// <summary>PubAck destinations of the current ingest batch, flushed once per batch (inside the ingest gate only).</summary>
    private readonly NatsBroker.Routing.DeliveryBatch _ackBatch = new();
    /// <summary>
    /// Inside the ingest gate: the batch replies are published into. The worker's own <see cref="_ackBatch"/> (flushed
    /// after each drain), or during an inline ingest the publisher's batch (JsStream.InlineIngest.cs).
    /// </summary>
    private NatsBroker.Routing.DeliveryBatch _replyBatch;
    /// <summary>Inside the ingest gate: answers waiting for the store's commit (see <see cref="Answer"/>).</summary>
    private readonly HeldReplies _heldReplies = new();
    private bool _holdReplies;
    private long _droppedInbound;
    // The outcome of the last StoreOne (inside the ingest gate only).
    private ApiError? _lastIngestError;
    private ulong _lastDuplicateSeq;
    private ulong _lastStoredSeq;

    /// <summary>Runs on the publisher's thread: copy into a pooled buffer and queue; never block.</summary>
    private void OnPublished(Subscription sub, in InternalMessage msg)
    {
        int hdr = msg.HeaderSize > 0 ? msg.HeaderSize : 0;
        int total = msg.Subject.Length + msg.Reply.Length + (int)msg.Payload.Length;
        var buf = InboundBuffers.Rent(Math.Max(1, total));
        msg.Subject.CopyTo(buf);
        msg.Reply.CopyTo(buf.AsSpan(msg.Subject.Length));
        msg.Payload.CopyTo(buf.AsSpan(msg.Subject.Length + msg.Reply.Length));
        var inbound = new Inbound(buf, msg.Subject.Length, msg.Reply.Length, hdr, (int)msg.Payload.Length - hdr);
        if (_inlineIngest && msg.Origin is not null && TryIngestInline(inbound, msg.Batch))
        {
            inbound.Return();
            return;
        }
        if (TryQueue(inbound)) return;
        long n = Interlocked.Increment(ref _droppedInbound);
        if (!msg.Reply.IsEmpty) Js.Publish(msg.Reply, default, default, PubAckError(JsErrors.StreamTooManyRequests));
        inbound.Return();
        if (n == 1 || n % 10_000 == 0)
            Microsoft.Extensions.Logging.LoggerExtensions.LogWarning(Js.Logger, "JetStream stream {Stream}: inbound queue full, {Count} messages refused so far", Name, n);
    }

    private async Task IngestLoopAsync()
    {
        while (await _inbound.WaitToReadAsync().ConfigureAwait(false))
        {
            // The gate makes the worker and an inline ingest (JsStream.InlineIngest.cs) take turns; the whole drain
            // runs inside it, so a publisher that gets the gate finds every message read here counted as handled.
            lock (_ingestGate) DrainInbound();
        }
    }

    /// <summary>Handles everything queued now (worker, inside the ingest gate).</summary>
    private void DrainInbound()
    {
        int stored = 0, handled = 0;
        // Fixed per store; read per drain because a reset or restore can swap the store.
        _holdReplies = Store.NeedsCommit;
        while (_inbound.TryRead(out var m))
        {
            handled++;
            try
            {
                if (ProcessGuarded(m)) stored++;
            }
            finally
            {
                m.Return();
            }
            // Wake consumers at least every 256 stored messages so a long burst is not delivered in one lump.
            if (stored >= 256)
            {
                FlushAcks();
                KickConsumers();
                stored = 0;
            }
            if (handled >= 256)
            {
                CountHandled(handled);
                handled = 0;
            }
        }
        FlushAcks();
        _holdReplies = false;
        if (stored > 0) KickConsumers();
        // After the acks and the consumers' wake-up: a request released now sees what they see.
        CountHandled(handled);
    }

    /// <summary>
    /// Inside the ingest gate: answers a publisher on <paramref name="reply"/>. While the store needs a commit before an
    /// acknowledgement (<see cref="IStreamStore.NeedsCommit"/>: the file engine's default periodic mode buffers appends)
    /// the answer is held until <see cref="FlushAcks"/> has committed the drain's appends; otherwise it is routed into
    /// the current reply batch at once.
    /// </summary>
    private void Answer(ReadOnlySpan<byte> reply, ReadOnlySpan<byte> payload)
    {
        if (reply.IsEmpty) return;
        if (_holdReplies) _heldReplies.Add(reply, payload);
        else Js.Router.PublishInternal(reply, reply, default, default, payload, _replyBatch);
    }

    /// <summary><see cref="Process"/>, with a failure logged and answered to the publisher (inside the ingest gate).</summary>
    private bool ProcessGuarded(in Inbound m)
    {
        try
        {
            return Process(m);
        }
        catch (Exception ex)
        {
            Microsoft.Extensions.Logging.LoggerExtensions.LogError(Js.Logger, ex, "JetStream stream {Stream}: storing a message failed", Name);
            if (!m.Reply.IsEmpty) Answer(m.Reply, PubAckError(JsErrors.StreamStoreFailed(ex.Message)));
            return false;
        }
    }

    /// <summary>Stores one message and answers it; true when it was stored.</summary>
    private bool Process(in Inbound m)
    {
        if (m.Kind == Inbound.KindTick) return RunSchedules();
        // Batches (ADR-50) first, as nats-server's ingest loop: fast-ingest by reply subject, atomic by header.
        if (m.Reply.EndsWith(FastBatchSuffix)) return ProcessFast(m);
        if (!m.Headers.IsEmpty && NatsHeaders.Get(m.Headers, BatchIdHeader) is { IsEmpty: false } batchId) return ProcessAtomic(m, batchId);
        return StoreOne(m, m.Reply);
    }

    /// <summary>
    /// After a restart: re-learn the message ids still inside the duplicate window from the stored messages'
    /// Nats-Msg-Id headers, newest first (nats-server stream.go rebuildDedupe). Runs before ingest starts.
    /// </summary>
    internal void RebuildDedupe()
    {
        var cfg = _config;
        long window = cfg.DuplicateWindow ?? DefaultDuplicateWindowNanos;
        long cutoff = GoTime.NowNanos() - window;
        var st = Store.GetState();
        var probe = new StoredMessage(256);
        var found = new List<(string Id, ulong Seq, long Ts)>();
        for (ulong s = st.LastSequence; s >= st.FirstSequence && s > 0; s--)
        {
            var status = Store.Load(s, probe);
            if (status == StoreStatus.Deleted) continue;
            if (status != StoreStatus.Ok || probe.Timestamp < cutoff) break;
            if (probe.HeadersLength == 0) continue;
            var id = NatsHeaders.GetString(probe.Headers, NatsHeaders.MsgId);
            if (id.Length > 0) found.Add((id, s, probe.Timestamp));
        }
        for (int i = found.Count - 1; i >= 0; i--)
        {
            var (id, seq, ts) = found[i];
            _dedupe[id] = (seq, ts);
            _dedupeOrder.Enqueue((id, ts));
            _lastMsgId = id;
        }
    }

    /// <summary>
    /// Commits the appends answered so far, then routes the held answers and writes their destinations once each. A
    /// failed commit (the store turned read-only) answers every held reply with the store's error instead: nothing is
    /// acknowledged that may not have reached the OS (nats-server answers only after its store returned).
    /// </summary>
    private void FlushAcks()
    {
        if (_heldReplies.Count > 0)
        {
            var st = Store.Commit();
            if (st == StoreStatus.Ok) _heldReplies.Release(Js.Router, _ackBatch);
            else _heldReplies.ReleaseAsError(Js.Router, _ackBatch, PubAckError(AppendFailed(st)));
        }
        _ackBatch.Flush();
        _ackBatch.ClearBackPressure();
    }

    private ulong LastSequenceOf(ReadOnlySpan<byte> subject)
    {
        var probe = t_probe ??= new StoredMessage(64);
        return Store.LoadLast(subject, probe) == StoreStatus.Ok ? probe.Sequence : 0;
    }

    [ThreadStatic] private static StoredMessage? t_probe;

    private void ExpireDedupe(long now, StreamConfig cfg)
    {
        long window = cfg.DuplicateWindow ?? DefaultDuplicateWindowNanos;
        while (_dedupeOrder.TryPeek(out var e) && now - e.Ts > window)
        {
            _dedupeOrder.Dequeue();
            if (_dedupe.TryGetValue(e.Id, out var cur) && cur.Ts == e.Ts) _dedupe.Remove(e.Id);
        }
    }

    /// <summary>
    /// The publisher's error for a refused append. A store that went read-only after a write or fsync error
    /// (<see cref="IStreamStore.Failure"/>) is logged once, and its reason is what the publisher reads.
    /// </summary>
    private ApiError AppendFailed(StoreStatus status)
    {
        var failure = Store.Failure;
        if (failure is null) return StoreError(status);
        if (Interlocked.Exchange(ref _storeFailureLogged, 1) == 0)
            Microsoft.Extensions.Logging.LoggerExtensions.LogError(Js.Logger, "JetStream stream {Stream}: store is read-only: {Failure}", Name, failure);
        return JsErrors.StreamStoreFailed(failure);
    }

    private int _storeFailureLogged;

    private static ApiError StoreError(StoreStatus status) => status switch
    {
        StoreStatus.MaxMessagesExceeded => JsErrors.StreamStoreFailed("maximum messages exceeded"),
        StoreStatus.MaxBytesExceeded => JsErrors.StreamStoreFailed("maximum bytes exceeded"),
        StoreStatus.MaxMessagesPerSubjectExceeded => JsErrors.StreamStoreFailed("maximum messages per subject exceeded"),
        StoreStatus.MessageTooLarge => JsErrors.StreamMessageExceedsMaximum,
        StoreStatus.DiskFull => JsErrors.StreamStoreFailed("insufficient storage resources available"),
        _ => JsErrors.StreamStoreFailed(status.ToString()),
    };

    private bool Fail(ReadOnlySpan<byte> reply, ApiError error)
    {
        _lastIngestError = error;
        if (!reply.IsEmpty) Answer(reply, PubAckError(error));
        return false;
    }

    /// <summary>{"stream":"S",["domain":"D",]"seq":N[,"duplicate":true]} written into a reused scratch buffer.</summary>
    private ReadOnlySpan<byte> PubAck(ulong seq, bool duplicate)
    {
        int need = _pubAckPrefix.Length + 48;
        var buf = need <= _pubAckScratch.Length ? _pubAckScratch : new byte[need];
        _pubAckPrefix.CopyTo(buf, 0);
        int n = _pubAckPrefix.Length;
        Utf8Formatter.TryFormat(seq, buf.AsSpan(n), out int w);
        n += w;
        if (duplicate)
        {
            ",\"duplicate\": true"u8.CopyTo(buf.AsSpan(n));
            n += ",\"duplicate\": true"u8.Length;
        }
        buf[n++] = (byte)'}';
        return buf.AsSpan(0, n);
    }

    /// <summary>An error PubAck: nats-server writes the error with an empty PubAck beside it ("stream", "seq":0).</summary>
    private byte[] PubAckError(ApiError error) =>
        JsJson.Serialize(new PubAckResponse { Error = error, Stream = Name, Seq = 0 }, JsJsonContext.Default.PubAckResponse);
}
