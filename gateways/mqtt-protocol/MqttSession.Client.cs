using System.Buffers;
using System.Net.Sockets;
using Microsoft.Extensions.Logging;
using MQTTnet.Adapter;
using MQTTnet.Packets;
using MQTTnet.Protocol;

namespace NatsBroker.MqttGateway;

/// <summary>The client's side: the read loop, keep-alive, and the packets other than PUBLISH/SUBSCRIBE.</summary>
internal sealed partial class MqttSession
{
    private PacketReader _reader = null!;
    private ushort _keepAlive;

    /// <summary>Reads packets until the client leaves. True for a DISCONNECT (no will), false otherwise.</summary>
    private async Task<bool> ClientLoopAsync(CancellationToken drain)
    {
        using var stop = CancellationTokenSource.CreateLinkedTokenSource(drain, _end.Token);
        // [MQTT-3.1.2-24]: nothing from the client within one and a half keep-alive periods closes it.
        var deadline = _keepAlive > 0 ? TimeSpan.FromSeconds(_keepAlive * 1.5) : Timeout.InfiniteTimeSpan;
        // One token for every read, its timer pushed back per packet (no allocation per packet).
        using var read = CancellationTokenSource.CreateLinkedTokenSource(stop.Token);
        try
        {
            return await ReadPacketsAsync(stop, read, deadline).ConfigureAwait(false);
        }
        finally
        {
            // Whatever ended the loop (DISCONNECT, a protocol error, the client closing), the PUBLISHes read before it
            // were received and go to the core: a QoS 0 PUBLISH batched because a DISCONNECT followed it in the same
            // read was lost otherwise (nats-server processes each packet as it parses it).
            await SettlePubAcksAsync().ConfigureAwait(false);
        }
    }

