using System.Text.Json;
using System.Text.Json.Serialization.Metadata;
using NatsBroker.JetStream.Api;

namespace NatsBroker.JetStream;

/// <summary>Serializing responses and parsing requests with the source-generated context.</summary>
internal static class JsJson
{
    public const string Prefix = "io.nats.jetstream.api.v1.";

    public static byte[] Error(string type, ApiError error)
    {
        var json = GoJsonText.FromDotNet(JsonSerializer.SerializeToUtf8Bytes(new ErrorResponse { Type = type, Error = error }, JsJsonContext.Default.ErrorResponse));
        if (ErrorExtras(type) is not { } extras) return json;
        // nats-server writes its whole response struct: the fields without omitempty come with their zero values.
        var all = new byte[json.Length - 1 + extras.Length + 1];
        json.AsSpan(0, json.Length - 1).CopyTo(all);
        extras.CopyTo(all.AsSpan(json.Length - 1));
        all[^1] = (byte)'}';
        return all;
    }

    /// <summary>The zero-valued fields Go's error responses carry (jetstream_api.go JSApi*Response without omitempty).</summary>
    private static byte[]? ErrorExtras(string type) => type.AsSpan(Prefix.Length) switch
    {
        "stream_info_response" => ",\"total\":0,\"offset\":0,\"limit\":0"u8.ToArray(),
        "stream_names_response" => ",\"total\":0,\"offset\":0,\"limit\":0,\"streams\":null"u8.ToArray(),
        "stream_list_response" => ",\"total\":0,\"offset\":0,\"limit\":0,\"streams\":[]"u8.ToArray(),
        "consumer_names_response" or "consumer_list_response" => ",\"total\":0,\"offset\":0,\"limit\":0,\"consumers\":[]"u8.ToArray(),
        "stream_purge_response" => ",\"purged\":0"u8.ToArray(),
        "consumer_pause_response" => ",\"paused\":false,\"pause_until\":\"0001-01-01T00:00:00Z\""u8.ToArray(),
        "stream_restore_response" => ",\"deliver_subject\":\"\""u8.ToArray(),
        _ => null,
    };

    /// <summary>An API answer, its text escaped as Go's encoding/json escapes it (GoJsonText).</summary>
    public static byte[] Serialize<T>(T value, JsonTypeInfo<T> info) => GoJsonText.FromDotNet(JsonSerializer.SerializeToUtf8Bytes(value, info));

    /// <summary>
    /// Parses a request body as nats-server 2.14's strict decoding does (<see cref="GoJson"/>: Go's texts for syntax
    /// errors, wrong types and unknown fields of <paramref name="schema"/>); an empty body gives a new T.
    /// </summary>
    public static bool TryParseStrict<T>(ReadOnlySpan<byte> body, JsonTypeInfo<T> info, GoType schema, out T? value, out ApiError? error) where T : new()
    {
        var goError = GoJson.Check(body, schema, out var cleaned);
        if (goError is not null)
        {
            value = default;
            error = JsErrors.InvalidJson(goError);
            return false;
        }
        return TryParse(cleaned ?? body, info, out value, out error);
    }

    /// <summary>
    /// Parses a request body as Go's plain json.Unmarshal does (<see cref="GoJson.CheckUnmarshal"/>: unknown fields
    /// ignored, one value, Go's texts); an empty body is an error ("unexpected end of JSON input"), as in Go.
    /// </summary>
    public static bool TryParseUnmarshal<T>(ReadOnlySpan<byte> body, JsonTypeInfo<T> info, GoType schema, out T? value, out ApiError? error) where T : new()
    {
        var goError = GoJson.CheckUnmarshal(body, schema, out var cleaned);
        if (goError is not null)
        {
            value = default;
            error = JsErrors.InvalidJson(goError);
            return false;
        }
        return TryParse(cleaned ?? body, info, out value, out error);
    }

    /// <summary>Parses a request body; an empty body gives a new T. On bad JSON returns false with nats-server's error.</summary>
    public static bool TryParse<T>(ReadOnlySpan<byte> body, JsonTypeInfo<T> info, out T? value, out ApiError? error) where T : new()
    {
        error = null;
        if (body.IsEmpty || body.Trim(" \t\r\n"u8).IsEmpty)
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
