using System.Buffers;
using System.Collections.Concurrent;
using System.Security.Cryptography;
using System.Text;
using System.Text.Json.Nodes;
using Microsoft.Extensions.Logging;
using MQTTnet.Packets;
using MQTTnet.Protocol;

namespace NatsBroker.MqttGateway;

/// <summary>
/// Persistent sessions (clean session 0), as nats-server keeps them (server/mqtt.go mqttSession.save,
/// processJSConsumer): the session record is the last message on <c>$MQTT.sess.&lt;hash of the client ID&gt;</c> in
/// <c>$MQTT_sess</c>, JSON <c>{"origin","id","clean","subs":{subject:qos},"cons":{subject:consumer config}}</c> (ours adds
/// <c>"opts":{subject:{"nl","rap","ids"}}</c>, see <see cref="SubscriptionOptions"/>, and <c>"expires"</c>); each
/// QoS 1/2 subscription has a durable push consumer on <c>$MQTT_msgs</c> filtered on <c>$MQTT.msgs.&lt;subject&gt;</c>
/// (explicit ack, ack_wait and max_ack_pending from the mqtt block, deliver new). Ours delivers to
/// <c>$MQTT.sub.&lt;durable&gt;</c> (a fixed subject, so a reconnect through any gateway just subscribes to it again);
/// a message is acked when the client's PUBACK/PUBCOMP comes. So a gateway restart or another gateway instance
/// finds the session: its subscriptions and its undelivered and unacknowledged QoS 1/2 messages.
/// Shared subscriptions are not persisted.
/// </summary>
internal sealed partial class MqttSession
{
    private sealed record DurableBinding(string Name, int Sid);

    private readonly ConcurrentDictionary<string, DurableBinding> _durables = IdleSized.Dictionary<string, DurableBinding>(StringComparer.Ordinal);
    private readonly ConcurrentDictionary<int, Subscription> _durableSids = IdleSized.Dictionary<int, Subscription>();
    private bool _cleanSession = true;
    private JsonObject? _restored;

    private bool HasDurableConsumer(Subscription sub) => _durables.ContainsKey(sub.Subject);

    /// <summary>server/events.go getHash: sha256, the first 8 bytes as base-62 digits.</summary>
    private static string SessionHash(string clientId)
    {
        const string digits = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
        var sha = SHA256.HashData(Encoding.UTF8.GetBytes(clientId));
        var chars = new char[8];
        for (int i = 0; i < 8; i++) chars[i] = digits[sha[i] % 62];
        return new string(chars);
    }

    private string SessionSubject => JetStreamApi.SessionPrefix + SessionHash(_clientId);

    private async Task<JsonObject?> LoadSessionAsync(CancellationToken ct)
    {
        JsonObject reply;
        try
        {
            reply = await _js!.RequestAsync("$JS.API.STREAM.MSG.GET." + JetStreamApi.SessionStream,
                new JsonObject { ["last_by_subj"] = SessionSubject }, ct).ConfigureAwait(false);
        }
        catch (JetStreamException e) when (e.ErrorCode == 10037)
        {
            return null; // no message found
        }
        var data = reply["message"]?["data"]?.GetValue<string>();
        if (string.IsNullOrEmpty(data)) return null;
        var record = System.Text.Json.JsonSerializer.Deserialize(Convert.FromBase64String(data), MqttJsonContext.Default.JsonObject);
        // errMQTTSessionCollision: another client ID with the same hash.
        if (record?["id"]?.GetValue<string>() != _clientId) return null;
        return record;
    }

    private async Task DeleteSessionAsync(JsonObject stored, CancellationToken ct)
    {
        if (stored["cons"] is JsonObject cons)
        {
            foreach (var (_, config) in cons)
            {
                if (config?["durable_name"]?.GetValue<string>() is { } name) await DeleteConsumerAsync(name, ct).ConfigureAwait(false);
            }
        }
        await _js!.RequestAsync("$JS.API.STREAM.PURGE." + JetStreamApi.SessionStream, new JsonObject { ["filter"] = SessionSubject }, ct).ConfigureAwait(false);
    }

