using System.Buffers;
using Microsoft.Extensions.Logging;
using MQTTnet.Packets;
using MQTTnet.Protocol;

namespace NatsBroker.MqttGateway;

/// <summary>
/// PUBLISH from the client (server/mqtt.go mqttProcessPub): QoS 0 is published; QoS 1 is published (and, when
/// the account has the $MQTT_msgs stream, stored under <c>$MQTT.msgs.&lt;subject&gt;</c>) then PUBACKed; QoS 2 is
/// published once per packet identifier and PUBRECed, the identifier released by PUBREL → PUBCOMP
/// ([MQTT-4.3.3-2] method B: duplicates of an unreleased identifier are not published again).
/// </summary>
internal sealed partial class MqttSession
{
    /// <summary>Client → server topic aliases we accept (MQTT 5 section 3.3.2.3.4).</summary>
    private const ushort TopicAliasMaximum = 64;

    /// <summary>The Receive Maximum we announce: unreleased QoS 2 PUBLISHes a client may have outstanding (section 4.9).</summary>
    private ushort ReceiveMaximum => (ushort)Math.Min(_options.MaxAckPending, ushort.MaxValue);

    private readonly Dictionary<ushort, string> _topicAliases = [];
    private readonly HashSet<ushort> _qos2Received = [];

    /// <summary>False when the connection must be closed (bad topic, oversized message).</summary>
    private async Task<bool> OnPublishAsync(MqttPublishPacket p, ArraySegment<byte> body, CancellationToken ct)
    {
        int qos = (int)p.QualityOfServiceLevel;
        if (_v5 && p.TopicAlias == 0 && HasTopicAliasZero(body, qos))
        {
            // [MQTT-3.3.2-8]: a Topic Alias of 0 is a protocol error: DISCONNECT 0x94.
            await SendDisconnectAsync(MqttDisconnectReasonCode.TopicAliasInvalid, ct).ConfigureAwait(false);
            return false;
        }
        if (_v5 && p.TopicAlias != 0)
        {
            if (p.TopicAlias > TopicAliasMaximum)
            {
                await SendDisconnectAsync(MqttDisconnectReasonCode.TopicAliasInvalid, ct).ConfigureAwait(false);
                return false;
            }
            if (string.IsNullOrEmpty(p.Topic))
            {
                if (!_topicAliases.TryGetValue(p.TopicAlias, out var aliased))
                {
                    await SendDisconnectAsync(MqttDisconnectReasonCode.ProtocolError, ct).ConfigureAwait(false);
                    return false;
                }
                p.Topic = aliased;
            }
            else
            {
                _topicAliases[p.TopicAlias] = p.Topic;
            }
        }
        if (_v5 && qos == 2 && _qos2Received.Count >= ReceiveMaximum && !_qos2Received.Contains(p.PacketIdentifier))
        {
            // [MQTT-3.3.4-7] / section 4.9: more unreleased QoS 2 PUBLISHes than our Receive Maximum: DISCONNECT 0x93.
            await SendDisconnectAsync(MqttDisconnectReasonCode.ReceiveMaximumExceeded, ct).ConfigureAwait(false);
            return false;
        }
        if (qos == 2 && _options.RejectQoS2Publish)
        {
            _log.LogDebug("{Ip}:{Port} - mqtt client {Id}: QoS 2 publish rejected by configuration", RemoteIp, _remote.Port, _clientId);
            return false;
        }
        if (qos > 0 && p.PacketIdentifier == 0) return false; // [MQTT-2.3.1-1]
        if (qos == 2 && _qos2Received.Contains(p.PacketIdentifier))
        {
            // A resent QoS 2 PUBLISH whose PUBREL has not come yet: acknowledged again, not delivered again.
            await _out.SendAsync(new MqttPubRecPacket { PacketIdentifier = p.PacketIdentifier }, ct).ConfigureAwait(false);
            return true;
        }
        var outcome = await PublishToNatsAsync(p, p.UserProperties, ct, deferQoS1Ack: true).ConfigureAwait(false);
        if (outcome == PublishOutcome.Closed) return false;
        switch (qos)
        {
            case 1:
                // A stored QoS 1 PUBLISH is acknowledged once its store is (MqttSession.PubAcks.cs).
                if (outcome != PublishOutcome.AckDeferred) await _out.SendPubAckAsync(p.PacketIdentifier, ct).ConfigureAwait(false);
                break;
            case 2:
                _qos2Received.Add(p.PacketIdentifier);
                await _out.SendAsync(new MqttPubRecPacket { PacketIdentifier = p.PacketIdentifier }, ct).ConfigureAwait(false);
                break;
        }
        return true;
    }

    private async Task OnPubRelAsync(ushort packetId, CancellationToken ct)
    {
        bool known = _qos2Received.Remove(packetId);
        await _out.SendAsync(new MqttPubCompPacket
        {
            PacketIdentifier = packetId,
            ReasonCode = known || !_v5 ? MqttPubCompReasonCode.Success : MqttPubCompReasonCode.PacketIdentifierNotFound,
        }, ct).ConfigureAwait(false);
    }

    private string? _lastTopic;
    private string? _lastSubject;
    /// <summary>_lastTopic as UTF-8 (what a PUBLISH carries), for <see cref="TryRepeatedTopicPublish"/>; set with _lastSubject.</summary>
    private byte[]? _lastTopicUtf8;

