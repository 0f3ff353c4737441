using System.Globalization;
using System.Text;
using System.Text.Json;

namespace NatsBroker.JetStream.Api;

/// <summary>
/// What Go's encoding/json says about a request body, as nats-server 2.14's strict request decoding
/// (jetstream_api.go unmarshalRequest: a json.Decoder with DisallowUnknownFields, read value by value until EOF,
/// " at offset N" appended to syntax errors). Gives the text after "invalid JSON: " or null when Go accepts the body.
/// Go's rules kept: the whole value is scanned for syntax first (encoding/json scanner.go messages, 1-based byte
/// offset); then type mismatches and unknown fields are remembered and the first one in document order is answered,
/// while an error from a type's own UnmarshalJSON (the policy enums, compression, time) ends decoding at once and
/// wins (decode.go saveError / d.value); null is a no-op except for those types; field names match exactly, then
/// case-insensitively.
/// </summary>
internal static class GoJson
{
    /// <summary>
    /// Checks <paramref name="body"/> against <paramref name="root"/>. <paramref name="cleaned"/> is set when the body
    /// must be read differently from its bytes for Go's meaning (null members dropped, several values merged).
    /// </summary>
    public static string? Check(ReadOnlySpan<byte> body, GoType root, out byte[]? cleaned)
    {
        cleaned = null;
        return CheckDecoder(body, root, ref cleaned);
    }

    /// <summary>
    /// What Go's plain json.Unmarshal says about <paramref name="body"/> (the handlers that do not use
    /// unmarshalRequest: CONSUMER.UNPIN, CONSUMER.RESET, DIRECT.GET): unknown fields are ignored, the body is one
    /// value (an empty one is "unexpected end of JSON input", anything after it "invalid character ... after
    /// top-level value"), syntax errors carry no offset, and the whole body is scanned before any type is looked at.
    /// </summary>
    public static string? CheckUnmarshal(ReadOnlySpan<byte> body, GoType root, out byte[]? cleaned)
    {
        cleaned = null;
        int start = SkipSpace(body, 0);
        if (start >= body.Length) return "unexpected end of JSON input";
        var syntax = new Scanner(body, start, unmarshal: true).ScanValue(out int end);
        if (syntax is not null) return syntax;
        int after = SkipSpace(body, end);
        if (after < body.Length) return $"invalid character {QuoteChar(body[after])} after top-level value";
        string? err;
        bool hasNull;
        try
        {
            using var doc = JsonDocument.Parse(body[start..end].ToArray());
            var walker = new Walker { IgnoreUnknown = true };
            err = walker.Value(doc.RootElement, root, null, []);
            hasNull = walker.SawNullMember;
        }
        catch (JsonException)
        {
            return null;
        }
        if (err is not null) return err;
        if (hasNull) cleaned = Merge(body, [(start, end)]);
        if (FixLoneSurrogates(cleaned ?? body) is { } fixedText) cleaned = fixedText;
        return null;
    }

    private static string? CheckDecoder(ReadOnlySpan<byte> body, GoType root, ref byte[]? cleaned)
    {
        int pos = 0;
        List<(int Start, int End)>? values = null;
        while (true)
        {
            pos = SkipSpace(body, pos);
            if (pos >= body.Length) break;
            int start = pos;
            var syntax = new Scanner(body, pos).ScanValue(out int end);
            if (syntax is not null) return syntax;
            string? err;
            bool hasNull;
            try
            {
                using var doc = JsonDocument.Parse(body[start..end].ToArray());
                var walker = new Walker();
                err = walker.Value(doc.RootElement, root, null, []);
                hasNull = walker.SawNullMember;
            }
            catch (JsonException)
            {
                // Bytes Go reads but System.Text.Json refuses (invalid UTF-8): Go would decode them with U+FFFD.
                return null;
            }
            if (err is not null) return err;
            (values ??= []).Add((start, end));
            if (hasNull) cleaned = [];
            pos = end;
        }
        if (values is { Count: > 1 } || cleaned is not null) cleaned = Merge(body, values ?? []);
        if (FixLoneSurrogates(cleaned ?? body) is { } fixedText) cleaned = fixedText;
        return null;
    }

