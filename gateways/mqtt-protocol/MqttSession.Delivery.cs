using System.Text;
using MQTTnet.Packets;
using MQTTnet.Protocol;

namespace NatsBroker.MqttGateway;

/// <summary>
/// One message to the client as a PUBLISH: QoS 0 goes out at once, QoS 1/2 through the window
/// (MqttSession.Outbound.cs). Encoded by hand when it carries no MQTT 5 properties (3.1.1, and the common MQTT 5
/// case), else by MQTTnet with the properties made from the NATS headers (NatsHeaders): user properties, response
/// topic, content type, payload format, correlation data, subscription identifiers, and the Message Expiry Interval
/// counted down to what is left ([MQTT-3.3.2-6]); a message past its expiry is not sent ([MQTT-3.3.2-5]).
/// </summary>
internal sealed partial class MqttSession
{
    private static bool MessageExpired(long expiresAt) => expiresAt > 0 && expiresAt <= DateTimeOffset.UtcNow.ToUnixTimeMilliseconds();

    /// <param name="batch">From the link's read loop: a QoS 0 PUBLISH may wait for the link's end-of-read flush
    /// (<see cref="FlushDeliveriesAsync"/>).</param>
    private async ValueTask SendPublishAsync(uint[]? identifiers, ReadOnlyMemory<byte> subject, ReadOnlyMemory<byte> reply,
        ReadOnlyMemory<byte> headers, ReadOnlyMemory<byte> payload, byte qos, bool retain, string? ack, bool batch = false)
    {
        long expiresAt = NatsHeaders.ExpiresAt(headers.Span);
        if (MessageExpired(expiresAt))
        {
            if (ack is not null) await AckStreamMessageAsync(ack).ConfigureAwait(false);
            return;
        }
        // The link's read loop delivers one message at a time: its QoS 0 topics share one buffer (copied into the
        // client's output before the next delivery); other callers and QoS 1/2 (kept in flight) get their own.
        if (batch && qos == 0)
        {
            await WritePublishAsync(LiveTopic(subject.Span), reply, headers, payload, 0, 0, retain, dup: false, identifiers, expiresAt, _end.Token, batch).ConfigureAwait(false);
            return;
        }
        byte[] topic = new byte[subject.Length];
        int topicLength = TopicMapping.SubjectToTopic(subject.Span, topic);
        if (qos == 0)
        {
            await WritePublishAsync(topic.AsMemory(0, topicLength), reply, headers, payload, 0, 0, retain, dup: false, identifiers, expiresAt, _end.Token, batch).ConfigureAwait(false);
            return;
        }
        var f = new Inflight(qos, ack, topic.AsSpan(0, topicLength).ToArray(), payload.ToArray(), _v5 ? headers.ToArray() : [], _v5 ? reply.ToArray() : [],
            retain, identifiers, expiresAt);
        await SendOrQueueAsync(f).ConfigureAwait(false);
    }

    /// <summary>
    /// The usual live QoS 0 delivery buffered for the link's end-of-read flush without an async state machine: no
    /// message expiry, nothing that needs MQTT 5 properties or a size check, room in the client's batch. False, with
    /// nothing sent, when <see cref="SendPublishAsync"/> must handle it.
    /// </summary>
    private bool TryBufferLiveQos0(NatsMessage m, uint[]? identifiers, bool retain)
    {
        var headers = m.Headers.Span;
        if (NatsHeaders.ExpiresAt(headers) != 0) return false;
        if (_v5 && !IsPlainV5(headers, m.Reply, identifiers, out _)) return false;
        var topic = LiveTopic(m.Subject.Span);
        if (TooLargeForClient(topic.Length, m.Payload.Length, 0)) return false;
        return _out.TryBufferQos0Publish(topic.Span, m.Payload.Span, retain);
    }

    /// <summary>
    /// [MQTT-3.1.2-25]: a PUBLISH over the client's Maximum Packet Size (MQTT 5) is not sent.
    /// <paramref name="propertyBytes"/>: an upper bound of its properties' size, estimated from the headers and reply
    /// they come from.
    /// </summary>
    private bool TooLargeForClient(int topicLength, int payloadLength, int propertyBytes) =>
        _v5 && payloadLength + topicLength + 16 + propertyBytes > _clientMaxPacketSize;

    /// <summary>An MQTT 5 PUBLISH that carries no properties: written by hand like a 3.1.1 one (<paramref name="props"/>: the user properties found).</summary>
    private bool IsPlainV5(ReadOnlySpan<byte> headers, ReadOnlyMemory<byte> reply, uint[]? identifiers, out List<KeyValuePair<string, string>>? props)
    {
        props = NatsHeaders.UserProperties(headers);
        return props is null && reply.IsEmpty && identifiers is null && !_out.UsesTopicAliases && !NatsHeaders.HasMessageProperties(headers);
    }

    // The last subject the link's read loop delivered at QoS 0 and its topic: a fan-out, or any stream of messages
    // on one subject, maps the same subject for every message, so it is compared instead of mapped again (the mapping
    // was 9% of the gateway's CPU in the fan-out row). Made at the first delivery: an idle session holds neither.
    private byte[]? _liveSubject, _liveTopic;
    private int _liveSubjectLength, _liveTopicLength;

