using System.Buffers;
using MQTTnet.Adapter;

namespace NatsBroker.MqttGateway;

/// <summary>
/// The publisher's hot path without MQTTnet's decoder: a PUBLISH with fixed header 0x30 (QoS 0, no DUP, no RETAIN:
/// MQTT 3.1.1 section 3.3.1, MQTT 5 section 3.3.1) whose topic is byte for byte the one the last decoded PUBLISH
/// had (already checked and converted, <see cref="SubjectFor"/>) and, for MQTT 5, whose property block is empty
/// (section 3.3.2.3: no topic alias, user property, expiry, response topic...). What <see cref="OnPublishAsync"/>
/// would do with it is one HPUB with the cached <c>Nmqtt-Pub:0</c> header, so that is all this does, with no packet
/// object, no topic string and no subject conversion per message. Anything else (a new topic, flags, properties,
/// a No Local subscription's source header, a payload over the limit) takes the decoder's path unchanged.
/// </summary>
internal sealed partial class MqttSession
{
    /// <summary>Fixed header of a QoS 0 PUBLISH without DUP or RETAIN.</summary>
    private const byte PlainQoS0Publish = 0x30;

    /// <summary>True when the packet was published here; false to decode it and go the general way.</summary>
    private async ValueTask<bool> TryRepeatedTopicPublishAsync(ReceivedMqttPacket packet, CancellationToken ct)
    {
        if (!TryRepeatedTopicPublish(packet, out var payload, out var headers)) return false;
        bool batch = _reader.HasBufferedPacket;
        await _nats!.PublishAsync(_lastSubject!, null, headers, new ReadOnlySequence<byte>(payload), ct, batch).ConfigureAwait(false);
        return true;
    }

    private bool TryRepeatedTopicPublish(ReceivedMqttPacket packet, out ReadOnlyMemory<byte> payload, out byte[] headers)
    {
        payload = default;
        headers = [];
        if (packet.FixedHeader != PlainQoS0Publish || _lastSubject is null || _lastTopicUtf8 is not { } topic) return false;
        var body = packet.Body.AsSpan();
        if (body.Length < 2) return false;
        int topicLength = body[0] << 8 | body[1];
        int at = 2 + topicLength;
        if (at > body.Length || !body.Slice(2, topicLength).SequenceEqual(topic)) return false;
        if (_v5)
        {
            // An empty property block is one byte 0 (its Variable Byte Integer length); a No Local subscription of
            // this client needs the source header on what it publishes (PublishToNatsAsync).
            if (at >= body.Length || body[at] != 0 || _noLocalCount > 0) return false;
            at++;
        }
        headers = NatsHeaders.ForPublish(0, null);
        if (headers.Length + body.Length - at > _options.MaxPayload) return false;
        payload = packet.Body.AsMemory(at);
        return true;
    }
}