    /// <summary>
    /// Go decodes an unpaired \uD800-\uDFFF escape as U+FFFD (decode.go unquote); System.Text.Json refuses it.
    /// Null when the body has none.
    /// </summary>
    private static byte[]? FixLoneSurrogates(ReadOnlySpan<byte> body)
    {
        if (body.IndexOf("\\u"u8) < 0) return null;
        var text = System.Text.Encoding.UTF8.GetString(body);
        var fixedText = System.Text.RegularExpressions.Regex.Replace(text,
            @"(?<!\\)((?:\\\\)*)\\u([dD][89abAB][0-9a-fA-F]{2})(?!\\u[dD][c-fC-F][0-9a-fA-F]{2})|(?<!\\)((?:\\\\)*)(?<!\\u[dD][89abAB][0-9a-fA-F]{2})\\u([dD][c-fC-F][0-9a-fA-F]{2})",
            m => (m.Groups[1].Success ? m.Groups[1].Value : m.Groups[3].Value) + "\\ufffd");
        return ReferenceEquals(fixedText, text) || fixedText == text ? null : System.Text.Encoding.UTF8.GetBytes(fixedText);
    }

    private static int SkipSpace(ReadOnlySpan<byte> b, int i)
    {
        while (i < b.Length && b[i] is (byte)' ' or (byte)'\t' or (byte)'\n' or (byte)'\r') i++;
        return i;
    }

    /// <summary>The values decoded one over the other (Go decodes each into the same struct), null members dropped.</summary>
    private static byte[] Merge(ReadOnlySpan<byte> body, List<(int Start, int End)> values)
    {
        System.Text.Json.Nodes.JsonNode? acc = null;
        foreach (var (s, e) in values)
        {
            var node = System.Text.Json.Nodes.JsonNode.Parse(body[s..e]);
            acc = MergeInto(acc, node);
        }
        var buffer = new System.Buffers.ArrayBufferWriter<byte>();
        using (var w = new Utf8JsonWriter(buffer)) (acc ?? new System.Text.Json.Nodes.JsonObject()).WriteTo(w);
        return buffer.WrittenSpan.ToArray();
    }

    private static System.Text.Json.Nodes.JsonNode? MergeInto(System.Text.Json.Nodes.JsonNode? acc, System.Text.Json.Nodes.JsonNode? next)
    {
        if (next is System.Text.Json.Nodes.JsonObject no)
        {
            var target = acc as System.Text.Json.Nodes.JsonObject ?? new System.Text.Json.Nodes.JsonObject();
            foreach (var (k, v) in no.ToList())
            {
                if (v is null) continue; // null: nothing changes in Go
                no.Remove(k);
                target[k] = MergeInto(target[k], v);
            }
            return target;
        }
        if (next is System.Text.Json.Nodes.JsonArray na)
        {
            for (int i = 0; i < na.Count; i++)
            {
                if (na[i] is System.Text.Json.Nodes.JsonObject) na[i] = MergeInto(null, na[i]?.DeepClone());
            }
            return na;
        }
        return next;
    }

    /// <summary>Go's quoteChar (scanner.go): the offending byte as Go prints it in a syntax error.</summary>
    private static string QuoteChar(byte c)
    {
        if (c == '\'') return @"'\''";
        if (c == '"') return "'\"'";
        string q = GoQuote(((char)c).ToString());
        return "'" + q[1..^1] + "'";
    }