    /// <summary>
    /// The topic for a QoS 0 delivery of the link's read loop, valid until its next delivery (it is copied into the
    /// client's output, or into a string for MQTTnet, before that).
    /// </summary>
    private ReadOnlyMemory<byte> LiveTopic(ReadOnlySpan<byte> subject)
    {
        if (_liveSubject is { } cachedSubject && _liveTopic is { } cachedTopic
            && subject.SequenceEqual(cachedSubject.AsSpan(0, _liveSubjectLength)))
        {
            return cachedTopic.AsMemory(0, _liveTopicLength);
        }
        if (_liveSubject is null || _liveTopic is null || _liveSubject.Length < subject.Length)
        {
            int size = Math.Max(subject.Length, 64);
            _liveSubject = new byte[size];
            _liveTopic = new byte[size];
        }
        subject.CopyTo(_liveSubject);
        _liveSubjectLength = subject.Length;
        _liveTopicLength = TopicMapping.SubjectToTopic(subject, _liveTopic);
        return _liveTopic.AsMemory(0, _liveTopicLength);
    }

    private ValueTask WritePublishAsync(Inflight f, ushort packetId, bool dup, CancellationToken ct) =>
        WritePublishAsync(f.Topic, f.Reply, f.Headers, f.Payload, f.Qos, packetId, f.Retain, dup, f.Identifiers, f.ExpiresAt, ct);

    private async ValueTask WritePublishAsync(ReadOnlyMemory<byte> topic, ReadOnlyMemory<byte> reply, ReadOnlyMemory<byte> headers,
        ReadOnlyMemory<byte> payload, byte qos, ushort packetId, bool retain, bool dup, uint[]? identifiers, long expiresAt, CancellationToken ct, bool batch = false)
    {
        List<KeyValuePair<string, string>>? props = null;
        bool plain = !_v5 || IsPlainV5(headers.Span, reply, identifiers, out props);
        if (TooLargeForClient(topic.Length, payload.Length, plain ? 0 : headers.Length + reply.Length + 16))
        {
            // Too large for the client: discarded as if it had been sent and acknowledged.
            if (packetId != 0) await CompleteDiscardedAsync(packetId).ConfigureAwait(false);
            return;
        }
        if (plain)
        {
            await _out.SendPublishAsync(topic, payload, qos, packetId, retain, dup, ct, batch).ConfigureAwait(false);
            return;
        }
        var packet = new MqttPublishPacket
        {
            Topic = Encoding.UTF8.GetString(topic.Span),
            Payload = new System.Buffers.ReadOnlySequence<byte>(payload.ToArray()),
            QualityOfServiceLevel = (MqttQualityOfServiceLevel)qos,
            PacketIdentifier = packetId,
            Retain = retain,
            Dup = dup,
        };
        if (props is not null) packet.UserProperties = [.. props.Select(p => new MqttUserProperty(p.Key, Encoding.UTF8.GetBytes(p.Value).AsMemory()))];
        if (!reply.IsEmpty) packet.ResponseTopic = TopicMapping.SubjectToTopic(Encoding.UTF8.GetString(reply.Span));
        if (identifiers is not null) packet.SubscriptionIdentifiers = [.. identifiers];
        if (expiresAt > 0)
            packet.MessageExpiryInterval = (uint)Math.Max(1, (expiresAt - DateTimeOffset.UtcNow.ToUnixTimeMilliseconds() + 999) / 1000);
        if (NatsHeaders.Get(headers.Span, NatsHeaders.ContentType) is { } contentType) packet.ContentType = contentType;
        if (NatsHeaders.Get(headers.Span, NatsHeaders.PayloadFormat) == "1") packet.PayloadFormatIndicator = MqttPayloadFormatIndicator.CharacterData;
        if (NatsHeaders.Get(headers.Span, NatsHeaders.CorrelationData) is { } cd)
        {
            try { packet.CorrelationData = Convert.FromBase64String(cd); }
            catch (FormatException) { } // not ours (a NATS publisher's own header): no correlation data
        }
        await _out.SendAsync(packet, ct).ConfigureAwait(false);
    }

    /// <summary>The link handled everything it read: the batched QoS 0 PUBLISH packets go out in one write.</summary>
    public async ValueTask FlushDeliveriesAsync()
    {
        try
        {
            await _out.FlushAsync(_end.Token).ConfigureAwait(false);
        }
        catch (OperationCanceledException)
        {
            // the session is ending
        }
    }

    /// <summary>A QoS 1/2 message dropped for the client's Maximum Packet Size: its place and stream copy are released.</summary>
    private async Task CompleteDiscardedAsync(ushort packetId)
    {
        Inflight? done;
        lock (_inflightLock)
        {
            if (!_inflight.Remove(packetId, out done)) return;
            _windowFree++;
        }
        if (done.Ack is not null) await AckStreamMessageAsync(done.Ack).ConfigureAwait(false);
    }
}
