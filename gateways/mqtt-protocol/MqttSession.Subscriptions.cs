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
        bool NoLocal, bool RetainAsPublished, uint[]? Identifiers);

    private readonly Dictionary<string, Subscription> _byFilter = new(StringComparer.Ordinal);
    private readonly ConcurrentDictionary<int, Subscription> _bySid = IdleSized.Dictionary<int, Subscription>();

    private async Task OnSubscribeAsync(MqttSubscribePacket packet, CancellationToken ct)
    {
        var codes = new List<MqttSubscribeReasonCode>(packet.TopicFilters.Count);
        var granted = new List<(Subscription Sub, MqttRetainHandling Handling, bool Existed)>();
        foreach (var f in packet.TopicFilters)
        {
            var (code, sub, existed) = await SubscribeOneAsync(f, packet.SubscriptionIdentifier, ct).ConfigureAwait(false);
            codes.Add(code);
            if (sub is not null) granted.Add((sub, f.RetainHandling, existed));
        }
        OnSubscriptionsChanged();
        await _out.SendAsync(new MqttSubAckPacket { PacketIdentifier = packet.PacketIdentifier, ReasonCodes = codes }, ct).ConfigureAwait(false);
        // Retained messages follow the SUBACK ([MQTT-3.3.1-6]); MQTT 5 Retain Handling 1 sends them only for a
        // subscription that did not exist ([MQTT-3.3.1-10]), 2 never ([MQTT-3.3.1-11]).
        foreach (var (sub, handling, existed) in granted)
        {
            if (handling == MqttRetainHandling.SendAtSubscribeIfNewSubscriptionOnly && existed) continue;
            await SendRetainedAsync(sub, handling, ct).ConfigureAwait(false);
        }
    }

    /// <summary>Subscriptions with No Local (MQTT 5 section 3.8.3.1): while any exists, this client's PUBLISHes carry its tag.</summary>
    private int _noLocalCount;
    /// <summary>This client ID's tag in <c>Nmqtt-Src</c> (its session hash).</summary>
    private byte[] _sourceTag = [];
    private string _sourceId = "";

    private async Task<(MqttSubscribeReasonCode, Subscription?, bool Existed)> SubscribeOneAsync(MqttTopicFilter f, uint identifier, CancellationToken ct)
    {
        string filter = f.Topic ?? "";
        string? group = null;
        if (_v5 && filter.StartsWith("$share/", StringComparison.Ordinal))
        {
            // MQTT 5 section 4.8.2: $share/{ShareName}/{filter}; the share name becomes the NATS queue group.
            int slash = filter.IndexOf('/', 7);
            if (slash < 0 || slash == 7) return (MqttSubscribeReasonCode.TopicFilterInvalid, null, false);
            group = filter[7..slash];
            if (group.AsSpan().IndexOfAny("+#. \t") >= 0) return (MqttSubscribeReasonCode.TopicFilterInvalid, null, false);
            filter = filter[(slash + 1)..];
            if (f.NoLocal) return (MqttSubscribeReasonCode.TopicFilterInvalid, null, false); // [MQTT-3.8.3-4]
        }
        var subject = filter.Length == 0 ? null : TopicMapping.FilterToSubject(filter);
        if (subject is null || !ValidWildcards(filter))
            return (_v5 ? MqttSubscribeReasonCode.TopicFilterInvalid : MqttSubscribeReasonCode.UnspecifiedError, null, false);
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
            _v5 && f.NoLocal, _v5 && f.RetainAsPublished, identifier > 0 ? [identifier] : null);
        foreach (var sid in sub.Sids) _bySid[sid] = sub;
        string? error = await _nats.FlushAsync(ct).ConfigureAwait(false);
        // Only a refusal of this subscription's own SUBs fails it (an -ERR about something else, e.g. a subscription
        // limit without subject, still does).
        if (error is not null && (!error.StartsWith("Permissions Violation for Subscription", StringComparison.Ordinal)
            || error.Contains('"' + subject + '"', StringComparison.Ordinal)
            || (sub.Sids.Length > 1 && error.Contains('"' + TopicMapping.LevelUpSubject(subject) + '"', StringComparison.Ordinal))))
        {
            // nats-server answers a refused subscription with the SUBACK failure code (0x80).
            foreach (var sid in sub.Sids)
            {
                _bySid.TryRemove(sid, out _);
                await _nats.UnsubscribeAsync(sid, ct).ConfigureAwait(false);
            }
            _log.LogDebug("{Ip}:{Port} - mqtt client {Id}: subscription to \"{Filter}\" refused: {Error}", RemoteIp, _remote.Port, _clientId, filter, error);
            return (error.Contains("Permissions", StringComparison.OrdinalIgnoreCase) && _v5 ? MqttSubscribeReasonCode.NotAuthorized : MqttSubscribeReasonCode.UnspecifiedError, null, false);
        }
        if (_byFilter.Remove(key, out var old)) await DropSidsAsync(old, ct).ConfigureAwait(false);
        _byFilter[key] = sub;
        await OnSubscribedAsync(sub, old, ct).ConfigureAwait(false);
        return ((MqttSubscribeReasonCode)qos, sub, old is not null);
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
        OnSubscriptionsChanged();
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

    /// <summary>
    /// The client is gone: every NATS subscription of this connection (durable deliver subjects included) is removed,
    /// so the link stays free for the session's last JetStream requests; the subscriptions stay in the session.
    /// </summary>
    private async Task StopDeliveriesAsync(CancellationToken ct)
    {
        _closing = true;
        ReleaseWindowWaiters();
        foreach (var sid in _bySid.Keys) await _nats!.UnsubscribeAsync(sid, ct).ConfigureAwait(false);
        _bySid.Clear();
        foreach (var sid in _durableSids.Keys) await _nats!.UnsubscribeAsync(sid, ct).ConfigureAwait(false);
        _durableSids.Clear();
    }

    /// <summary>A message from the core (on the link's read loop): becomes a PUBLISH to this client.</summary>
    public ValueTask DeliverAsync(NatsMessage m) =>
        TryDeliverFromStream(m, out var delivered) ? delivered : DeliverLive(m);

    /// <summary>A live message for one of this client's subscriptions; the usual QoS 0 case completes without an await.</summary>
    private ValueTask DeliverLive(NatsMessage m)
    {
        if (!_bySid.TryGetValue(m.Sid, out var sub))
        {
            if (m.Sid == _announceSid) OnAnnouncement(m);
            return default;
        }
        if (sub.Group is null && _plainSubscriptions.Length > 1) return DeliverOverlappingAsync(m);
        var subject = m.Subject.Span;
        // [MQTT-4.7.2-1]: '#' and '+' at the start of a filter do not match topics starting with '$'.
        if (sub.Reserved && subject.Length > 0 && subject[0] == (byte)'$') return default;
        byte msgQos = NatsHeaders.PublishedQoS(m.Headers.Span);
        // A QoS 1/2 MQTT message for a persistent QoS 1/2 subscription comes from its JetStream consumer instead.
        if (msgQos > 0 && sub.Qos > 0 && HasDurableConsumer(sub)) return default;
        if (sub.NoLocal && FromThisClient(m.Headers.Span)) return default;
        byte qos = Math.Min(msgQos, sub.Qos);
        bool retain = RetainFlag(sub, m.Headers.Span);
        if (qos == 0 && TryBufferLiveQos0(m, sub.Identifiers, retain)) return default;
        return SendPublishAsync(sub.Identifiers, m.Subject, m.Reply, m.Headers, m.Payload, qos, retain, ack: null, batch: true);
    }

    /// <summary>No Local ([MQTT-3.8.3-3]): the message was published by a connection with this client ID.</summary>
    private bool FromThisClient(ReadOnlySpan<byte> headers) =>
        NatsHeaders.Value(headers, "\r\nNmqtt-Src:"u8).SequenceEqual(_sourceTag);

    /// <summary>Retain As Published ([MQTT-3.3.1-12]): the RETAIN flag as published; otherwise 0 on live delivery.</summary>
    private static bool RetainFlag(Subscription sub, ReadOnlySpan<byte> headers) => sub.RetainAsPublished && NatsHeaders.WasRetained(headers);
}