    /// <summary>Go's strconv.Quote for the printable-ASCII-and-Latin-1 text error messages carry.</summary>
    public static string GoQuote(string s)
    {
        var sb = new StringBuilder(s.Length + 2).Append('"');
        foreach (var r in s.EnumerateRunes())
        {
            switch (r.Value)
            {
                case '"': sb.Append("\\\""); break;
                case '\\': sb.Append("\\\\"); break;
                case '\a': sb.Append("\\a"); break;
                case '\b': sb.Append("\\b"); break;
                case '\f': sb.Append("\\f"); break;
                case '\n': sb.Append("\\n"); break;
                case '\r': sb.Append("\\r"); break;
                case '\t': sb.Append("\\t"); break;
                case '\v': sb.Append("\\v"); break;
                default:
                    if (r.Value < 0x20 || r.Value == 0x7f) sb.Append("\\x").Append(r.Value.ToString("x2", CultureInfo.InvariantCulture));
                    else if (r.Value is >= 0x80 and < 0xa0) sb.Append("\\u").Append(r.Value.ToString("x4", CultureInfo.InvariantCulture));
                    else sb.Append(r.ToString());
                    break;
            }
        }
        return sb.Append('"').ToString();
    }

    /// <summary>
    /// encoding/json's scanner over one value: null when it is well formed (end = the index after it), otherwise
    /// Go's message ("invalid character ... at offset N" or "unexpected EOF" when the input ends inside it).
    /// </summary>
    private ref struct Scanner(ReadOnlySpan<byte> b, int pos, bool unmarshal = false)
    {
        private readonly ReadOnlySpan<byte> _b = b;
        private readonly bool _unmarshal = unmarshal;
        private int _i = pos;
        private string? _err;

        public string? ScanValue(out int end)
        {
            Value();
            end = _i;
            return _err;
        }

        private bool Fail(string context)
        {
            // json.Unmarshal's checkValid: no offset in the text (unmarshalRequest adds it), its own EOF text.
            if (_unmarshal) _err ??= _i >= _b.Length ? "unexpected end of JSON input" : $"invalid character {QuoteChar(_b[_i])} {context}";
            else _err ??= _i >= _b.Length ? "unexpected EOF" : $"invalid character {QuoteChar(_b[_i])} {context} at offset {_i + 1}";
            return false;
        }

        private void Space()
        {
            while (_i < _b.Length && _b[_i] is (byte)' ' or (byte)'\t' or (byte)'\n' or (byte)'\r') _i++;
        }

        private bool Value()
        {
            Space();
            if (_i >= _b.Length) return Fail("");
            switch (_b[_i])
            {
                case (byte)'{': return Object();
                case (byte)'[': return Array();
                case (byte)'"': return String();
                case (byte)'t': return Literal("true");
                case (byte)'f': return Literal("false");
                case (byte)'n': return Literal("null");
                case (byte)'-':
                case >= (byte)'0' and <= (byte)'9':
                    return Number();
                default: return Fail("looking for beginning of value");
            }
        }

        private bool Object()
        {
            _i++;
            Space();
            if (_i < _b.Length && _b[_i] == '}')
            {
                _i++;
                return true;
            }
            while (true)
            {
                Space();
                if (_i >= _b.Length || _b[_i] != '"') return Fail("looking for beginning of object key string");
                if (!String()) return false;
                Space();
                if (_i >= _b.Length || _b[_i] != ':') return Fail("after object key");
                _i++;
                if (!Value()) return false;
                Space();
                if (_i >= _b.Length) return Fail("");
                if (_b[_i] == ',')
                {
                    _i++;
                    continue;
                }
                if (_b[_i] == '}')
                {
                    _i++;
                    return true;
                }
                return Fail("after object key:value pair");
            }
        }

        private bool Array()
        {
            _i++;
            Space();
            if (_i < _b.Length && _b[_i] == ']')
            {
                _i++;
                return true;
            }
            while (true)
            {
                if (!Value()) return false;
                Space();
                if (_i >= _b.Length) return Fail("");
                if (_b[_i] == ',')
                {
                    _i++;
                    continue;
                }
                if (_b[_i] == ']')
                {
                    _i++;
                    return true;
                }
                return Fail("after array element");
            }
        }

        private bool String()
        {
            _i++;
            while (_i < _b.Length)
            {
                byte c = _b[_i];
                if (c == '"')
                {
                    _i++;
                    return true;
                }
                if (c < 0x20) return Fail("in string literal");
                if (c == '\\')
                {
                    _i++;
                    if (_i >= _b.Length) return Fail("");
                    c = _b[_i];
                    if (c == 'u')
                    {
                        for (int k = 0; k < 4; k++)
                        {
                            _i++;
                            if (_i >= _b.Length) return Fail("");
                            if (!Uri.IsHexDigit((char)_b[_i])) return Fail("in \\u hexadecimal character escape");
                        }
                    }
                    else if (c is not ((byte)'"' or (byte)'\\' or (byte)'/' or (byte)'b' or (byte)'f' or (byte)'n' or (byte)'r' or (byte)'t'))
                    {
                        return Fail("in string escape code");
                    }
                }
                _i++;
            }
            return Fail("");
        }

        private bool Literal(string word)
        {
            for (int k = 0; k < word.Length; k++, _i++)
            {
                if (_i >= _b.Length) return Fail("");
                if (_b[_i] != word[k]) return Fail($"in literal {word} (expecting {QuoteChar((byte)word[k])})");
            }
            return true;
        }

        private bool Number()
        {
            if (_b[_i] == '-')
            {
                _i++;
                if (_i >= _b.Length) return Fail("");
                if (_b[_i] is < (byte)'0' or > (byte)'9') return Fail("in numeric literal");
            }
            if (_b[_i] == '0') _i++;
            else while (_i < _b.Length && _b[_i] is >= (byte)'0' and <= (byte)'9') _i++;
            if (_i < _b.Length && _b[_i] == '.')
            {
                _i++;
                if (_i >= _b.Length) return Fail("");
                if (_b[_i] is < (byte)'0' or > (byte)'9') return Fail("after decimal point in numeric literal");
                while (_i < _b.Length && _b[_i] is >= (byte)'0' and <= (byte)'9') _i++;
            }
            if (_i < _b.Length && _b[_i] is (byte)'e' or (byte)'E')
            {
                _i++;
                if (_i < _b.Length && _b[_i] is (byte)'+' or (byte)'-') _i++;
                if (_i >= _b.Length) return Fail("");
                if (_b[_i] is < (byte)'0' or > (byte)'9') return Fail("in exponent of numeric literal");
                while (_i < _b.Length && _b[_i] is >= (byte)'0' and <= (byte)'9') _i++;
            }
            return true;
        }
    }

