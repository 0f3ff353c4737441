using System.Text.Json.Serialization;

namespace NatsBroker.JetStream.Api;

// JSON shapes of JetStream advisories and metrics (nats-server server/jetstream_events.go; schemas
// io.nats.jetstream.advisory.v1.* and io.nats.jetstream.metric.v1.*). Go's omitempty fields are nullable here.

/// <summary>nats-server TypedEvent: every advisory starts with type, id (a NUID) and timestamp.</summary>
public abstract class TypedEvent
{
    [JsonPropertyOrder(-10)] public string Type { get; set; } = "";
    [JsonPropertyOrder(-9)] public string Id { get; set; } = "";
    [JsonPropertyOrder(-8)] public DateTime Timestamp { get; set; }
}

/// <summary>nats-server ClientInfo as advisories carry it (events.go; jwt and alternates left out).</summary>
public sealed class AdvisoryClientInfo
{
    public DateTime? Start { get; set; }
    public string? Host { get; set; }
    public ulong? Id { get; set; }
    public string? Acc { get; set; }
    public string? User { get; set; }
    public string? Name { get; set; }
    public string? Lang { get; set; }
    public string? Ver { get; set; }
    /// <summary>Round-trip time in nanoseconds (Go's time.Duration).</summary>
    public long? Rtt { get; set; }
    public string? Server { get; set; }
    public string? Kind { get; set; }
    public string? ClientType { get; set; }
}

/// <summary>io.nats.jetstream.advisory.v1.api_audit on $JS.EVENT.ADVISORY.API.</summary>
public sealed class JsApiAuditAdvisory : TypedEvent
{
    public string Server { get; set; } = "";
    /// <summary>Always written (Go: a pointer without omitempty), null for server-originated requests.</summary>
    [JsonIgnore(Condition = JsonIgnoreCondition.Never)] public AdvisoryClientInfo? Client { get; set; }
    public string Subject { get; set; } = "";
    public string? Request { get; set; }
    public string Response { get; set; } = "";
    public string? Domain { get; set; }
}

/// <summary>io.nats.jetstream.advisory.v1.stream_action (create / delete / modify).</summary>
public sealed class JsStreamActionAdvisory : TypedEvent
{
    public string Stream { get; set; } = "";
    public string Action { get; set; } = "";
    public string? Domain { get; set; }
}

/// <summary>io.nats.jetstream.advisory.v1.consumer_action (create / delete).</summary>
public sealed class JsConsumerActionAdvisory : TypedEvent
{
    public string Stream { get; set; } = "";
    public string Consumer { get; set; } = "";
    public string Action { get; set; } = "";
    public string? Domain { get; set; }
}

/// <summary>io.nats.jetstream.advisory.v1.consumer_pause (2.11).</summary>
public sealed class JsConsumerPauseAdvisory : TypedEvent
{
    public string Stream { get; set; } = "";
    public string Consumer { get; set; } = "";
    public bool Paused { get; set; }
    /// <summary>Go writes the zero time too (omitempty does not apply to structs).</summary>
    public DateTime PauseUntil { get; set; }
    public string? Domain { get; set; }
}

/// <summary>io.nats.jetstream.metric.v1.consumer_ack on $JS.EVENT.METRIC.CONSUMER.ACK.&lt;stream&gt;.&lt;consumer&gt;.</summary>
public sealed class JsConsumerAckMetric : TypedEvent
{
    public string Stream { get; set; } = "";
    public string Consumer { get; set; } = "";
    public ulong ConsumerSeq { get; set; }
    public ulong StreamSeq { get; set; }
    /// <summary>Nanoseconds from delivery to ack.</summary>
    public long AckTime { get; set; }
    public ulong Deliveries { get; set; }
    public string? Domain { get; set; }
}

/// <summary>io.nats.jetstream.advisory.v1.max_deliver.</summary>
public sealed class JsConsumerDeliveryExceededAdvisory : TypedEvent
{
    public string Stream { get; set; } = "";
    public string Consumer { get; set; } = "";
    public ulong StreamSeq { get; set; }
    public ulong Deliveries { get; set; }
    public string? Domain { get; set; }
}

/// <summary>io.nats.jetstream.advisory.v1.nak.</summary>
public sealed class JsConsumerDeliveryNakAdvisory : TypedEvent
{
    public string Stream { get; set; } = "";
    public string Consumer { get; set; } = "";
    public ulong ConsumerSeq { get; set; }
    public ulong StreamSeq { get; set; }
    public ulong Deliveries { get; set; }
    public string? Domain { get; set; }
}

/// <summary>io.nats.jetstream.advisory.v1.terminated.</summary>
public sealed class JsConsumerDeliveryTerminatedAdvisory : TypedEvent
{
    public string Stream { get; set; } = "";
    public string Consumer { get; set; } = "";
    public ulong ConsumerSeq { get; set; }
    public ulong StreamSeq { get; set; }
    public ulong Deliveries { get; set; }
    public string? Reason { get; set; }
    public string? Domain { get; set; }
}

[JsonSourceGenerationOptions(
    PropertyNamingPolicy = JsonKnownNamingPolicy.SnakeCaseLower,
    DefaultIgnoreCondition = JsonIgnoreCondition.WhenWritingNull,
    Converters = [typeof(GoTimeConverter), typeof(GoNullableTimeConverter)])]
[JsonSerializable(typeof(JsApiAuditAdvisory))]
[JsonSerializable(typeof(JsStreamActionAdvisory))]
[JsonSerializable(typeof(JsConsumerActionAdvisory))]
[JsonSerializable(typeof(JsConsumerPauseAdvisory))]
[JsonSerializable(typeof(JsConsumerAckMetric))]
[JsonSerializable(typeof(JsConsumerDeliveryExceededAdvisory))]
[JsonSerializable(typeof(JsConsumerDeliveryNakAdvisory))]
[JsonSerializable(typeof(JsConsumerDeliveryTerminatedAdvisory))]
internal sealed partial class JsAdvisoryJsonContext : JsonSerializerContext;
