using System.Buffers;
using System.Buffers.Text;
using System.Runtime.CompilerServices;
using System.Text;
using NatsBroker.Contracts;

namespace NatsBroker.JetStream;

// The consumer's loop: take queued acks and pull requests, expire requests, redeliver after ack_wait, deliver new
// messages to waiting requests (pull) or the deliver subject (push), send idle heartbeats, and remove an idle
// ephemeral consumer after inactive_threshold (nats-server consumer.go loopAndGatherMsgs, checkPending,
// processWaiting, sendIdleHeartbeat, deleteNotActive).
internal sealed partial class JsConsumer
{
    private static readonly byte[] ConsumerDeletedStatus = NatsHeaders.Status(409, "Consumer Deleted");
    private readonly ArrayBufferWriter<byte> _headerScratch = new(256);
    /// <summary>The ack reply being formatted: the fixed prefix, then five numbers of up to 20 digits and a dot each.</summary>
    private readonly byte[] _replyScratch;
    /// <summary>Destinations of this loop pass's deliveries, flushed every 256 deliveries and after the pass.</summary>
    private readonly NatsBroker.Routing.DeliveryBatch _deliveries = new();
    private int _unflushed;

    private async Task LoopAsync()
    {
        var token = _stop.Token;
        while (!token.IsCancellationRequested)
        {
            int waitMs;
            bool deleteMe;
            lock (_lock)
            {
                Volatile.Write(ref _kicked, 0);
                long now = Environment.TickCount64;
                List<ulong>? retained = null;
                DrainAcks(now, ref retained);
                DrainPulls(now);
                DrainFlowControl(ref retained);
                ExpirePin(now);
                ScheduleRedeliveries(now);
                ProcessWaiting(now, endOfStream: false);
                // Once nothing more goes out, no_wait requests end, unless held back only by max_ack_pending
                // (nats-server loopAndGatherMsgs: processWaiting(err != errMaxAckPending)).
                bool stalled = Deliver(now);
                ProcessWaiting(now, endOfStream: !stalled);
                SendHeartbeats(now);
                deleteMe = InactiveTooLong(now);
                waitMs = NextWakeMs(now);
                if (retained is not null) _retainedScratch = retained;
            }
            FlushDeliveries();
            if (_retainedScratch is { Count: > 0 } done)
            {
                _stream.OnConsumerAcked(done);
                done.Clear();
            }
            if (deleteMe)
            {
                _ = _stream.Js.DeleteConsumerAsync(_stream, this);
                return;
            }
            try
            {
                await _wake.WaitAsync(waitMs, token).ConfigureAwait(false);
            }
            catch (OperationCanceledException)
            {
                break;
            }
        }
        lock (_lock)
        {
            // Tell waiting pullers the consumer is gone (nats-server sends 409 Consumer Deleted).
            if (_stream.IsDeleted || _deletedByApi)
            {
                foreach (var r in _waiting) _stream.Js.Publish(r.Reply, default, ConsumerDeletedStatus, default);
            }
            _waiting.Clear();
        }
    }

    private List<ulong>? _retainedScratch;
    private volatile bool _deletedByApi;

    /// <summary>Marks the consumer as deleted through the API (so waiting pullers get 409 Consumer Deleted).</summary>
    public void MarkDeleted() => _deletedByApi = true;

    private void DrainPulls(long now)
    {
        while (_pulls.TryDequeue(out var req))
        {
            Interlocked.Decrement(ref _inboxCount);
            Admit(req, now);
        }
    }

