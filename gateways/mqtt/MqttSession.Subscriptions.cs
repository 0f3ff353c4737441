using System.Collections.Concurrent;
using System.Text;
using Microsoft.Extensions.Logging;
using MQTTnet.Packets;
using MQTTnet.Protocol;

namespace NatsBroker.MqttGateway;

/// <summary>
/// SUBSCRIBE/UNSUBSCRIBE (server/mqtt.go processSubs / mqttProcessUnsubs) and delivery of what the core sends back.
/// A filter becomes one SUB, and a second one on the parent level for <c>x/#</c> (which also matches <c>x</c>);
/// a filter subscribed again replaces the old one without a gap (the new SUBs are made before the old are removed,
/// [MQTT-3.8.4-3]). MQTT 5 <c>$share/group/filter</c> becomes a queue subscription in that group. A SUB the core
/// refuses (permissions) gets the failure code in SUBACK.
/// </summary>
internal sealed partial class MqttSession
{
    /// <summary>One MQTT subscription: its filter, the NATS sids that serve it, and its options.</summary>
    private sealed record Subscription(string Filter, string Subject, string? Group, int[] Sids, byte Qos, bool Reserved,
        bool NoLocal, bool RetainAsPublished, uint Identifier);

    private readonly Dictionary<string, Subscription> _byFilter = new(StringComparer.Ordinal);
    private readonly ConcurrentDictionary<int, Subscription> _bySid = new();

    private async Task OnSubscribeAsync(MqttSubscribePacket packet, CancellationToken ct)
    {
        var codes = new List<MqttSubscribeReasonCode>(packet.TopicFilters.Count);
        var granted = new List<Subscription>();
        foreach (var f in packet.TopicFilters)
        {
            var (code, sub) = await SubscribeOneAsync(f, packet.SubscriptionIdentifier, ct).ConfigureAwait(false);
            codes.Add(code);
            if (sub is not null) granted.Add(sub);
        }
        await _out.SendAsync(new MqttSubAckPacket { PacketIdentifier = packet.PacketIdentifier, ReasonCodes = codes }, ct).ConfigureAwait(false);
        // Retained messages follow the SUBACK ([MQTT-3.3.1-6]).
        foreach (var (sub, filter) in granted.Zip(packet.TopicFilters.Where((_, i) => codes[i] <= MqttSubscribeReasonCode.GrantedQoS2)))
            await SendRetainedAsync(sub, filter.RetainHandling, ct).ConfigureAwait(false);
    }

    private async Task<(MqttSubscribeReasonCode, Subscription?)> SubscribeOneAsync(MqttTopicFilter f, uint identifier, CancellationToken ct)
    {
        string filter = f.Topic ?? "";
        string? group = null;
        if (_v5 && filter.StartsWith("$share/", StringComparison.Ordinal))
        {
            // MQTT 5 section 4.8.2: $share/{ShareName}/{filter}; the share name becomes the NATS queue group.
            int slash = filter.IndexOf('/', 7);
            if (slash < 0 || slash == 7) return (MqttSubscribeReasonCode.TopicFilterInvalid, null);
            group = filter[7..slash];
            if (group.AsSpan().IndexOfAny("+#. \t") >= 0) return (MqttSubscribeReasonCode.TopicFilterInvalid, null);
            filter = filter[(slash + 1)..];
            if (f.NoLocal) return (MqttSubscribeReasonCode.TopicFilterInvalid, null); // [MQTT-3.8.3-4]
        }
        var subject = filter.Length == 0 ? null : TopicMapping.FilterToSubject(filter);
        if (subject is null || !ValidWildcards(filter))
            return (_v5 ? MqttSubscribeReasonCode.TopicFilterInvalid : MqttSubscribeReasonCode.UnspecifiedError, null);
        byte qos = (byte)Math.Min((int)f.QualityOfServiceLevel, 2);
        if (qos == 2 && _options.DowngradeQoS2Subscribe) qos = 1;
        string key = group is null ? filter : $"$share/{group}/{filter}";

        var sids = new List<int> { _nats!.NextSid() };
        await _nats.SubscribeAsync(subject, group, sids[0], ct).ConfigureAwait(false);
        if (TopicMapping.LevelUpSubject(subject) is { } parent)
        {
            sids.Add(_nats.NextSid());
            await _nats.SubscribeAsync(parent, group, sids[1], ct).ConfigureAwait(false);
        }
        var sub = new Subscription(key, subject, group, [.. sids], qos, TopicMapping.IsReservedSubscription(subject),
            _v5 && f.NoLocal, _v5 && f.RetainAsPublished, identifier);
        foreach (var sid in sub.Sids) _bySid[sid] = sub;
        string? error = await _nats.FlushAsync(ct).ConfigureAwait(false);
        if (error is not null)
        {
            // nats-server answers a refused subscription with the SUBACK failure code (0x80).
            foreach (var sid in sub.Sids)
            {
                _bySid.TryRemove(sid, out _);
                await _nats.UnsubscribeAsync(sid, ct).ConfigureAwait(false);
            }
            _log.LogDebug("{Ip}:{Port} - mqtt client {Id}: subscription to \"{Filter}\" refused: {Error}", RemoteIp, _remote.Port, _clientId, filter, error);
            return (error.Contains("Permissions", StringComparison.OrdinalIgnoreCase) && _v5 ? MqttSubscribeReasonCode.NotAuthorized : MqttSubscribeReasonCode.UnspecifiedError, null);
        }
        if (_byFilter.Remove(key, out var old)) await DropSidsAsync(old, ct).ConfigureAwait(false);
        _byFilter[key] = sub;
        await OnSubscribedAsync(sub, old, ct).ConfigureAwait(false);
        return ((MqttSubscribeReasonCode)qos, sub);
    }

