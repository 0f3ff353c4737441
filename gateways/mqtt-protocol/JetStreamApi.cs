using System.Buffers;
using System.Collections.Concurrent;
using System.Text;
using System.Text.Json.Nodes;

namespace NatsBroker.MqttGateway;

/// <summary>The JetStream API refused a request, or is not there (no responders: JetStream disabled).</summary>
// CA1064 asks a library's exceptions to be public; this one is caught inside this library's sessions (the MQTT
// packet answers carry its code), never by a caller outside, as when the sessions were the executable's own code.
#pragma warning disable CA1064
internal sealed class JetStreamException(string message, int code = 0) : Exception(message)
{
    public int ErrorCode { get; } = code;
}
#pragma warning restore CA1064

/// <summary>
/// The JetStream requests the MQTT state needs, made over the client's own link (so with the user's account and
/// permissions). Stream names, subjects and configs are nats-server's (server/mqtt.go
/// mqttCreateAccountSessionManager): <c>$MQTT_sess</c> (<c>$MQTT.sess.&gt;</c>, one message per subject),
/// <c>$MQTT_msgs</c> (<c>$MQTT.msgs.&gt;</c>, interest retention), <c>$MQTT_rmsgs</c> (<c>$MQTT.rmsgs.&gt;</c>, one
/// message per subject), all file storage.
/// </summary>
internal sealed class JetStreamApi(NatsLink link, MqttOptions options)
{
    public const string SessionStream = "$MQTT_sess", SessionPrefix = "$MQTT.sess.";
    public const string MessageStream = "$MQTT_msgs", MessagePrefix = "$MQTT.msgs.";
    public const string RetainedStream = "$MQTT_rmsgs", RetainedPrefix = "$MQTT.rmsgs.";
    /// <summary>nats-server's JSStreamNameExistErr (a stream with that name and another config exists).</summary>
    private const int StreamNameExists = 10058;

    /// <summary>Users (accounts) whose streams this process has already made sure of.</summary>
    private static readonly ConcurrentDictionary<string, bool> s_ensured = new(StringComparer.Ordinal);

    public async Task<JsonObject> RequestAsync(string subject, JsonObject? body, CancellationToken ct)
    {
        var payload = body is null ? ReadOnlySequence<byte>.Empty : new ReadOnlySequence<byte>(Encoding.UTF8.GetBytes(body.ToJsonString()));
        NatsReply reply;
        try
        {
            reply = await link.RequestAsync(subject, ReadOnlyMemory<byte>.Empty, payload, options.JsApiTimeout, ct).ConfigureAwait(false);
        }
        catch (TimeoutException)
        {
            throw new JetStreamException($"JetStream request to {subject} timed out");
        }
        if (reply.Denied) throw new JetStreamException($"no permission to publish to {subject}");
        if (reply.NoResponders) throw new JetStreamException("JetStream is not enabled for this account");
        var json = System.Text.Json.JsonSerializer.Deserialize(reply.Payload, MqttJsonContext.Default.JsonObject)
            ?? throw new JetStreamException("empty JetStream reply");
        if (json["error"] is JsonObject error)
            throw new JetStreamException(error["description"]?.GetValue<string>() ?? "JetStream error", error["err_code"]?.GetValue<int>() ?? 0);
        return json;
    }

    /// <summary>Creates the three streams when missing (once per user per gateway process).</summary>
    public async Task EnsureStreamsAsync(string account, CancellationToken ct)
    {
        if (s_ensured.ContainsKey(account)) return;
        int replicas = Math.Max(1, options.StreamReplicas);
        await CreateStreamAsync(new JsonObject
        {
            ["name"] = SessionStream, ["subjects"] = new JsonArray(SessionPrefix + ">"), ["storage"] = "file",
            ["retention"] = "limits", ["num_replicas"] = replicas, ["max_msgs_per_subject"] = 1,
        }, ct).ConfigureAwait(false);
        await CreateStreamAsync(new JsonObject
        {
            ["name"] = MessageStream, ["subjects"] = new JsonArray(MessagePrefix + ">"), ["storage"] = "file",
            ["retention"] = "interest", ["num_replicas"] = replicas,
        }, ct).ConfigureAwait(false);
        await CreateStreamAsync(new JsonObject
        {
            ["name"] = RetainedStream, ["subjects"] = new JsonArray(RetainedPrefix + ">"), ["storage"] = "file",
            ["retention"] = "limits", ["num_replicas"] = replicas, ["max_msgs_per_subject"] = 1,
        }, ct).ConfigureAwait(false);
        s_ensured[account] = true;
    }

    private async Task CreateStreamAsync(JsonObject config, CancellationToken ct)
    {
        string name = config["name"]!.GetValue<string>();
        try
        {
            await RequestAsync("$JS.API.STREAM.INFO." + name, null, ct).ConfigureAwait(false);
            return;
        }
        catch (JetStreamException e) when (e.ErrorCode == 10059)
        {
            // stream not found: create it
        }
        try
        {
            await RequestAsync("$JS.API.STREAM.CREATE." + name, config, ct).ConfigureAwait(false);
        }
        catch (JetStreamException e) when (e.ErrorCode == StreamNameExists)
        {
            // Created meanwhile by another session or gateway.
        }
    }

    /// <summary>Stores a message (PUB with a reply, waits for the PubAck): nothing is acknowledged to MQTT before it is durable.</summary>
    public async Task StoreAsync(string subject, ReadOnlyMemory<byte> headers, ReadOnlySequence<byte> payload, CancellationToken ct)
    {
        var stored = await SendStoreAsync(subject, headers, payload, ct).ConfigureAwait(false);
        await stored.ConfigureAwait(false);
    }

    /// <summary>
    /// Sends a store and returns once it is in the link's buffer (the payload copied), with a task that completes when
    /// the PubAck came (or fails with its error). See <see cref="NatsLink.SendRequestAsync"/> for <paramref name="batch"/>.
    /// </summary>
    public async ValueTask<Task> SendStoreAsync(string subject, ReadOnlyMemory<byte> headers, ReadOnlySequence<byte> payload, CancellationToken ct, bool batch = false)
    {
        var reply = await link.SendRequestAsync(subject, headers, payload, options.JsApiTimeout, ct, batch).ConfigureAwait(false);
        return CheckStoredAsync(subject, reply);
    }

    private static async Task CheckStoredAsync(string subject, Task<NatsReply> pending)
    {
        NatsReply reply;
        try
        {
            reply = await pending.ConfigureAwait(false);
        }
        catch (TimeoutException)
        {
            throw new JetStreamException($"storing on {subject} timed out");
        }
        if (reply.Denied) throw new JetStreamException($"no permission to publish to {subject}");
        if (reply.NoResponders) throw new JetStreamException($"no stream for {subject}");
        // A PubAck is {"stream":..,"seq":..}; only an error reply is parsed (no JSON tree per stored message).
        if (reply.Payload.AsSpan().IndexOf("\"error\""u8) < 0) return;
        var ack = System.Text.Json.JsonSerializer.Deserialize(reply.Payload, MqttJsonContext.Default.JsonObject);
        if (ack?["error"] is JsonObject error) throw new JetStreamException(error["description"]?.GetValue<string>() ?? "store failed", error["err_code"]?.GetValue<int>() ?? 0);
    }
}

[System.Text.Json.Serialization.JsonSerializable(typeof(JsonObject))]
internal sealed partial class MqttJsonContext : System.Text.Json.Serialization.JsonSerializerContext;