    /// <summary>
    /// The waiting requests' endings and heartbeats (nats-server processWaiting): past its expiry 408 "Request
    /// Timeout"; at <paramref name="endOfStream"/> a no_wait request without expiry, or one that got a message,
    /// 404 "No Messages" (a no_wait request with an expiry that got nothing waits for a first message or its
    /// expiry); nobody listening, dropped silently; due, a 100 "Idle Heartbeat" naming the last consumer and
    /// stream sequences.
    /// </summary>
    private void ProcessWaiting(long now, bool endOfStream)
    {
        for (var node = _waiting.First; node is not null;)
        {
            var next = node.Next;
            var r = node.Value;
            if (r.ExpiresAt <= now)
            {
                _stream.Js.Publish(r.Reply, default, PendingStatus(408, "Request Timeout", r), default);
                _waiting.Remove(node);
            }
            else if (endOfStream && r.NoWait && (!r.HasExpiry || r.Delivered > 0))
            {
                _stream.Js.Publish(r.Reply, default, NoMessages, default);
                _waiting.Remove(node);
            }
            else if (!_stream.Js.HasInterest(r.Reply))
            {
                _waiting.Remove(node);
            }
            else if (r.HeartbeatMs > 0 && r.NextHeartbeatAt <= now)
            {
                _stream.Js.Publish(r.Reply, default, IdleHeartbeat(null), default);
                r.NextHeartbeatAt = now + r.HeartbeatMs;
            }
            node = next;
        }
    }

    /// <summary>
    /// nats-server sendIdleHeartbeat: Nats-Last-Consumer / Nats-Last-Stream are o.dseq-1 / o.sseq-1, and a push
    /// consumer stalled on flow control names the unanswered request.
    /// </summary>
    private byte[] IdleHeartbeat(string? stalledOn)
    {
        var last = (("Nats-Last-Consumer", _deliveredConsumerSeq.ToString(System.Globalization.CultureInfo.InvariantCulture)),
            ("Nats-Last-Stream", (NextStreamSeqGo - 1).ToString(System.Globalization.CultureInfo.InvariantCulture)));
        return stalledOn is null
            ? NatsHeaders.Status(100, "Idle Heartbeat", last.Item1, last.Item2)
            : NatsHeaders.Status(100, "Idle Heartbeat", last.Item1, last.Item2, ("Nats-Consumer-Stalled", stalledOn));
    }

    private void ScheduleRedeliveries(long now)
    {
        // checkPending: no ack_wait (the flow_control ack policy has none) redelivers nothing.
        if (AckNone || AckFlowControl) return;
        int maxDeliver = Config.MaxDeliver ?? -1;
        List<ulong>? exhausted = null;
        foreach (var (sseq, p) in _pending)
        {
            if (p.DeadlineTick > now) continue;
            // nats-server checkPending / hasMaxDeliveries compares the redelivery count (at least 1) with max_deliver,
            // so only max_deliver 1 gives up here; otherwise the redelivery attempt finds it exhausted (getNextMsg).
            if (maxDeliver == 1) (exhausted ??= []).Add(sseq);
            else _redeliver.Add(sseq);
        }
        foreach (var sseq in exhausted ?? []) GiveUp(sseq);
    }

    /// <summary>A message reached max_deliver: the max_deliver advisory, and it leaves the pending set.</summary>
    /// <remarks>The redelivery count stays (num_redelivered counts it) and the ack floor does not move: nats-server's
    /// store drops only the pending entry (UpdateDelivered with dc &gt; max_deliver).</remarks>
    private void GiveUp(ulong sseq)
    {
        if (!_pending.Remove(sseq, out var p)) return;
        _redeliver.Remove(sseq);
        _redelivered[sseq] = p.Deliveries;
        AdviseMaxDeliveries(sseq, p.Deliveries);
        _store?.UpdateAcked(p.ConsumerSeq, sseq);
    }

