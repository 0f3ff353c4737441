using System.Text.Json.Serialization;
using NatsBroker.JetStream.Api;

namespace NatsBroker.JetStream.Priority;

/// <summary>io.nats.jetstream.advisory.v1.consumer_group_pinned on $JS.EVENT.ADVISORY.CONSUMER.PINNED.&lt;stream&gt;.&lt;consumer&gt;.</summary>
internal sealed class ConsumerGroupPinnedAdvisory : TypedEvent
{
    public string? Account { get; set; }
    public string Stream { get; set; } = "";
    public string Consumer { get; set; } = "";
    public string? Domain { get; set; }
    public string Group { get; set; } = "";
    [JsonPropertyName("pinned_id")] public string PinnedClientId { get; set; } = "";
}

/// <summary>io.nats.jetstream.advisory.v1.consumer_group_unpinned on $JS.EVENT.ADVISORY.CONSUMER.UNPINNED.&lt;stream&gt;.&lt;consumer&gt;.</summary>
internal sealed class ConsumerGroupUnpinnedAdvisory : TypedEvent
{
    public string? Account { get; set; }
    public string Stream { get; set; } = "";
    public string Consumer { get; set; } = "";
    public string? Domain { get; set; }
    public string Group { get; set; } = "";
    /// <summary>"admin" (CONSUMER.UNPIN) or "timeout" (priority_timeout ran out).</summary>
    public string Reason { get; set; } = "";
}

/// <summary>nats-server JSApiConsumerUnpinRequest.</summary>
internal sealed class ConsumerUnpinRequest
{
    public string? Group { get; set; }
}

/// <summary>nats-server JSApiConsumerUnpinResponse: the type, and the error when refused.</summary>
internal sealed class ConsumerUnpinResponse
{
    public string Type { get; set; } = "io.nats.jetstream.api.v1.consumer_unpin_response";
}

[JsonSourceGenerationOptions(
    PropertyNamingPolicy = JsonKnownNamingPolicy.SnakeCaseLower,
    DefaultIgnoreCondition = JsonIgnoreCondition.WhenWritingNull,
    Converters = [typeof(GoTimeConverter)])]
[JsonSerializable(typeof(ConsumerGroupPinnedAdvisory))]
[JsonSerializable(typeof(ConsumerGroupUnpinnedAdvisory))]
[JsonSerializable(typeof(ConsumerUnpinRequest))]
[JsonSerializable(typeof(ConsumerUnpinResponse))]
internal sealed partial class PriorityJsonContext : JsonSerializerContext;
