using System.Text.Json;

namespace NatsBroker.JetStream.Api;

/// <summary>How nats-server's handlers classify a request body before decoding it (jetstream_api.go).</summary>
internal static class ApiBodies
{
    /// <summary>
    /// isEmptyRequest: no bytes, "{}", or any JSON text that decodes to an empty object (" { } "); anything else,
    /// malformed JSON included, is not empty.
    /// </summary>
    public static bool IsEmptyRequest(ReadOnlySpan<byte> body)
    {
        if (body.IsEmpty || body.SequenceEqual("{}"u8)) return true;
        try
        {
            using var doc = JsonDocument.Parse(body.ToArray());
            return doc.RootElement.ValueKind == JsonValueKind.Object && !doc.RootElement.EnumerateObject().Any();
        }
        catch (JsonException)
        {
            return false;
        }
    }

    /// <summary>isJSONObjectOrArray: the first byte after JSON whitespace is '{' or '['.</summary>
    public static bool IsJsonObjectOrArray(ReadOnlySpan<byte> body)
    {
        int i = 0;
        while (i < body.Length && body[i] is (byte)' ' or (byte)'\t' or (byte)'\n' or (byte)'\r') i++;
        return i < body.Length && body[i] is (byte)'{' or (byte)'[';
    }
}