    private async Task<bool> ReadPacketsAsync(CancellationTokenSource stop, CancellationTokenSource read, TimeSpan deadline)
    {
        // The keep-alive timer is pushed back before every read that may wait (as before: the deadline runs from
        // there), but not for each packet already buffered: moving a timer takes the runtime's timer-queue lock, ~2.5%
        // of the gateway's CPU in mqtt-pubsub-qos0-128 (perf). While buffered packets are handled it is still pushed
        // back once half the deadline has gone by, so it cannot fire in the middle of a run of them.
        bool timed = deadline != Timeout.InfiniteTimeSpan;
        long halfDeadline = timed ? (long)deadline.TotalMilliseconds / 2 : 0;
        long armedAt = 0;
        while (true)
        {
            ReceivedMqttPacket? read_;
            bool mayWait = !_reader.HasBufferedPacket;
            // Before the read may wait for the client: the publishes and stores batched so far go to the core, and the
            // PUBACKs of the stored ones to the client.
            if (mayWait && _nats is { } link)
            {
                await link.FlushPublishesAsync(stop.Token).ConfigureAwait(false);
                await DrainPubAcksAsync(stop.Token).ConfigureAwait(false);
            }
            if (timed)
            {
                long now = Environment.TickCount64;
                if (mayWait || now - armedAt >= halfDeadline)
                {
                    read.CancelAfter(deadline);
                    armedAt = now;
                }
            }
            try
            {
                read_ = await _reader.ReadAsync(read.Token).ConfigureAwait(false);
            }
            catch (OperationCanceledException) when (!stop.IsCancellationRequested)
            {
                _log.LogDebug("{Ip}:{Port} - mqtt client {Id}: keep-alive timeout", RemoteIp, _remote.Port, _clientId);
                return false;
            }
            catch (OperationCanceledException)
            {
                return false;
            }
            if (read_ is not { } packet)
            {
                _log.LogDebug("{Ip}:{Port} - mqtt client {Id}: closed by the client", RemoteIp, _remote.Port, _clientId);
                return false;
            }
            var type = (MqttControlPacketType)(packet.FixedHeader >> 4);
            // The MUSTs MQTTnet's decoder does not check (flags, empty SUBSCRIBE, QoS 3...): PacketChecks.
            if (PacketChecks.Check(packet.FixedHeader, packet.Body.AsSpan(), _v5) is { } malformed)
            {
                _log.LogDebug("{Ip}:{Port} - mqtt client {Id}: malformed {Type} packet ({Reason})", RemoteIp, _remote.Port, _clientId, type, malformed);
                await SendDisconnectAsync(malformed, stop.Token).ConfigureAwait(false);
                return false;
            }
            // Another QoS 1 PUBLISH joins the queued PUBACKs; any other packet is handled after them (PUBACK order).
            bool qos1Publish = type == MqttControlPacketType.Publish && ((packet.FixedHeader >> 1) & 3) == 1;
            if (_pendingPubAcks.Count > 0 && (!qos1Publish || _pendingPubAcks.Count >= MaxPendingPubAcks))
                await DrainPubAcksAsync(stop.Token).ConfigureAwait(false);
            switch (type)
            {
                case MqttControlPacketType.Publish:
                    if (await TryRepeatedTopicPublishAsync(packet, stop.Token).ConfigureAwait(false)) break;
                    if (!PacketChecks.ValidTopicName(packet.Body))
                    {
                        await SendDisconnectAsync(MqttDisconnectReasonCode.MalformedPacket, stop.Token).ConfigureAwait(false);
                        return false;
                    }
                    if (!await OnPublishAsync((MqttPublishPacket)_codec.Decode(packet), packet.Body, stop.Token).ConfigureAwait(false)) return false;
                    break;
                case MqttControlPacketType.PubAck:
                    await OnPubAckAsync(((MqttPubAckPacket)_codec.Decode(packet)).PacketIdentifier, stop.Token).ConfigureAwait(false);
                    break;
                case MqttControlPacketType.PubRec:
                    await OnPubRecAsync(((MqttPubRecPacket)_codec.Decode(packet)).PacketIdentifier, stop.Token).ConfigureAwait(false);
                    break;
                case MqttControlPacketType.PubRel:
                    await OnPubRelAsync(((MqttPubRelPacket)_codec.Decode(packet)).PacketIdentifier, stop.Token).ConfigureAwait(false);
                    break;
                case MqttControlPacketType.PubComp:
                    await OnPubCompAsync(((MqttPubCompPacket)_codec.Decode(packet)).PacketIdentifier, stop.Token).ConfigureAwait(false);
                    break;
                case MqttControlPacketType.Subscribe:
                    await OnSubscribeAsync((MqttSubscribePacket)_codec.Decode(packet), stop.Token).ConfigureAwait(false);
                    break;
                case MqttControlPacketType.Unsubscribe:
                    await OnUnsubscribeAsync((MqttUnsubscribePacket)_codec.Decode(packet), stop.Token).ConfigureAwait(false);
                    break;
                case MqttControlPacketType.PingReq:
                    await _out.SendRawAsync(PingResp, stop.Token).ConfigureAwait(false);
                    break;
                case MqttControlPacketType.Disconnect:
                    return OnDisconnect(packet);
                case MqttControlPacketType.Connect:
                    // [MQTT-3.1.0-2]: a second CONNECT is a protocol violation.
                    _log.LogDebug("{Ip}:{Port} - mqtt client {Id}: received a second CONNECT packet", RemoteIp, _remote.Port, _clientId);
                    return false;
                case MqttControlPacketType.Auth:
                    // Re-authentication, or a protocol error without enhanced authentication at CONNECT (MqttSession.EnhancedAuth.cs).
                    if (!await OnAuthAsync(packet, stop.Token).ConfigureAwait(false)) return false;
                    break;
                default:
                    _log.LogDebug("{Ip}:{Port} - mqtt client {Id}: unexpected packet type {Type}", RemoteIp, _remote.Port, _clientId, type);
                    return false;
            }
        }
    }

    private static readonly byte[] PingResp = [0xD0, 0x00];