    /// <summary>decode.go over a well-formed value: the first saved error, or a type's own UnmarshalJSON error at once.</summary>
    private sealed class Walker
    {
        private string? _saved;
        public bool SawNullMember { get; private set; }

        /// <summary>json.Unmarshal without DisallowUnknownFields: fields Go does not know are skipped.</summary>
        public bool IgnoreUnknown { get; init; }

        /// <summary>Returns the error to answer (hard errors immediately, else the first saved one at the end).</summary>
        public string? Value(JsonElement v, GoType t, string? structName, List<string> fields)
        {
            string? hard = Walk(v, t, structName, fields);
            return hard ?? _saved;
        }

        private void Save(string err) => _saved ??= err;

        private void TypeError(string value, GoType t, string? structName, List<string> fields) =>
            Save(structName is null
                ? $"json: cannot unmarshal {value} into Go value of type {t.Name}"
                : $"json: cannot unmarshal {value} into Go struct field {structName}.{string.Join('.', fields)} of type {t.Name}");

        private static string KindName(JsonValueKind k) => k switch
        {
            JsonValueKind.String => "string",
            JsonValueKind.Number => "number",
            JsonValueKind.True or JsonValueKind.False => "bool",
            JsonValueKind.Array => "array",
            _ => "object",
        };

