using System.Buffers;
using System.Collections.Concurrent;
using System.Globalization;
using System.Text;
using System.Text.Json.Nodes;
using System.Threading.Channels;
using Microsoft.Extensions.Logging;
using MQTTnet.Packets;
using MQTTnet.Protocol;

namespace NatsBroker.MqttGateway;

/// <summary>
/// State kept in JetStream, as nats-server keeps it (server/mqtt.go): QoS 1/2 messages are stored under
/// <c>$MQTT.msgs.&lt;subject&gt;</c> before they are acknowledged; retained messages under
/// <c>$MQTT.rmsgs.&lt;subject&gt;</c> with the headers <c>Nmqtt-RTopic</c>, <c>Nmqtt-RFlags</c> (the PUBLISH flags in hex,
/// <c>-</c> first for a deletion marker), <c>Nmqtt-ROrigin</c>, <c>Nmqtt-RSource</c> and the message as the body
/// (mqttEncodeRetainedMessage). A new subscription gets the retained messages that match it through an ephemeral
/// push consumer (deliver policy last_per_subject) on <c>$MQTT_rmsgs</c>.
/// Without JetStream for the account (nats-server refuses MQTT then) QoS 0/1/2 live traffic still works; retained
/// messages are not kept.
/// </summary>
internal sealed partial class MqttSession
{
    private static readonly string s_origin = Guid.NewGuid().ToString("N")[..8];
    /// <summary><see cref="s_origin"/> as bytes (MqttSession.Takeover.cs compares subjects with it); beside it, so it is initialised after it.</summary>
    private static readonly byte[] s_originBytes = Encoding.ASCII.GetBytes(s_origin);

    private readonly ConcurrentDictionary<int, Channel<StoredMessage>> _collectors = IdleSized.Dictionary<int, Channel<StoredMessage>>();
    private JetStreamApi? _js;
    private string _username = "";

    private sealed record StoredMessage(string Subject, byte[] Headers, byte[] Payload);

    private async Task<bool> RestoreSessionAsync(MqttConnectPacket connect, CancellationToken ct)
    {
        _username = connect.Username ?? "";
        _sessionExpiry = SessionExpiryOf(connect, _v5);
        _cleanStart = connect.CleanSession;
        _cleanSession = _sessionExpiry == 0;
        var js = new JetStreamApi(_nats!, _options);
        try
        {
            await js.EnsureStreamsAsync(_username, ct).ConfigureAwait(false);
            _js = js;
            RememberForSweep();
        }
        catch (JetStreamException ex)
        {
            _log.LogWarning("{Ip}:{Port} - mqtt client {Id}: no JetStream ({Error}); retained messages and persistent sessions are not kept", RemoteIp, _remote.Port, _clientId, ex.Message);
            return false;
        }
        var stored = await LoadSessionAsync(ct).ConfigureAwait(false);
        if (stored is null) return false;
        // [MQTT-3.1.2-6] / MQTT 5 [MQTT-3.1.2-4]: Clean Session / Clean Start discards the previous session, as does
        // its expiry (MQTT 5 section 3.1.2.11.2).
        if (connect.CleanSession || Expired(stored))
        {
            await DeleteSessionAsync(stored, ct).ConfigureAwait(false);
            return false;
        }
        // A resumed session is kept while this connection lasts even when it is not to outlive it (expiry 0).
        _cleanSession = false;
        _restored = stored;
        return true;
    }

    private async Task AfterConnAckAsync(CancellationToken ct)
    {
        OpenSendWindow();
        // [MQTT-3.1.2-6]: nothing of a previous session is kept when none is resumed.
        if (_cleanSession || _cleanStart || (_js is not null && _restored is null)) _registry.TakeParked(_clientId, _options.AckWait);
        if (_js is null || _cleanSession) return;
        // Resubscribe what the stored session had (server/mqtt.go mqttProcessConnect: "Process possible saved subscriptions").
        if (_restored?["subs"] is JsonObject subs)
        {
            var opts = _restored["opts"] as JsonObject;
            foreach (var (subject, qosNode) in subs)
            {
                byte qos = (byte)(qosNode?.GetValue<int>() ?? 0);
                await RestoreSubscriptionAsync(subject, qos, opts?[subject], ct).ConfigureAwait(false);
            }
            OnSubscriptionsChanged();
        }
        await ResendParkedAsync(ct).ConfigureAwait(false);
        await ResendReleasedAsync(ct).ConfigureAwait(false);
        // After both: the record written here keeps the released QoS 2 messages still waiting for PUBCOMP.
        await SaveSessionAsync(ct).ConfigureAwait(false);
    }

