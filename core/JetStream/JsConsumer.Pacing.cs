using System.Collections.Concurrent;
using System.Runtime.CompilerServices;
using System.Security.Cryptography;
using NatsBroker.JetStream.Api;
using NatsBroker.Subscriptions;

namespace NatsBroker.JetStream;

// What holds a delivery back (nats-server consumer.go loopAndGatherMsgs, needFlowControl, processFlowControl,
// setRateLimit): replay_policy "original" (a message waits as long after the previous delivery as it was stored
// after the previous message, until the consumer has caught up with what the stream held at its creation),
// rate_limit_bps (a token bucket in bits per second, burst one maximum message: max_msg_size or max_payload), and push flow control ("100
// FlowControl Request" with a $JS.FC.<stream>.<consumer>.<id> reply once half the window of pending bytes is out;
// delivery stalls past the window until the client answers, and each answer doubles the window up to 32 MB).
// All state is under the consumer's lock, except the queue of flow-control answers.
internal sealed partial class JsConsumer
{
    /// <summary>nats-server JsFlowControlMaxPending; the window starts at 1/16 of it.</summary>
    private const long FlowControlMaxPending = 32 * 1024 * 1024;
    private static readonly byte[] FlowControlRequest = NatsHeaders.Status(100, "FlowControl Request");

    private long _pacingWakeTick;
    // replay original
    private bool _replaying = true;
    private ulong _replayUntilSeq = ulong.MaxValue;
    private long _replayLastTs, _replayLastTick;
    // rate limit: a token bucket in bytes (starts full), refilled at rate_limit_bps / 8 per second
    private double _rateTokens = -1;
    private long _rateRefillTick;
    // flow control
    private long _fcWindow, _fcPendingBytes, _fcSize;
    private string? _fcId;
    private Subscription? _fcSub;
    private readonly ConcurrentQueue<FlowControlAnswer> _fcAnswers = new();

    /// <summary>A flow-control answer: its subject and, for the flow_control ack policy, the sequences it acknowledges.</summary>
    private readonly record struct FlowControlAnswer(string Subject, ulong LastStream, ulong LastConsumer);

    private void StartPacing()
    {
        if (Config.ReplayPolicy == ReplayPolicy.Original) _replayUntilSeq = _stream.Store.GetState().LastSequence;
        if (IsPull || Config.FlowControl != true) return;
        _fcWindow = FlowControlMaxPending / 16;
        _fcSub = _stream.Js.Router.SubscribeInternal($"$JS.FC.{_stream.Name}.{Name}.*", null, OnFlowControlAnswer);
    }

    private void StopPacing()
    {
        if (_fcSub is not null) _stream.Js.Router.Unsubscribe(_fcSub);
        _fcSub = null;
    }

    /// <summary>Runs on the publisher's thread: queue the answer for the loop.</summary>
    private void OnFlowControlAnswer(Subscription sub, in NatsBroker.Routing.InternalMessage msg)
    {
        if (_fcAnswers.Count > 1000) return; // only the latest request counts; a flood is ignored
        ulong lastStream = 0, lastConsumer = 0;
        if (AckFlowControl && msg.HeaderSize > 0)
        {
            // processFlowControl: Nats-Last-Consumer / Nats-Last-Stream of the answer ack up to them.
            ReadOnlySpan<byte> block = msg.Headers.IsSingleSegment ? msg.Headers.FirstSpan : System.Buffers.BuffersExtensions.ToArray(msg.Headers);
            lastStream = ParseSeq(NatsHeaders.Get(block, "Nats-Last-Stream"));
            lastConsumer = ParseSeq(NatsHeaders.Get(block, "Nats-Last-Consumer"));
        }
        _fcAnswers.Enqueue(new FlowControlAnswer(System.Text.Encoding.UTF8.GetString(msg.Subject), lastStream, lastConsumer));
        Kick();
    }

    /// <summary>Go's parseInt64 of a header value: digits only, anything else 0 (-1 there, "not set" for both).</summary>
    private static ulong ParseSeq(ReadOnlySpan<byte> value) =>
        System.Buffers.Text.Utf8Parser.TryParse(value, out ulong v, out int used) && used == value.Length ? v : 0;