    /// <summary>
    /// Delivers what can go out now: redeliveries first, then new messages, to the deliver subject (push) or the
    /// waiting requests (pull; nats-server loopAndGatherMsgs with getNextMsg and nextWaiting). True when it stopped
    /// only because max_ack_pending is reached.
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    private bool Deliver(long now)
    {
        if (PauseRemainingNanos() > 0) return false; // paused (2.11): requests wait, heartbeats go on
        bool pushReady = !IsPull && _stream.Js.HasInterest(DeliverSubject!);
        if (!IsPull && pushReady) _lastActiveTick = now;
        int maxAckPending = AckNone ? 0 : Config.MaxAckPending ?? 1000;
        while (!_stop.IsCancellationRequested)
        {
            if (IsPull ? _waiting.Count == 0 : !pushReady) return false;

            bool isRedelivery = false;
            PendingMsg? pending = null;
            ulong sseq;
            if (_redeliver.Count > 0)
            {
                sseq = _redeliver.Min;
                _redeliver.Remove(sseq);
                if (!_pending.TryGetValue(sseq, out pending)) continue;
                int maxDeliver = Config.MaxDeliver ?? -1;
                if (maxDeliver > 0 && pending.Deliveries >= (ulong)maxDeliver)
                {
                    GiveUp(sseq);
                    continue;
                }
                if (_stream.Store.Load(sseq, _msg) != StoreStatus.Ok)
                {
                    _pending.Remove(sseq);
                    continue;
                }
                isRedelivery = true;
            }
            else
            {
                if (maxAckPending > 0 && _pending.Count >= maxAckPending) return true;
                if (_lastPerSubject is { Count: > 0 } lps)
                {
                    sseq = lps.Peek();
                    if (_stream.Store.Load(sseq, _msg) != StoreStatus.Ok)
                    {
                        lps.Dequeue();
                        Interlocked.Decrement(ref _numPending);
                        continue;
                    }
                }
                else if (!LoadNextMatching(_nextStreamSeq, out sseq))
                {
                    return false;
                }
            }

            // The ack reply first: the size a request's max_bytes counts includes it (nats-server: subject, ack
            // reply, headers and payload as sent, the headers_only header block instead of the payload).
            ulong dseq = _deliveredConsumerSeq + 1;
            ulong deliveries = isRedelivery ? pending!.Deliveries + 1 : 1;
            long pendingAfter = Math.Max(0, Interlocked.Read(ref _numPending) - (isRedelivery ? 0 : 1));
            int replyLength = FormatReply(deliveries, sseq, dseq, (ulong)pendingAfter);
            long size = _msg.Subject.Length + replyLength + (Config.HeadersOnly == true
                ? HeadersOnlyLength()
                : _msg.HeadersLength + _msg.PayloadLength);

            PullRequest? target = null;
            LinkedListNode<PullRequest>? targetNode = null;
            bool pinOnSend = false;
            if (IsPull)
            {
                targetNode = NextWaitingFor(size, out pinOnSend);
                if (targetNode is null)
                {
                    if (isRedelivery) _redeliver.Add(sseq); // not delivered: tried again with the next request
                    return false;
                }
                target = targetNode.Value;
            }

            if (!ReadyToSend(now, isRedelivery, _msg.Timestamp, size))
            {
                if (target is { BytesRemaining: > 0 }) target.BytesRemaining += size; // not taken after all
                if (isRedelivery) _redeliver.Add(sseq);
                return false;
            }

            // Commit the delivery. One clock read stamps it everywhere (pending entry, stored state, last active).
            var nowUtc = DateTime.UtcNow;
            long nowNanos = (nowUtc - DateTime.UnixEpoch).Ticks * 100;
            _deliveredConsumerSeq = dseq;
            if (isRedelivery)
            {
                pending!.Deliveries = deliveries;
                pending.DeadlineTick = now + RedeliveryDelayMs(deliveries);
                pending.Timestamp = nowNanos;
                _redelivered[sseq] = deliveries - 1;
            }
            else
            {
                if (_lastPerSubject is { Count: > 0 } lps)
                {
                    lps.Dequeue();
                    _lastPerSubjectCursor = sseq + 1;
                }
                else
                {
                    _nextStreamSeq = sseq + 1;
                }
                Interlocked.Decrement(ref _numPending);
                if (sseq > _deliveredStreamSeq) _deliveredStreamSeq = sseq;
                if (!AckNone) _pending[sseq] = new PendingMsg { ConsumerSeq = dseq, Timestamp = nowNanos, Deliveries = 1, DeadlineTick = now + RedeliveryDelayMs(1) };
            }
            // ack none: delivered is acknowledged (nats-server deliverMsg sets both floors).
            if (AckNone) (_ackFloorConsumerSeq, _ackFloorStreamSeq) = (dseq, _deliveredStreamSeq);
            _store?.UpdateDelivered(isRedelivery ? pending!.ConsumerSeq : dseq, sseq, deliveries, nowNanos);
            _deliveredLastActive = nowUtc;
            if (pinOnSend) AssignPin(target!, now);
            Send(target?.Reply ?? DeliverSubject!, replyLength);
            OnSent(now, sseq, _msg.Timestamp, size);
            if (target is not null)
            {
                // nats-server waitQueue.pop: one more delivered, one less wanted; done at zero or below.
                target.Delivered++;
                target.Remaining--;
                if (target.Remaining <= 0)
                {
                    _waiting.Remove(targetNode!);
                    // The batch is complete with bytes left: say so (consumer.go JsPullRequestRemainingBytesT).
                    if (target.BytesRemaining > 0) _stream.Js.Publish(target.Reply, default, PendingStatus(409, "Batch Completed", target), default);
                }
                else
                {
                    if (target.HeartbeatMs > 0) target.NextHeartbeatAt = now + target.HeartbeatMs;
                    RequeueServed(targetNode!);
                }
            }
            else if (Config.IdleHeartbeat is > 0)
            {
                _nextHeartbeatTick = now + Config.IdleHeartbeat.Value / 1_000_000;
            }
        }
        return false;
    }