    /// <summary>server/mqtt.go mqttHandlePubRetain: the last retained message per subject (an empty one is a deletion marker).</summary>
    private async Task StoreRetainedAsync(MqttPublishPacket p, string subject, List<KeyValuePair<string, string>>? userProperties, long expiresAt, CancellationToken ct)
    {
        if (_js is null) return;
        bool delete = p.Payload.Length == 0;
        int flags = ((int)p.QualityOfServiceLevel << 1) | 1;
        var sb = new StringBuilder("NATS/1.0\r\n")
            .Append("Nmqtt-RTopic:").Append(p.Topic).Append("\r\n")
            .Append("Nmqtt-RFlags:").Append(delete ? "-" : "").Append(flags.ToString("x", CultureInfo.InvariantCulture)).Append("\r\n")
            .Append("Nmqtt-ROrigin:").Append(s_origin).Append("\r\n");
        if (_username.Length > 0) sb.Append("Nmqtt-RSource:").Append(_username).Append("\r\n");
        // MQTT 5 user properties are part of the application message [MQTT-3.3.2-17]: kept with it, sent with it.
        if (!delete) NatsHeaders.AppendUserProperties(sb, userProperties);
        // [MQTT-3.3.2-5]: a retained message past its expiry is not sent to new subscribers either.
        if (!delete && expiresAt > 0) sb.Append(NatsHeaders.Expires).Append(':').Append(expiresAt.ToString(CultureInfo.InvariantCulture)).Append("\r\n");
        sb.Append("\r\n");
        try
        {
            await _js.StoreAsync(JetStreamApi.RetainedPrefix + subject, Encoding.UTF8.GetBytes(sb.ToString()), delete ? ReadOnlySequence<byte>.Empty : p.Payload, ct).ConfigureAwait(false);
        }
        catch (JetStreamException ex)
        {
            _log.LogError("unable to store retained message for subject \"{Subject}\": {Error}", subject, ex.Message);
        }
    }

    /// <summary>QoS 1/2: stored (for persistent sessions' consumers) before the PUBACK/PUBREC goes out.</summary>
    private async Task StoreQoSMessageAsync(string subject, byte[] headers, ReadOnlySequence<byte> payload, CancellationToken ct)
    {
        if (_js is null) return;
        await _js.StoreAsync(JetStreamApi.MessagePrefix + subject, headers, payload, ct).ConfigureAwait(false);
    }

    /// <summary>After SUBACK: the retained messages matching the new subscription, with the retain flag ([MQTT-3.3.1-6]).</summary>
    private async Task SendRetainedAsync(Subscription sub, MqttRetainHandling handling, CancellationToken ct)
    {
        if (_js is null || handling == MqttRetainHandling.DoNotSendOnSubscribe || sub.Group is not null) return;
        var subjects = new List<string> { sub.Subject };
        if (TopicMapping.LevelUpSubject(sub.Subject) is { } parent) subjects.Add(parent);
        foreach (var subject in subjects)
        {
            List<StoredMessage> found;
            try
            {
                found = await LastPerSubjectAsync(JetStreamApi.RetainedStream, JetStreamApi.RetainedPrefix + subject, ct).ConfigureAwait(false);
            }
            catch (JetStreamException ex)
            {
                _log.LogWarning("unable to load retained messages for \"{Filter}\": {Error}", sub.Filter, ex.Message);
                continue;
            }
            foreach (var m in found)
            {
                var flags = Header(m.Headers, "Nmqtt-RFlags");
                if (flags is null || flags.StartsWith('-')) continue;
                var plain = m.Subject[JetStreamApi.RetainedPrefix.Length..];
                if (sub.Reserved && plain.StartsWith('$')) continue;
                byte storedQos = (byte)((int.Parse(flags, NumberStyles.HexNumber, CultureInfo.InvariantCulture) >> 1) & 3);
                await SendPublishAsync(sub.Identifiers, Encoding.UTF8.GetBytes(plain), ReadOnlyMemory<byte>.Empty, m.Headers, m.Payload,
                    Math.Min(storedQos, sub.Qos), retain: true, ack: null).ConfigureAwait(false);
            }
        }
    }