    /// <summary>The session record; <paramref name="expiresAt"/> (Unix ms) once no connection holds it (MqttSession.Expiry.cs).</summary>
    private async Task SaveSessionAsync(CancellationToken ct, long? expiresAt = null)
    {
        var subs = new JsonObject();
        var cons = new JsonObject();
        JsonObject? opts = null;
        foreach (var sub in _byFilter.Values)
        {
            if (sub.Group is not null) continue;
            subs[sub.Subject] = (int)sub.Qos;
            if (SubscriptionOptions(sub) is { } o) (opts ??= [])[sub.Subject] = o;
            if (_durables.TryGetValue(sub.Subject, out var d)) cons[sub.Subject] = DurableConfig(d.Name, sub.Subject);
        }
        var record = new JsonObject { ["origin"] = s_origin, ["id"] = _clientId, ["subs"] = subs, ["cons"] = cons };
        if (opts is not null) record["opts"] = opts;
        if (ReleasedPacketIds() is { Count: > 0 } released) record["released"] = released;
        if (expiresAt is not null) record["expires"] = expiresAt.Value;
        await _js!.StoreAsync(SessionSubject, ReadOnlyMemory<byte>.Empty, new ReadOnlySequence<byte>(Encoding.UTF8.GetBytes(record.ToJsonString())), ct).ConfigureAwait(false);
    }

    private JsonObject DurableConfig(string name, string subject)
    {
        var config = new JsonObject
        {
            ["durable_name"] = name,
            ["deliver_subject"] = "$MQTT.sub." + name,
            ["deliver_policy"] = "new",
            ["ack_policy"] = "explicit",
            ["filter_subject"] = JetStreamApi.MessagePrefix + subject,
            ["ack_wait"] = (long)_options.AckWait.TotalMilliseconds * 1_000_000,
            ["max_ack_pending"] = _options.MaxAckPending,
        };
        if (_options.ConsumerInactiveThreshold > TimeSpan.Zero)
            config["inactive_threshold"] = (long)_options.ConsumerInactiveThreshold.TotalMilliseconds * 1_000_000;
        if (_options.ConsumerReplicas > 0) config["num_replicas"] = _options.ConsumerReplicas;
        if (_options.ConsumerMemoryStorage) config["mem_storage"] = true;
        return config;
    }

    /// <summary>
    /// Ours: the MQTT 5 options a subscription keeps for its life (section 3.8.3.1: No Local, Retain As Published;
    /// section 3.8.2.1.2: the Subscription Identifier, "associated with any subscription created or modified"), as
    /// <c>{"nl":true,"rap":true,"ids":[7]}</c> (only what is set; none: no entry). They are a separate map beside
    /// <c>subs</c> so that <c>subs</c> stays nats-server's subject → QoS (its mqttSession JSON ignores unknown fields)
    /// and records without it (older ones, 3.1.1 sessions) read as "no options". Retain Handling is not kept: it acts
    /// only when the SUBSCRIBE is processed (section 3.8.3.1), and a resubscription after resumption finds the restored
    /// subscription existing, as [MQTT-3.3.1-10] wants.
    /// </summary>
    private static JsonObject? SubscriptionOptions(Subscription sub)
    {
        if (!sub.NoLocal && !sub.RetainAsPublished && sub.Identifiers is null) return null;
        var o = new JsonObject();
        if (sub.NoLocal) o["nl"] = true;
        if (sub.RetainAsPublished) o["rap"] = true;
        if (sub.Identifiers is { } ids)
        {
            var array = new JsonArray();
            // A JsonValue of the primitive, not JsonArray.Add<T>: the generic one needs reflection (Native AOT, IL3050).
            foreach (var id in ids) array.Add((JsonNode)JsonValue.Create(id));
            o["ids"] = array;
        }
        return o;
    }

    /// <summary>A restored subscription: the filter back from its subject, its options (<see cref="SubscriptionOptions"/>), the same durable if it had one.</summary>
    private async Task RestoreSubscriptionAsync(string subject, byte qos, JsonNode? options, CancellationToken ct)
    {
        string filter = TopicMapping.SubjectToTopic(subject).Replace('*', '+').Replace('>', '#');
        uint identifier = options?["ids"] is JsonArray { Count: > 0 } ids ? ids[0]!.GetValue<uint>() : 0;
        await SubscribeOneAsync(new MqttTopicFilter
        {
            Topic = filter,
            QualityOfServiceLevel = (MqttQualityOfServiceLevel)qos,
            NoLocal = options?["nl"]?.GetValue<bool>() ?? false,
            RetainAsPublished = options?["rap"]?.GetValue<bool>() ?? false,
            // Nothing is sent on restore (retained messages went with the original SUBACK).
            RetainHandling = MqttRetainHandling.DoNotSendOnSubscribe,
        }, identifier, ct).ConfigureAwait(false);
    }