    /// <summary>
    /// The waiting request a message of <paramref name="size"/> goes to (nats-server nextWaiting(sz)): its bytes are
    /// taken from a max_bytes request (the last fitting message ends it), and a request it does not fit is ended with
    /// 409 "Message Size Exceeds MaxBytes" before the next one is tried.
    /// </summary>
    private LinkedListNode<PullRequest>? NextWaitingFor(long size, out bool pinOnSend)
    {
        while (NextWaiting(out pinOnSend) is { } node)
        {
            var r = node.Value;
            if (r.BytesRemaining <= 0) return node;
            if (size <= r.BytesRemaining)
            {
                r.BytesRemaining -= size;
                if (r.BytesRemaining == 0) r.Remaining = 1;
                return node;
            }
            _stream.Js.Publish(r.Reply, default, PendingStatus(409, "Message Size Exceeds MaxBytes", r), default);
            _waiting.Remove(node);
        }
        return null;
    }

    /// <summary>The header block length a headers_only delivery sends: the message's, plus Nats-Msg-Size (convertToHeadersOnly).</summary>
    private int HeadersOnlyLength()
    {
        int digits = _msg.PayloadLength < 10 ? 1 : (int)Math.Floor(Math.Log10(_msg.PayloadLength)) + 1;
        int head = _msg.HeadersLength == 0 ? "NATS/1.0\r\n".Length : _msg.HeadersLength - 2;
        return head + "Nats-Msg-Size: ".Length + digits + 4;
    }

    /// <summary>Writes the ack reply into the scratch after its fixed prefix; returns its length.</summary>
    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    private int FormatReply(ulong deliveries, ulong sseq, ulong dseq, ulong pending)
    {
        int n = _ackPrefixLength; // the scratch starts with the prefix, written once by the constructor
        n += Format(deliveries, n);
        n += Format(sseq, n);
        n += Format(dseq, n);
        n += Format((ulong)_msg.Timestamp, n);
        n += Format(pending, n) - 1; // no trailing dot
        return n;
    }