    /// <summary>TopicMapping.TopicToSubject, remembering the last topic: a publisher usually repeats its topic.</summary>
    private string? SubjectFor(string topic)
    {
        if (_lastSubject is not null && string.Equals(topic, _lastTopic, StringComparison.Ordinal)) return _lastSubject;
        var subject = TopicMapping.TopicToSubject(topic);
        (_lastTopic, _lastSubject) = (topic, subject);
        _lastTopicUtf8 = subject is null ? null : System.Text.Encoding.UTF8.GetBytes(topic);
        return subject;
    }

    /// <summary>
    /// A publish the core refuses (permissions) is dropped by the core, as nats-server drops it for MQTT clients.
    /// AckDeferred: a QoS 1 PUBLISH whose store is under way, its PUBACK queued (MqttSession.PubAcks.cs).
    /// </summary>
    private enum PublishOutcome { Published, Closed, AckDeferred }

    /// <summary>
    /// The PUBLISH as an HPUB (<c>Nmqtt-Pub:&lt;qos&gt;</c> and MQTT 5 user properties as headers; a response
    /// topic as the reply subject), plus the retained-message store when <c>retain</c> is set and the QoS 1/2 store.
    /// </summary>
    /// <param name="deferQoS1Ack">From the read loop: a QoS 1 store is sent without waiting for it, its PUBACK queued.</param>
    private async Task<PublishOutcome> PublishToNatsAsync(MqttPublishPacket p, List<MqttUserProperty>? userProperties, CancellationToken ct,
        bool deferQoS1Ack = false)
    {
        var subject = SubjectFor(p.Topic ?? "");
        if (subject is null)
        {
            _log.LogDebug("{Ip}:{Port} - mqtt client {Id}: invalid publish topic \"{Topic}\"", RemoteIp, _remote.Port, _clientId, p.Topic);
            return PublishOutcome.Closed;
        }
        int qos = (int)p.QualityOfServiceLevel;
        List<KeyValuePair<string, string>>? props = null;
        if (userProperties is { Count: > 0 })
        {
            props = new(userProperties.Count);
            foreach (var u in userProperties) props.Add(new(u.Name, System.Text.Encoding.UTF8.GetString(u.ValueBuffer.Span)));
        }
        // MQTT 5 section 3.3.2.3.3: the expiry interval runs from now; kept as a time so every hop can count down.
        long expiresAt = _v5 && p.MessageExpiryInterval > 0 ? DateTimeOffset.UtcNow.ToUnixTimeMilliseconds() + p.MessageExpiryInterval * 1000L : 0;
        byte[] headers = _v5
            ? NatsHeaders.ForPublish(qos, props, p.ContentType, p.PayloadFormatIndicator == MQTTnet.Protocol.MqttPayloadFormatIndicator.CharacterData, p.CorrelationData,
                expiresAt, p.Retain, _noLocalCount > 0 ? _sourceId : null)
            : NatsHeaders.ForPublish(qos, props, retain: p.Retain);
        if (headers.Length + p.Payload.Length > _options.MaxPayload)
        {
            // nats-server mqttProcessPub: a maximum payload violation closes the client.
            _log.LogDebug("{Ip}:{Port} - mqtt client {Id}: maximum payload exceeded", RemoteIp, _remote.Port, _clientId);
            return PublishOutcome.Closed;
        }
        string? reply = _v5 && !string.IsNullOrEmpty(p.ResponseTopic) ? TopicMapping.TopicToSubject(p.ResponseTopic) : null;
        // QoS 0 without retain needs nothing after the publish, nor does a QoS 1 one whose PUBACK waits for its store:
        // when the client's next packet is already buffered it joins one write to the core with the others of this
        // read (the read loop flushes before it waits).
        bool deferAck = deferQoS1Ack && qos == 1 && _js is not null && !p.Retain;
        bool batch = (qos == 0 || deferAck) && !p.Retain && _reader.HasBufferedPacket;
        await _nats!.PublishAsync(subject, reply, headers, p.Payload, ct, batch).ConfigureAwait(false);
        if (p.Retain) await StoreRetainedAsync(p, subject, props, expiresAt, ct).ConfigureAwait(false);
        if (deferAck)
        {
            QueuePubAck(p.PacketIdentifier, await _js!.SendStoreAsync(JetStreamApi.MessagePrefix + subject, headers, p.Payload, ct, batch).ConfigureAwait(false));
            return PublishOutcome.AckDeferred;
        }
        if (qos > 0) await StoreQoSMessageAsync(subject, headers, p.Payload, ct).ConfigureAwait(false);
        return PublishOutcome.Published;
    }

    /// <summary>Whether the PUBLISH's properties hold a Topic Alias of 0 (MQTTnet decodes it as "no alias").</summary>
    private static bool HasTopicAliasZero(ArraySegment<byte> body, int qos)
    {
        var span = body.AsSpan();
        if (span.Length < 2) return false;
        int at = 2 + (span[0] << 8 | span[1]) + (qos > 0 ? 2 : 0);
        var block = Mqtt5Properties.Block(span, at);
        return !block.IsEmpty && Mqtt5Properties.TryFind(block, Mqtt5Properties.TopicAlias, out uint alias) && alias == 0;
    }
}