    /// <summary>Creates (or finds) the durable consumer and subscribes to its deliver subject.</summary>
    private async Task BindDurableAsync(Subscription sub, string? existing, CancellationToken ct)
    {
        existing ??= _restored?["cons"]?[sub.Subject]?["durable_name"]?.GetValue<string>();
        string name = existing ?? Guid.NewGuid().ToString("N")[..22];
        if (_durables.TryGetValue(sub.Subject, out var bound) && bound.Name == name)
        {
            _durableSids[bound.Sid] = sub;
            return;
        }
        var config = DurableConfig(name, sub.Subject);
        await _js!.RequestAsync($"$JS.API.CONSUMER.DURABLE.CREATE.{JetStreamApi.MessageStream}.{name}",
            new JsonObject { ["stream_name"] = JetStreamApi.MessageStream, ["config"] = config }, ct).ConfigureAwait(false);
        int sid = _nats!.NextSid();
        _durableSids[sid] = sub;
        _durables[sub.Subject] = new DurableBinding(name, sid);
        await _nats.SubscribeAsync("$MQTT.sub." + name, null, sid, ct).ConfigureAwait(false);
    }

    private async Task DeleteDurableAsync(string subject, CancellationToken ct)
    {
        if (!_durables.TryRemove(subject, out var d)) return;
        _durableSids.TryRemove(d.Sid, out _);
        await _nats!.UnsubscribeAsync(d.Sid, ct).ConfigureAwait(false);
        await DeleteConsumerAsync(d.Name, ct).ConfigureAwait(false);
    }

    private async Task DeleteConsumerAsync(string name, CancellationToken ct)
    {
        try
        {
            await _js!.RequestAsync($"$JS.API.CONSUMER.DELETE.{JetStreamApi.MessageStream}.{name}", null, ct).ConfigureAwait(false);
        }
        catch (JetStreamException e) when (e.ErrorCode == 10014)
        {
            // consumer not found
        }
    }

    /// <summary>A message from a durable consumer: QoS min(published, granted), acked on the client's PUBACK/PUBCOMP.</summary>
    private async Task DeliverDurableAsync(Subscription sub, NatsMessage m)
    {
        var subject = m.Subject;
        if (subject.Length <= JetStreamApi.MessagePrefix.Length) return;
        var plain = subject[JetStreamApi.MessagePrefix.Length..];
        byte qos = Math.Min(NatsHeaders.PublishedQoS(m.Headers.Span), sub.Qos);
        string? ack = m.Reply.IsEmpty ? null : Encoding.ASCII.GetString(m.Reply.Span);
        bool retain = RetainFlag(sub, m.Headers.Span);
        bool skip = sub.NoLocal && FromThisClient(m.Headers.Span);
        if (qos == 0 || skip)
        {
            if (!skip) await SendPublishAsync(sub.Identifiers, plain, ReadOnlyMemory<byte>.Empty, m.Headers, m.Payload, 0, retain, ack: null, batch: true).ConfigureAwait(false);
            if (ack is not null) await AckStreamMessageAsync(ack).ConfigureAwait(false);
            return;
        }
        await SendPublishAsync(sub.Identifiers, plain, ReadOnlyMemory<byte>.Empty, m.Headers, m.Payload, qos, retain, ack).ConfigureAwait(false);
    }

    private async Task AckStreamMessageAsync(string ack)
    {
        try
        {
            await _nats!.PublishAsync(ack, null, ReadOnlyMemory<byte>.Empty, ReadOnlySequence<byte>.Empty, _end.Token).ConfigureAwait(false);
        }
        catch (Exception ex) when (ex is IOException or ObjectDisposedException or OperationCanceledException)
        {
            // Not acked: JetStream redelivers after ack_wait.
        }
    }
}