    /// <summary>The client's DISCONNECT: its Session Expiry Interval applies; true when the will is dropped.</summary>
    private bool OnDisconnect(ReceivedMqttPacket packet)
    {
        OnDisconnectExpiry(packet.Body.AsSpan());
        // MQTT 5: "Disconnect with Will Message" (0x04) still publishes the will.
        if (_v5 && packet.Body.Count > 0 && packet.Body[0] == (byte)MqttDisconnectReasonCode.DisconnectWithWillMessage) return false;
        _will = null;
        return true;
    }

    /// <summary>How long <see cref="DisconnectAlreadySentAsync"/> reads: what it looks for has already arrived.</summary>
    private static readonly TimeSpan LeftoverReadLimit = TimeSpan.FromMilliseconds(500);

    /// <summary>
    /// After a write to the client failed: a client may send DISCONNECT and close without reading what we still send
    /// (MQTTnet does after a CONNACK, while this process was still writing after it), and then our write fails with
    /// EPIPE or ECONNRESET although the DISCONNECT is in the socket's receive queue (Linux keeps data received before a
    /// reset readable). Reads what is left, for at most <see cref="LeftoverReadLimit"/>: a DISCONNECT found there ends
    /// the connection as the client asked (no will, its Session Expiry Interval [MQTT-3.14.2-2]); anything else the
    /// client sent after the failure is dropped, unacknowledged. True when a DISCONNECT dropped the will.
    /// </summary>
    private async Task<bool> DisconnectAlreadySentAsync()
    {
        using var limit = new CancellationTokenSource(LeftoverReadLimit);
        try
        {
            while (await _reader.ReadAsync(limit.Token).ConfigureAwait(false) is { } packet)
            {
                if ((MqttControlPacketType)(packet.FixedHeader >> 4) == MqttControlPacketType.Disconnect) return OnDisconnect(packet);
            }
        }
        catch (Exception ex) when (ex is OperationCanceledException || IsConnectionFault(ex))
        {
            // nothing more arrived, or nothing more can be read: no DISCONNECT
        }
        return false;
    }

    /// <summary>MQTT 5 only: a server DISCONNECT with a reason before closing (3.1.1 just closes).</summary>
    private async Task SendDisconnectAsync(MqttDisconnectReasonCode reason, CancellationToken ct)
    {
        if (!_v5) return;
        try
        {
            await _out.SendAsync(new MqttDisconnectPacket { ReasonCode = reason }, ct).ConfigureAwait(false);
            _sentDisconnect = true;
        }
        catch (Exception ex) when (ex is IOException or ObjectDisposedException or OperationCanceledException)
        {
        }
    }

    private bool _sentDisconnect;

    /// <summary>
    /// After a server DISCONNECT ([MQTT-3.14.4-1]: the server then closes the connection): on TCP the send side is
    /// shut and what the client still sends is read and dropped until it closes (at most 2 s), because closing a
    /// socket with unread input resets it, and the client could lose the DISCONNECT before reading it.
    /// </summary>
    private async Task LingerAsync()
    {
        if (!_sentDisconnect || _client is not NetworkStream) return;
        try
        {
            _socket.Shutdown(SocketShutdown.Send);
            using var limit = new CancellationTokenSource(TimeSpan.FromSeconds(2));
            var sink = new byte[4096];
            while (await _client.ReadAsync(sink, limit.Token).ConfigureAwait(false) > 0) { }
        }
        catch (Exception ex) when (ex is IOException or SocketException or ObjectDisposedException or OperationCanceledException)
        {
            // the client closed or took too long: the socket is closed anyway
        }
    }

    /// <summary>
    /// The connection is over: nothing more is delivered to it, the session's record gets its expiry (or the session
    /// ends), and without DISCONNECT the will is published ([MQTT-3.1.2-8]).
    /// </summary>
    private async Task EndConnectionAsync(bool graceful, long closedAt, CancellationToken drain)
    {
        try
        {
            using var timeout = CancellationTokenSource.CreateLinkedTokenSource(_end.Token);
            timeout.CancelAfter(_options.SessionEndTimeout);
            await StopDeliveriesAsync(timeout.Token).ConfigureAwait(false);
            await EndSessionAsync(closedAt, timeout.Token).ConfigureAwait(false);
        }
        catch (Exception ex) when (ex is IOException or ObjectDisposedException or OperationCanceledException or TimeoutException or JetStreamException)
        {
            _log.LogWarning("{Ip}:{Port} - could not end the session of {Id}: {Error}", RemoteIp, _remote.Port, _clientId, ex.Message);
        }
        finally
        {
            _sessionSettled.TrySetResult();
        }
        if (!graceful) await PublishWillAsync(drain).ConfigureAwait(false);
    }