    /// <summary>The last message of every subject matching <paramref name="filter"/>, through an ephemeral push consumer.</summary>
    private async Task<List<StoredMessage>> LastPerSubjectAsync(string stream, string filter, CancellationToken ct)
    {
        int sid = _nats!.NextSid();
        string inbox = "_INBOX." + Guid.NewGuid().ToString("N");
        var channel = Channel.CreateUnbounded<StoredMessage>(new UnboundedChannelOptions { SingleReader = true, SingleWriter = true });
        _collectors[sid] = channel;
        string? consumer = null;
        try
        {
            await _nats.SubscribeAsync(inbox, null, sid, ct).ConfigureAwait(false);
            var created = await _js!.RequestAsync("$JS.API.CONSUMER.CREATE." + stream, new JsonObject
            {
                ["stream_name"] = stream,
                ["config"] = new JsonObject
                {
                    ["deliver_subject"] = inbox,
                    ["deliver_policy"] = "last_per_subject",
                    ["ack_policy"] = "none",
                    ["filter_subject"] = filter,
                    ["max_ack_pending"] = -1,
                },
            }, ct).ConfigureAwait(false);
            consumer = created["name"]?.GetValue<string>();
            long pending = created["num_pending"]?.GetValue<long>() ?? 0;
            var list = new List<StoredMessage>((int)Math.Min(pending, 1024));
            using var timeout = CancellationTokenSource.CreateLinkedTokenSource(ct);
            timeout.CancelAfter(_options.JsApiTimeout);
            while (list.Count < pending)
            {
                try
                {
                    using var idle = CancellationTokenSource.CreateLinkedTokenSource(timeout.Token);
                    idle.CancelAfter(RetainedIdleCheck);
                    list.Add(await channel.Reader.ReadAsync(idle.Token).ConfigureAwait(false));
                }
                catch (OperationCanceledException) when (!timeout.IsCancellationRequested)
                {
                    // The core withholds from this user a retained message its subscribe deny covers (a wildcard
                    // filter overlapping the deny; mqtt.go serializeRetainedMsgsForSub skips it the same way), so
                    // fewer than num_pending can arrive: done once the consumer has sent them all and a PING
                    // round trip has let through anything still on its way.
                    if (consumer is not null && await AllSentAsync(stream, consumer, pending, ct).ConfigureAwait(false))
                    {
                        await _nats.FlushAsync(ct).ConfigureAwait(false);
                        while (channel.Reader.TryRead(out var m)) list.Add(m);
                        break;
                    }
                }
                catch (OperationCanceledException) when (!ct.IsCancellationRequested)
                {
                    throw new JetStreamException($"only {list.Count} of {pending} retained messages arrived in time");
                }
            }
            return list;
        }
        finally
        {
            _collectors.TryRemove(sid, out _);
            await _nats.UnsubscribeAsync(sid, CancellationToken.None).ConfigureAwait(false);
            if (consumer is not null)
            {
                try
                {
                    await _js!.RequestAsync($"$JS.API.CONSUMER.DELETE.{stream}.{consumer}", null, CancellationToken.None).ConfigureAwait(false);
                }
                catch (JetStreamException)
                {
                    // An ephemeral consumer goes away by itself once inactive.
                }
            }
        }
    }

    /// <summary>How long the retained-message collector waits for the next message before it asks the consumer.</summary>
    private static readonly TimeSpan RetainedIdleCheck = TimeSpan.FromMilliseconds(200);

    /// <summary>Has the ephemeral consumer sent all <paramref name="expected"/> messages (nothing pending, delivered sequence reached)?</summary>
    private async Task<bool> AllSentAsync(string stream, string consumer, long expected, CancellationToken ct)
    {
        try
        {
            var info = await _js!.RequestAsync($"$JS.API.CONSUMER.INFO.{stream}.{consumer}", null, ct).ConfigureAwait(false);
            return (info["num_pending"]?.GetValue<long>() ?? -1) == 0
                && (info["delivered"]?["consumer_seq"]?.GetValue<long>() ?? 0) >= expected;
        }
        catch (JetStreamException)
        {
            return false;
        }
    }

    private static string? Header(byte[] headers, string name)
    {
        var text = Encoding.UTF8.GetString(headers);
        foreach (var line in text.Split("\r\n"))
        {
            if (line.Length > name.Length && line.StartsWith(name, StringComparison.OrdinalIgnoreCase) && line[name.Length] == ':')
                return line[(name.Length + 1)..].Trim();
        }
        return null;
    }

    /// <summary>A persistent session's QoS 1/2 subscription gets a durable consumer on $MQTT_msgs; the record is saved.</summary>
    private async Task OnSubscribedAsync(Subscription sub, Subscription? replaced, CancellationToken ct)
    {
        if (_js is null || _cleanSession || sub.Group is not null) return;
        string? durable = replaced is not null && _durables.TryGetValue(replaced.Subject, out var d) ? d.Name : null;
        if (sub.Qos > 0) await BindDurableAsync(sub, durable, ct).ConfigureAwait(false);
        else if (durable is not null) await DeleteDurableAsync(sub.Subject, ct).ConfigureAwait(false);
        await SaveSessionAsync(ct).ConfigureAwait(false);
    }

    private async Task OnUnsubscribedAsync(Subscription sub, CancellationToken ct)
    {
        if (_js is null || _cleanSession) return;
        await DeleteDurableAsync(sub.Subject, ct).ConfigureAwait(false);
        await SaveSessionAsync(ct).ConfigureAwait(false);
    }

    /// <summary>Messages on a collector's inbox (retained-message fetches) are copied out for the waiting SUBSCRIBE.</summary>
    /// <summary>Not async: a live message (the common case) costs two lookups, no state machine.</summary>
    private bool TryDeliverFromStream(NatsMessage m, out ValueTask delivered)
    {
        delivered = default;
        if (_collectors.TryGetValue(m.Sid, out var c))
        {
            c.Writer.TryWrite(new StoredMessage(Encoding.UTF8.GetString(m.Subject.Span), m.Headers.ToArray(), m.Payload.ToArray()));
            return true;
        }
        if (!_durableSids.TryGetValue(m.Sid, out var sub)) return false;
        delivered = new ValueTask(DeliverDurableAsync(sub, m));
        return true;
    }

}
