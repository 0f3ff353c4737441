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
    private static readonly byte[] NoMessages = NatsHeaders.Status(404, "No Messages");
    private static readonly byte[] PullHeartbeat = NatsHeaders.Status(100, "Idle Heartbeat");
    private static readonly byte[] ExceededMaxWaiting = NatsHeaders.Status(409, "Exceeded MaxWaiting");
    private static readonly byte[] MaxBytesExceeded = NatsHeaders.Status(409, "Message Size Exceeds MaxBytes");
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
                DrainFlowControl();
                ExpireRequests(now);
                ExpirePin(now);
                ScheduleRedeliveries(now);
                Deliver(now);
                FinishNoWait();
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
            _lastActiveTick = now;
            // The pin check comes first, as in nats-server's processNextMsgRequest.
            if (!AdmitPinned(req, now)) continue;
            int maxWaiting = Config.MaxWaiting ?? 512;
            if (_waiting.Count >= maxWaiting)
            {
                _stream.Js.Publish(req.Reply, default, ExceededMaxWaiting, default);
                continue;
            }
            if (req.HeartbeatMs > 0) req.NextHeartbeatAt = now + req.HeartbeatMs;
            AddWaiting(req);
        }
    }

    private void ExpireRequests(long now)
    {
        for (var node = _waiting.First; node is not null;)
        {
            var next = node.Next;
            var r = node.Value;
            if (r.ExpiresAt <= now)
            {
                SendTimeout(r);
                _waiting.Remove(node);
            }
            node = next;
        }
    }

    private void SendTimeout(PullRequest r)
    {
        var hdr = NatsHeaders.Status(408, "Request Timeout",
            ("Nats-Pending-Messages", r.Remaining.ToString(System.Globalization.CultureInfo.InvariantCulture)),
            ("Nats-Pending-Bytes", (r.HasByteLimit ? r.BytesRemaining : 0).ToString(System.Globalization.CultureInfo.InvariantCulture)));
        _stream.Js.Publish(r.Reply, default, hdr, default);
    }

    /// <summary>no_wait requests end once nothing more can be delivered now: 404 if none was sent, else 408.</summary>
    private void FinishNoWait()
    {
        for (var node = _waiting.First; node is not null;)
        {
            var next = node.Next;
            var r = node.Value;
            if (r.NoWait)
            {
                if (r.Delivered == 0) _stream.Js.Publish(r.Reply, default, NoMessages, default);
                else SendTimeout(r);
                _waiting.Remove(node);
            }
            node = next;
        }
    }

    private void ScheduleRedeliveries(long now)
    {
        if (AckNone) return;
        int maxDeliver = Config.MaxDeliver ?? -1;
        List<ulong>? exhausted = null;
        foreach (var (sseq, p) in _pending)
        {
            if (p.DeadlineTick > now) continue;
            // Out of attempts: advisory once, then no longer pending (nats-server checkPending / hasMaxDeliveries).
            if (maxDeliver > 0 && p.Deliveries >= (ulong)maxDeliver) (exhausted ??= []).Add(sseq);
            else _redeliver.Add(sseq);
        }
        foreach (var sseq in exhausted ?? []) GiveUp(sseq);
    }

    /// <summary>A message reached max_deliver: the max_deliver advisory, and it leaves the pending set.</summary>
    private void GiveUp(ulong sseq)
    {
        if (!_pending.Remove(sseq, out var p)) return;
        _redeliver.Remove(sseq);
        AdviseMaxDeliveries(sseq, p.Deliveries);
        _store?.UpdateAcked(p.ConsumerSeq, sseq);
    }

    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    private void Deliver(long now)
    {
        if (PauseRemainingNanos() > 0) return; // paused (2.11): requests wait, heartbeats go on
        bool pushReady = !IsPull && _stream.Js.HasInterest(DeliverSubject!);
        if (!IsPull && pushReady) _lastActiveTick = now;
        int maxAckPending = AckNone ? 0 : Config.MaxAckPending ?? 1000;
        while (!_stop.IsCancellationRequested)
        {
            PullRequest? target = null;
            LinkedListNode<PullRequest>? targetNode = null;
            bool pinOnSend = false;
            if (IsPull)
            {
                // The first waiting request someone still listens to that its priority policy lets be served.
                targetNode = NextWaiting(out pinOnSend);
                if (targetNode is null) return;
                target = targetNode.Value;
            }
            else if (!pushReady)
            {
                return;
            }

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
                if (maxAckPending > 0 && _pending.Count >= maxAckPending) return;
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
                    return;
                }
            }

            long size = _msg.StoredSize;
            if (target is not null && target.HasByteLimit && size > target.BytesRemaining)
            {
                // Too big for what the request has left: end the request (nats-server 409 Message Size Exceeds MaxBytes).
                if (isRedelivery) _redeliver.Add(sseq);
                _stream.Js.Publish(target.Reply, default, MaxBytesExceeded, default);
                _waiting.Remove(targetNode!);
                continue;
            }

            if (!ReadyToSend(now, isRedelivery, _msg.Timestamp, size))
            {
                if (isRedelivery) _redeliver.Add(sseq);
                return;
            }

            // Commit the delivery. One clock read stamps it everywhere (pending entry, stored state, last active).
            var nowUtc = DateTime.UtcNow;
            long nowNanos = (nowUtc - DateTime.UnixEpoch).Ticks * 100;
            ulong dseq = ++_deliveredConsumerSeq;
            ulong deliveries;
            if (isRedelivery)
            {
                deliveries = ++pending!.Deliveries;
                pending.ConsumerSeq = dseq;
                pending.DeadlineTick = now + RedeliveryDelayMs(deliveries);
                pending.Timestamp = nowNanos;
                _numRedelivered++;
            }
            else
            {
                deliveries = 1;
                if (_lastPerSubject is { Count: > 0 } lps) lps.Dequeue();
                else _nextStreamSeq = sseq + 1;
                Interlocked.Decrement(ref _numPending);
                if (sseq > _deliveredStreamSeq) _deliveredStreamSeq = sseq;
                if (!AckNone) _pending[sseq] = new PendingMsg { ConsumerSeq = dseq, Timestamp = nowNanos, Deliveries = 1, DeadlineTick = now + RedeliveryDelayMs(1) };
            }
            _store?.UpdateDelivered(dseq, sseq, deliveries, nowNanos);
            _deliveredLastActive = nowUtc;
            if (pinOnSend) AssignPin(target!, now);
            Send(target?.Reply ?? DeliverSubject!, sseq, dseq, deliveries);
            OnSent(now, sseq, _msg.Timestamp, size);
            if (target is not null)
            {
                target.Delivered++;
                target.Remaining--;
                if (target.HasByteLimit) target.BytesRemaining -= size;
                if (target.HeartbeatMs > 0) target.NextHeartbeatAt = now + target.HeartbeatMs;
                if (target.Remaining <= 0 || (target.HasByteLimit && target.BytesRemaining <= 0)) _waiting.Remove(targetNode!);
                else RequeueServed(targetNode!);
            }
            else if (Config.IdleHeartbeat is > 0)
            {
                _nextHeartbeatTick = now + Config.IdleHeartbeat.Value / 1_000_000;
            }
        }
    }

    /// <summary>Publishes _msg to <paramref name="to"/> with the ack subject as reply.</summary>
    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    private void Send(byte[] to, ulong sseq, ulong dseq, ulong deliveries)
    {
        long pending = Math.Max(0, Interlocked.Read(ref _numPending));
        int n = _ackPrefixLength; // the scratch starts with the prefix, written once by the constructor
        n += Format(deliveries, n);
        n += Format(sseq, n);
        n += Format(dseq, n);
        n += Format((ulong)_msg.Timestamp, n);
        n += Format((ulong)pending, n) - 1; // no trailing dot
        var reply = _replyScratch.AsSpan(0, n);
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

    private void SendHeartbeats(long now)
    {
        foreach (var r in _waiting)
        {
            if (r.HeartbeatMs > 0 && r.NextHeartbeatAt <= now)
            {
                _stream.Js.Publish(r.Reply, default, PullHeartbeat, default);
                r.NextHeartbeatAt = now + r.HeartbeatMs;
            }
        }
        if (!IsPull && Config.IdleHeartbeat is > 0 && now >= _nextHeartbeatTick)
        {
            var last = (("Nats-Last-Consumer", _deliveredConsumerSeq.ToString(System.Globalization.CultureInfo.InvariantCulture)),
                ("Nats-Last-Stream", _deliveredStreamSeq.ToString(System.Globalization.CultureInfo.InvariantCulture)));
            // Stalled on flow control: the heartbeat names the unanswered request (nats-server sendIdleHeartbeat).
            var hdr = StalledOn is { } fc
                ? NatsHeaders.Status(100, "Idle Heartbeat", last.Item1, last.Item2, ("Nats-Consumer-Stalled", fc))
                : NatsHeaders.Status(100, "Idle Heartbeat", last.Item1, last.Item2);
            if (_stream.Js.HasInterest(DeliverSubject!)) _stream.Js.Publish(DeliverSubject!, default, hdr, default);
            _nextHeartbeatTick = now + Config.IdleHeartbeat.Value / 1_000_000;
        }
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