    /// <summary>The will as a PUBLISH from this client ([MQTT-3.1.2-8]), retained when asked.</summary>
    private async Task PublishWillAsync(CancellationToken drain)
    {
        var will = _will;
        if (will is null || _nats is null || _takenOver)
        {
            if (will is not null) _log.LogDebug("{Ip}:{Port} - mqtt client {Id}: will not published (taken over: {TakenOver})", RemoteIp, _remote.Port, _clientId, _takenOver);
            return;
        }
        _will = null;
        var packet = new MqttPublishPacket
        {
            Topic = will.WillTopic,
            Payload = new ReadOnlySequence<byte>(will.WillMessage ?? []),
            QualityOfServiceLevel = will.WillQoS,
            Retain = will.WillRetain,
            ContentType = will.WillContentType,
            ResponseTopic = will.WillResponseTopic,
            CorrelationData = will.WillCorrelationData,
            MessageExpiryInterval = will.WillMessageExpiryInterval,
            PayloadFormatIndicator = will.WillPayloadFormatIndicator,
        };
        try
        {
            // MQTT 5 section 3.1.3.2.2: the will waits for its Will Delay Interval or the end of the session, whichever
            // comes first; a new connection to the session in between (a takeover, which ends _end) cancels it
            // ([MQTT-3.1.3-9]). A draining gateway publishes it at once (the wait is not kept across restarts).
            uint delay = _v5 ? Math.Min(will.WillDelayInterval, _sessionExpiry) : 0;
            if (delay > 0)
            {
                _log.LogDebug("{Ip}:{Port} - mqtt client {Id}: will delayed {Delay} s", RemoteIp, _remote.Port, _clientId, delay);
                using var wait = CancellationTokenSource.CreateLinkedTokenSource(_end.Token, drain, _willCancel.Token);
                try
                {
                    await Task.Delay(TimeSpan.FromSeconds(delay), wait.Token).ConfigureAwait(false);
                }
                catch (OperationCanceledException) when (!_takenOver)
                {
                    // draining or the core link ended: publish now (the link may be gone, then the publish fails below)
                }
                if (_takenOver)
                {
                    _log.LogDebug("{Ip}:{Port} - mqtt client {Id}: will cancelled by a new connection", RemoteIp, _remote.Port, _clientId);
                    return;
                }
            }
            using var timeout = new CancellationTokenSource(_options.JsApiTimeout);
            await PublishToNatsAsync(packet, will.WillUserProperties, timeout.Token).ConfigureAwait(false);
            string? error = await _nats.FlushAsync(timeout.Token).ConfigureAwait(false);
            _log.LogDebug("{Ip}:{Port} - mqtt client {Id}: will published on {Topic}{Error}", RemoteIp, _remote.Port, _clientId, will.WillTopic, error is null ? "" : ": " + error);
        }
        catch (Exception ex) when (ex is IOException or ObjectDisposedException or OperationCanceledException or TimeoutException or JetStreamException)
        {
            _log.LogWarning("{Ip}:{Port} - could not publish the will of {Id}: {Error}", RemoteIp, _remote.Port, _clientId, ex.Message);
        }
        catch (Exception ex) when (ex is ArgumentException or InvalidOperationException or FormatException)
        {
            // A will that passed CONNECT's checks cannot fail here; if a bug makes it, the loss is logged as an error
            // and the session still ends normally (issue 40: an IndexOutOfRangeException here once ended it).
            _log.LogError(ex, "{Ip}:{Port} - the will of {Id} on {Topic} was not published", RemoteIp, _remote.Port, _clientId, will.WillTopic);
        }
    }
}