        private string? Walk(JsonElement v, GoType t, string? structName, List<string> fields)
        {
            if (t.Custom is { } custom) return custom(v.GetRawText());
            if (v.ValueKind == JsonValueKind.Null || t.Kind == GoKind.Any) return null;
            switch (t.Kind)
            {
                case GoKind.String:
                    if (v.ValueKind != JsonValueKind.String) TypeError(KindName(v.ValueKind), t, structName, fields);
                    return null;
                case GoKind.Bool:
                    if (v.ValueKind is not (JsonValueKind.True or JsonValueKind.False)) TypeError(KindName(v.ValueKind), t, structName, fields);
                    return null;
                case GoKind.Int or GoKind.Uint or GoKind.Float:
                    if (v.ValueKind != JsonValueKind.Number) TypeError(KindName(v.ValueKind), t, structName, fields);
                    else if (!NumberFits(v.GetRawText(), t)) TypeError("number " + v.GetRawText(), t, structName, fields);
                    return null;
                case GoKind.Slice:
                    if (v.ValueKind != JsonValueKind.Array)
                    {
                        TypeError(KindName(v.ValueKind), t, structName, fields);
                        return null;
                    }
                    foreach (var e in v.EnumerateArray())
                    {
                        if (Walk(e, t.Elem!, structName, fields) is { } hard) return hard;
                    }
                    return null;
                case GoKind.Map:
                    if (v.ValueKind != JsonValueKind.Object)
                    {
                        TypeError(KindName(v.ValueKind), t, structName, fields);
                        return null;
                    }
                    foreach (var p in v.EnumerateObject())
                    {
                        if (Walk(p.Value, t.Elem!, structName, fields) is { } hard) return hard;
                    }
                    return null;
                default:
                    if (v.ValueKind != JsonValueKind.Object)
                    {
                        TypeError(KindName(v.ValueKind), t, structName, fields);
                        return null;
                    }
                    var s = t.Struct!;
                    foreach (var p in v.EnumerateObject())
                    {
                        var f = s.Find(p.Name);
                        if (f is null)
                        {
                            if (!IgnoreUnknown) Save($"json: unknown field {GoQuote(p.Name)}");
                            continue;
                        }
                        if (p.Value.ValueKind == JsonValueKind.Null) SawNullMember = true;
                        var path = new List<string>(fields.Count + 2);
                        path.AddRange(fields);
                        path.AddRange(f.Path);
                        if (Walk(p.Value, f.Type, s.Name, path) is { } hard) return hard;
                    }
                    return null;
            }
        }

        /// <summary>strconv.ParseInt / ParseUint with the field's bit size (decode.go literalStore); floats always fit.</summary>
        private static bool NumberFits(string raw, GoType t)
        {
            if (t.Kind == GoKind.Float) return true;
            if (t.Kind == GoKind.Uint)
            {
                if (!ulong.TryParse(raw, NumberStyles.None, CultureInfo.InvariantCulture, out ulong u)) return false;
                return t.Bits == 64 || u < 1UL << t.Bits;
            }
            if (!long.TryParse(raw, NumberStyles.AllowLeadingSign, CultureInfo.InvariantCulture, out long n)) return false;
            return t.Bits == 64 || (n >= -(1L << (t.Bits - 1)) && n < 1L << (t.Bits - 1));
        }
    }
}

internal enum GoKind { String, Bool, Int, Uint, Float, Slice, Map, Struct, Any }

/// <summary>A Go type as encoding/json sees it: its kind, its reflect name (for messages) and, for the types with
/// their own UnmarshalJSON, that method's verdict on the raw JSON text.</summary>
internal sealed class GoType
{
    public required GoKind Kind { get; init; }
    public required string Name { get; init; }
    public int Bits { get; init; } = 64;
    public GoType? Elem { get; init; }
    public GoStruct? Struct { get; set; }
    public Func<string, string?>? Custom { get; init; }
}

/// <summary>A Go struct: its name (decode.go errorContext.Struct) and its JSON fields, embedded ones promoted.</summary>
internal sealed class GoStruct(string name, GoField[] fields)
{
    public string Name { get; } = name;
    public GoField[] Fields { get; } = fields;

    /// <summary>Exact name first, then Go's case-insensitive match (decode.go object).</summary>
    public GoField? Find(string key)
    {
        foreach (var f in Fields) if (f.JsonName == key) return f;
        foreach (var f in Fields) if (string.Equals(f.JsonName, key, StringComparison.OrdinalIgnoreCase)) return f;
        return null;
    }
}

/// <summary>A field: its JSON name, the names Go's error shows for it (an embedded struct's name first), its type.</summary>
internal sealed record GoField(string JsonName, string[] Path, GoType Type);