    /// <summary>'#' only as the last level, '+' and '#' only as whole levels ([MQTT-4.7.1-2], [MQTT-4.7.1-3]).</summary>
    private static bool ValidWildcards(string filter)
    {
        for (int i = 0; i < filter.Length; i++)
        {
            char c = filter[i];
            if (c is not ('+' or '#')) continue;
            if (i > 0 && filter[i - 1] != '/') return false;
            if (c == '#' && i != filter.Length - 1) return false;
            if (c == '+' && i < filter.Length - 1 && filter[i + 1] != '/') return false;
        }
        return true;
    }

    private async Task OnUnsubscribeAsync(MqttUnsubscribePacket packet, CancellationToken ct)
    {
        var codes = new List<MqttUnsubscribeReasonCode>(packet.TopicFilters.Count);
        foreach (var filter in packet.TopicFilters)
        {
            if (_byFilter.Remove(filter, out var sub))
            {
                await DropSidsAsync(sub, ct).ConfigureAwait(false);
                await OnUnsubscribedAsync(sub, ct).ConfigureAwait(false);
                codes.Add(MqttUnsubscribeReasonCode.Success);
            }
            else
            {
                codes.Add(MqttUnsubscribeReasonCode.NoSubscriptionExisted);
            }
        }
        await _out.SendAsync(new MqttUnsubAckPacket { PacketIdentifier = packet.PacketIdentifier, ReasonCodes = codes }, ct).ConfigureAwait(false);
    }

    private async Task DropSidsAsync(Subscription sub, CancellationToken ct)
    {
        foreach (var sid in sub.Sids)
        {
            _bySid.TryRemove(sid, out _);
            await _nats!.UnsubscribeAsync(sid, ct).ConfigureAwait(false);
        }
    }

    /// <summary>A message from the core (on the link's read loop): becomes a PUBLISH to this client.</summary>
    public async ValueTask DeliverAsync(NatsMessage m)
    {
        if (await DeliverFromStreamAsync(m).ConfigureAwait(false)) return;
        if (!_bySid.TryGetValue(m.Sid, out var sub)) return;
        var subject = m.Subject.Span;
        // [MQTT-4.7.2-1]: '#' and '+' at the start of a filter do not match topics starting with '$'.
        if (sub.Reserved && subject.Length > 0 && subject[0] == (byte)'$') return;
        byte msgQos = NatsHeaders.PublishedQoS(m.Headers.Span);
        // A QoS 1/2 MQTT message for a persistent QoS 1/2 subscription comes from its JetStream consumer instead.
        if (msgQos > 0 && sub.Qos > 0 && HasDurableConsumer(sub)) return;
        byte qos = Math.Min(msgQos, sub.Qos);
        await SendPublishAsync(sub, m.Subject, m.Reply, m.Headers, m.Payload, qos, retain: false, ack: null).ConfigureAwait(false);
    }

    /// <summary>Encodes one PUBLISH to the client (hand-encoded when it carries no MQTT 5 properties).</summary>
    private async ValueTask SendPublishAsync(Subscription? sub, ReadOnlyMemory<byte> subject, ReadOnlyMemory<byte> reply,
        ReadOnlyMemory<byte> headers, ReadOnlyMemory<byte> payload, byte qos, bool retain, string? ack)
    {
        var topic = new byte[subject.Length];
        int topicLength = TopicMapping.SubjectToTopic(subject.Span, topic);
        ushort packetId = 0;
        if (qos > 0) packetId = await AcquirePacketIdAsync(qos, ack, topic.AsSpan(0, topicLength).ToArray(), payload.ToArray()).ConfigureAwait(false);
        var ct = _end.Token;
        List<KeyValuePair<string, string>>? props = _v5 ? NatsHeaders.UserProperties(headers.Span) : null;
        if (_v5 && (props is not null || !reply.IsEmpty || sub?.Identifier > 0 || NatsHeaders.HasMessageProperties(headers.Span)))
        {
            var packet = new MqttPublishPacket
            {
                Topic = Encoding.UTF8.GetString(topic, 0, topicLength),
                Payload = new System.Buffers.ReadOnlySequence<byte>(payload.ToArray()),
                QualityOfServiceLevel = (MqttQualityOfServiceLevel)qos,
                PacketIdentifier = packetId,
                Retain = retain,
            };
            if (props is not null) packet.UserProperties = [.. props.Select(p => new MqttUserProperty(p.Key, Encoding.UTF8.GetBytes(p.Value).AsMemory()))];
            if (!reply.IsEmpty) packet.ResponseTopic = TopicMapping.SubjectToTopic(Encoding.UTF8.GetString(reply.Span));
            if (sub?.Identifier > 0) packet.SubscriptionIdentifiers = [sub.Identifier];
            if (NatsHeaders.Get(headers.Span, NatsHeaders.ContentType) is { } contentType) packet.ContentType = contentType;
            if (NatsHeaders.Get(headers.Span, NatsHeaders.PayloadFormat) == "1") packet.PayloadFormatIndicator = MqttPayloadFormatIndicator.CharacterData;
            if (NatsHeaders.Get(headers.Span, NatsHeaders.CorrelationData) is { } cd)
            {
                try { packet.CorrelationData = Convert.FromBase64String(cd); }
                catch (FormatException) { } // not ours (a NATS publisher's own header): no correlation data
            }
            await _out.SendAsync(packet, ct).ConfigureAwait(false);
            return;
        }
        if (_v5 && payload.Length + topicLength + 16 > _clientMaxPacketSize) return; // MQTT 5 section 3.1.2.11.4: dropped.
        await _out.SendPublishAsync(topic.AsMemory(0, topicLength), payload, qos, packetId, retain, dup: false, ct).ConfigureAwait(false);
    }
}
