using System.Buffers.Text;
using System.Text;
using System.Text.Json;

namespace NatsBroker.JetStream;

/// <summary>What a MSG.NEXT body asks (nats-server consumer.go nextReqFromMsg), nanoseconds for the durations.</summary>
internal struct PullFields
{
    /// <summary>Messages asked for: 1 for an empty body, the number for a numeric body, JSON "batch" as given (0 when absent).</summary>
    public long Batch;
    /// <summary>0 = no expiry; may be negative (then the request is already expired, as nats-server's time.Now().Add).</summary>
    public long Expires;
    public long MaxBytes;
    public bool NoWait;
    public long Heartbeat;
    /// <summary>The body was JSON, so it carries priority group fields (nats-server: priorityGroup != nil).</summary>
    public bool Json;
    public string? Group;
    public long MinPending;
    public long MinAckPending;
    public string? Id;
    public long Priority;
}

/// <summary>
/// Parses a MSG.NEXT body as nats-server's nextReqFromMsg does: empty = one message, a number (strconv.Atoi) = that
/// batch, JSON = JSApiConsumerGetNextRequest decoded by Go's encoding/json (syntax checked first, field names matched
/// case-insensitively, the first type error reported with Go's wording), anything else = one message. The returned
/// text follows "400 Bad Request - ".
/// </summary>
internal static class PullRequestBody
{
    private const string Struct = "JSApiConsumerGetNextRequest.";
    private const string Group = Struct + "PriorityGroup.";

    public static string? Parse(ReadOnlySpan<byte> body, out PullFields f)
    {
        f = new PullFields { Batch = 1 };
        var req = body.Trim(" \t\r\n\v\f"u8);
        if (req.IsEmpty) return null;
        if (req[0] != (byte)'{')
        {
            if (TryAtoi(req, out long n)) f.Batch = n;
            return null;
        }
        if (GoJsonSyntax.Check(req) is { } syntax) return syntax;
        f = new PullFields { Json = true };
        string? error = Decode(req, ref f);
        if (error is not null) return error;
        if (f.Heartbeat > 0 && f.Heartbeat * 2 > f.Expires) return "heartbeat value too large";
        return null;
    }

    /// <summary>Go strconv.Atoi: optional sign, decimal digits only, within int64.</summary>
    private static bool TryAtoi(ReadOnlySpan<byte> s, out long n)
    {
        n = 0;
        var digits = s[0] is (byte)'+' or (byte)'-' ? s[1..] : s;
        if (digits.IsEmpty || digits.IndexOfAnyExceptInRange((byte)'0', (byte)'9') >= 0) return false;
        if (s[0] == (byte)'+') s = s[1..];
        return Utf8Parser.TryParse(s, out n, out int used) && used == s.Length;
    }

    private static string? Decode(ReadOnlySpan<byte> json, ref PullFields f)
    {
        var reader = new Utf8JsonReader(json, new JsonReaderOptions { MaxDepth = 10_000 });
        string? first = null;
        try
        {
            reader.Read(); // StartObject
            while (reader.Read() && reader.TokenType == JsonTokenType.PropertyName)
            {
                string name = reader.GetString() ?? "";
                reader.Read();
                string? err = Field(name.ToLowerInvariant(), ref reader, ref f);
                first ??= err;
                if (reader.TokenType is JsonTokenType.StartObject or JsonTokenType.StartArray) reader.Skip();
            }
        }
        catch (JsonException)
        {
            // Valid for Go but not for System.Text.Json (invalid UTF-8 in a string): Go decodes what it can, so do we.
        }
        return first;
    }

    /// <summary>One field, by its (case-folded) JSON name; unknown names are ignored as Go ignores them.</summary>
    private static string? Field(string name, ref Utf8JsonReader r, ref PullFields f) => name switch
    {
        "expires" => Int(ref r, Struct + "expires", "time.Duration", ref f.Expires),
        "batch" => Int(ref r, Struct + "batch", "int", ref f.Batch),
        "max_bytes" => Int(ref r, Struct + "max_bytes", "int", ref f.MaxBytes),
        "no_wait" => Bool(ref r, Struct + "no_wait", ref f.NoWait),
        "idle_heartbeat" => Int(ref r, Struct + "idle_heartbeat", "time.Duration", ref f.Heartbeat),
        "group" => Str(ref r, Group + "group", ref f.Group),
        "min_pending" => Int(ref r, Group + "min_pending", "int64", ref f.MinPending),
        "min_ack_pending" => Int(ref r, Group + "min_ack_pending", "int64", ref f.MinAckPending),
        "id" => Str(ref r, Group + "id", ref f.Id),
        "priority" => Int(ref r, Group + "priority", "int", ref f.Priority),
        _ => null,
    };

    private static string? Int(ref Utf8JsonReader r, string field, string type, ref long value)
    {
        if (r.TokenType == JsonTokenType.Null) return null;
        if (r.TokenType != JsonTokenType.Number) return Mismatch(r.TokenType, field, type);
        if (r.TryGetInt64(out long v) && r.ValueSpan.IndexOfAny((byte)'.', (byte)'e', (byte)'E') < 0)
        {
            value = v;
            return null;
        }
        // A fraction, an exponent or out of range: Go names the literal (decode.go UnmarshalTypeError "number 1.5").
        return $"json: cannot unmarshal number {Encoding.ASCII.GetString(r.ValueSpan)} into Go struct field {field} of type {type}";
    }

    private static string? Bool(ref Utf8JsonReader r, string field, ref bool value)
    {
        switch (r.TokenType)
        {
            case JsonTokenType.Null: return null;
            case JsonTokenType.True: value = true; return null;
            case JsonTokenType.False: value = false; return null;
            default: return Mismatch(r.TokenType, field, "bool");
        }
    }

    private static string? Str(ref Utf8JsonReader r, string field, ref string? value)
    {
        if (r.TokenType == JsonTokenType.Null) return null;
        if (r.TokenType != JsonTokenType.String) return Mismatch(r.TokenType, field, "string");
        value = r.GetString();
        return null;
    }

    private static string Mismatch(JsonTokenType token, string field, string type)
    {
        string kind = token switch
        {
            JsonTokenType.String => "string",
            JsonTokenType.Number => "number",
            JsonTokenType.True or JsonTokenType.False => "bool",
            JsonTokenType.StartArray => "array",
            _ => "object",
        };
        return $"json: cannot unmarshal {kind} into Go struct field {field} of type {type}";
    }
}
