using System.Text.Json;
using System.Text.Json.Serialization.Metadata;
using NatsBroker.JetStream.Api;

namespace NatsBroker.JetStream;

/// <summary>Serializing responses and parsing requests with the source-generated context.</summary>
internal static class JsJson
{
    public const string Prefix = "io.nats.jetstream.api.v1.";

    public static byte[] Error(string type, ApiError error) =>
        JsonSerializer.SerializeToUtf8Bytes(new ErrorResponse { Type = type, Error = error }, JsJsonContext.Default.ErrorResponse);

    public static byte[] Serialize<T>(T value, JsonTypeInfo<T> info) => JsonSerializer.SerializeToUtf8Bytes(value, info);

    /// <summary>Parses a request body; an empty body gives a new T. On bad JSON returns false with nats-server's error.</summary>
    public static bool TryParse<T>(ReadOnlySpan<byte> body, JsonTypeInfo<T> info, out T? value, out ApiError? error) where T : new()
    {
        error = null;
        if (body.IsEmpty || body.Trim((byte)' ').IsEmpty)
        {
            value = new T();
            return true;
        }
        try
        {
            value = JsonSerializer.Deserialize(body, info);
            value ??= new T();
            return true;
        }
        catch (JsonException ex)
        {
            value = default;
            error = JsErrors.InvalidJson(ex.Message);
            return false;
        }
    }
}
