using System.Text.Json;
using System.Text.Json.Serialization;

namespace NatsBroker.JetStream.Api;

/// <summary>
/// Source-generated JSON for the JetStream API: snake_case names as nats-server's struct tags, nulls skipped
/// (Go's omitempty on the fields modelled as nullable), names matched case-insensitively as Go does. Unknown request
/// fields are ignored here: GoJson has already refused them where nats-server 2.14's strict decoding does.
/// </summary>
[JsonSourceGenerationOptions(
    PropertyNamingPolicy = JsonKnownNamingPolicy.SnakeCaseLower,
    DefaultIgnoreCondition = JsonIgnoreCondition.WhenWritingNull,
    PropertyNameCaseInsensitive = true,
    Converters = [typeof(GoTimeConverter), typeof(GoNullableTimeConverter)])]
[JsonSerializable(typeof(ErrorResponse))]
[JsonSerializable(typeof(StreamConfig))]
[JsonSerializable(typeof(StreamInfoResponse))]
[JsonSerializable(typeof(StreamInfoRequest))]
[JsonSerializable(typeof(StreamNamesRequest))]
[JsonSerializable(typeof(StreamNamesResponse))]
[JsonSerializable(typeof(StreamListResponse))]
[JsonSerializable(typeof(StreamDeleteResponse))]
[JsonSerializable(typeof(StreamPurgeRequest))]
[JsonSerializable(typeof(StreamPurgeResponse))]
[JsonSerializable(typeof(MsgGetRequest))]
[JsonSerializable(typeof(MsgGetResponse))]
[JsonSerializable(typeof(MsgDeleteRequest))]
[JsonSerializable(typeof(MsgDeleteResponse))]
[JsonSerializable(typeof(CreateConsumerRequest))]
[JsonSerializable(typeof(ConsumerInfoResponse))]
[JsonSerializable(typeof(ConsumerNamesResponse))]
[JsonSerializable(typeof(ConsumerListResponse))]
[JsonSerializable(typeof(ConsumerDeleteResponse))]
[JsonSerializable(typeof(OffsetRequest))]
[JsonSerializable(typeof(NextRequest))]
[JsonSerializable(typeof(AccountInfoResponse))]
[JsonSerializable(typeof(PubAckResponse))]
[JsonSerializable(typeof(StreamMeta))]
[JsonSerializable(typeof(ConsumerMeta))]
internal sealed partial class JsJsonContext : JsonSerializerContext;

/// <summary>
/// Times as Go's time.Time marshals them: RFC 3339 in UTC with the fraction's trailing zeros trimmed; the zero
/// time is "0001-01-01T00:00:00Z".
/// </summary>
internal sealed class GoTimeConverter : JsonConverter<DateTime>
{
    public override DateTime Read(ref Utf8JsonReader reader, Type typeToConvert, JsonSerializerOptions options) =>
        reader.GetDateTimeOffset().UtcDateTime;

    public override void Write(Utf8JsonWriter writer, DateTime value, JsonSerializerOptions options)
    {
        var utc = value.Kind == DateTimeKind.Local ? value.ToUniversalTime() : DateTime.SpecifyKind(value, DateTimeKind.Utc);
        string s = utc.ToString("yyyy-MM-dd'T'HH:mm:ss.FFFFFFF", System.Globalization.CultureInfo.InvariantCulture);
        if (s.EndsWith('.')) s = s[..^1];
        writer.WriteStringValue(s + "Z");
    }
}

internal sealed class GoNullableTimeConverter : JsonConverter<DateTime?>
{
    private static readonly GoTimeConverter Inner = new();

    public override DateTime? Read(ref Utf8JsonReader reader, Type typeToConvert, JsonSerializerOptions options) =>
        reader.TokenType == JsonTokenType.Null ? null : Inner.Read(ref reader, typeof(DateTime), options);

    public override void Write(Utf8JsonWriter writer, DateTime? value, JsonSerializerOptions options)
    {
        if (value is { } v) Inner.Write(writer, v, options);
        else writer.WriteNullValue();
    }
}