    /// <summary>Publishes _msg to <paramref name="to"/> with the ack reply formatted by <see cref="FormatReply"/>.</summary>
    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    private void Send(byte[] to, int replyLength)
    {
        var reply = _replyScratch.AsSpan(0, replyLength);
        var pinLine = PinHeaderLine;
        if (Config.HeadersOnly == true)
        {
            _headerScratch.ResetWrittenCount();
            var len = _msg.PayloadLength.ToString(System.Globalization.CultureInfo.InvariantCulture);
            if (pinLine is null) NatsHeaders.AppendHeaders(_msg.Headers, [("Nats-Msg-Size", len)], _headerScratch);
            else NatsHeaders.AppendHeaders(_msg.Headers, [("Nats-Msg-Size", len), (PinIdHeader, _pinId!)], _headerScratch);
            _stream.Js.Router.PublishInternal(to, _msg.Subject, reply, _headerScratch.WrittenSpan, default, _deliveries);
        }
        else if (pinLine is not null)
        {
            // pinned_client: every message to the pinned client carries Nats-Pin-Id (nats-server genHeader).
            _headerScratch.ResetWrittenCount();
            AppendPinHeader(_msg.Headers, pinLine, _headerScratch);
            _stream.Js.Router.PublishInternal(to, _msg.Subject, reply, _headerScratch.WrittenSpan, _msg.Payload, _deliveries);
        }
        else
        {
            // Routed to the pull request's reply or the deliver subject, shown with the stored subject; straight from
            // the loaded record, whose header block and payload are adjacent.
            int headerSize = _msg.HeadersLength == 0 ? -1 : _msg.HeadersLength;
            _stream.Js.Router.PublishInternalAdjacent(to, _msg.Subject, reply, headerSize, _msg.HeadersAndPayload, _deliveries);
        }
        if (++_unflushed >= 256) FlushDeliveries();
    }

    private void FlushDeliveries()
    {
        _unflushed = 0;
        _deliveries.Flush();
        _deliveries.ClearBackPressure();
    }

    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    private int Format(ulong v, int at)
    {
        Utf8Formatter.TryFormat(v, _replyScratch.AsSpan(at), out int w);
        _replyScratch[at + w] = (byte)'.';
        return w + 1;
    }

    /// <summary>A push consumer's idle heartbeat to its deliver subject (pull requests get theirs in ProcessWaiting).</summary>
    private void SendHeartbeats(long now)
    {
        if (IsPull || Config.IdleHeartbeat is not > 0 || now < _nextHeartbeatTick) return;
        if (_stream.Js.HasInterest(DeliverSubject!))
        {
            _stream.Js.Publish(DeliverSubject!, default, IdleHeartbeat(StalledOn), default);
            // loopAndGatherMsgs: "Send flow control on EOS if it's used for acknowledgements."
            if (AckFlowControl && _pending.Count > 0 && _fcId is null) SendFlowControl();
        }
        _nextHeartbeatTick = now + Config.IdleHeartbeat.Value / 1_000_000;
    }

    private bool InactiveTooLong(long now)
    {
        long threshold = (Config.InactiveThreshold ?? 0) / 1_000_000;
        if (threshold <= 0) return false;
        if (IsPull ? _waiting.Count > 0 : _stream.Js.HasInterest(DeliverSubject!))
        {
            _lastActiveTick = now;
            return false;
        }
        return now - _lastActiveTick > threshold;
    }

    private int NextWakeMs(long now)
    {
        long next = now + 1000;
        if (_pacingWakeTick > now && _pacingWakeTick < next) next = _pacingWakeTick;
        foreach (var r in _waiting)
        {
            if (r.ExpiresAt < next) next = r.ExpiresAt;
            if (r.HeartbeatMs > 0 && r.NextHeartbeatAt < next) next = r.NextHeartbeatAt;
        }
        if (!IsPull && Config.IdleHeartbeat is > 0 && _nextHeartbeatTick < next) next = _nextHeartbeatTick;
        if (PinWakeTick < next) next = PinWakeTick;
        foreach (var p in _pending.Values) if (p.DeadlineTick < next) next = p.DeadlineTick;
        return (int)Math.Clamp(next - now, 1, 1000);
    }
}