    /// <summary>
    /// Under the lock: apply flow-control answers (only the latest request's counts); with the flow_control ack
    /// policy the answer's last stream sequence (and consumer sequence, 0 allowed) acks as "all" does.
    /// </summary>
    private void DrainFlowControl(ref List<ulong>? retained)
    {
        while (_fcAnswers.TryDequeue(out var answer))
        {
            if (answer.Subject != _fcId) continue;
            if (_fcWindow < FlowControlMaxPending) _fcWindow = Math.Min(FlowControlMaxPending, _fcWindow * 2);
            _fcPendingBytes = Math.Max(0, _fcPendingBytes - _fcSize);
            _fcId = null;
            _fcSize = 0;
            if (AckFlowControl && answer.LastStream > 0) AckMessage(answer.LastStream, answer.LastConsumer, 1, sample: false, ref retained);
        }
    }

    /// <summary>Under the lock: false when this delivery must wait (the wake-up time is set when it is a matter of time).</summary>
    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    private bool ReadyToSend(long now, bool isRedelivery, long storedTs, long size)
    {
        if (_fcWindow > 0 && _fcPendingBytes > _fcWindow) return false; // stalled until the client answers
        if (Config.RateLimitBps is > 0 and var bps)
        {
            double bytesPerMs = bps / 8_000.0;
            double burst = Math.Max(1, _stream.Config.MaxMsgSize > 0 ? _stream.Config.MaxMsgSize : _stream.Js.Options.MaxPayload);
            _rateTokens = _rateTokens < 0 ? burst : Math.Min(burst, _rateTokens + (now - _rateRefillTick) * bytesPerMs);
            _rateRefillTick = now;
            double need = Math.Min(size, burst);
            if (_rateTokens < need)
            {
                _pacingWakeTick = now + (long)Math.Ceiling((need - _rateTokens) / bytesPerMs);
                return false;
            }
        }
        if (!isRedelivery && _replaying && Config.ReplayPolicy == ReplayPolicy.Original && _replayLastTick != 0)
        {
            long delayMs = (storedTs - _replayLastTs) / 1_000_000 - (now - _replayLastTick);
            if (delayMs > 1)
            {
                _pacingWakeTick = now + delayMs;
                return false;
            }
        }
        return true;
    }

    /// <summary>Under the lock, after a delivery: advance replay, rate and flow-control accounting.</summary>
    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    private void OnSent(long now, ulong sseq, long storedTs, long size)
    {
        if (_replaying && Config.ReplayPolicy == ReplayPolicy.Original)
        {
            _replayLastTs = storedTs;
            _replayLastTick = now;
            if (sseq >= _replayUntilSeq) _replaying = false;
        }
        if (Config.RateLimitBps is > 0) _rateTokens -= size; // may go below zero for a message larger than the burst
        if (_fcWindow > 0)
        {
            _fcPendingBytes += size;
            // needFlowControl: past half the window, or (flow_control ack policy) at max_ack_pending.
            if (_fcId is null && (_fcPendingBytes > _fcWindow / 2 || (AckFlowControl && Config.MaxAckPending is > 0 and var maxp && _pending.Count >= maxp))) SendFlowControl();
            else if (_fcId is not null && _fcPendingBytes - _fcSize >= _fcWindow) _fcSize += size;
        }
    }

    private void SendFlowControl()
    {
        Span<char> id = stackalloc char[4];
        const string digits = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
        for (int i = 0; i < id.Length; i++) id[i] = digits[RandomNumberGenerator.GetInt32(digits.Length)];
        _fcId = $"$JS.FC.{_stream.Name}.{Name}.{id}";
        _fcSize = _fcPendingBytes;
        FlushDeliveries(); // the request must follow the deliveries it counts
        _stream.Js.Publish(DeliverSubject!, System.Text.Encoding.UTF8.GetBytes(_fcId), FlowControlRequest, default);
    }

    /// <summary>The stalled flow-control reply heartbeats carry (Nats-Consumer-Stalled), or null.</summary>
    private string? StalledOn => _fcId;
}
