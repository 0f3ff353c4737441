using System.Globalization;
using System.Text;

namespace NatsBroker.Accounts;

/// <summary>
/// The tracing headers that decide "headers" latency sampling (server/accounts.go shouldSample): Jaeger
/// <c>Uber-Trace-Id</c>, Zipkin <c>X-B3-Sampled</c> / <c>X-B3-TraceId</c> / <c>B3</c>, W3C <c>traceparent</c>, checked in
/// that order. Keys match case-insensitively (nats-server reads the header block with textproto). The scan does not
/// allocate; the headers that triggered a measurement are copied only when the request is sampled, keyed by their
/// canonical MIME names as the metric's <c>header</c> object shows them.
/// </summary>
internal static class TraceHeaders
{
    private const string Uber = "Uber-Trace-Id";
    private const string UberCtxPrefix = "Uberctx-";
    private const string TraceParent = "Traceparent";
    private const string TraceState = "Tracestate";
    private const string B3 = "B3";
    private const string B3Sampled = "X-B3-Sampled";
    private const string B3TraceId = "X-B3-Traceid";
    private const string B3ParentSpanId = "X-B3-Parentspanid";
    private const string B3SpanId = "X-B3-Spanid";

    private enum Kind { None, Uber, B3Multi, B3Single, TraceContext }

    /// <summary>
    /// Whether the header block (<c>NATS/1.0...\r\n\r\n</c>) asks for the request to be measured; when it does,
    /// <paramref name="triggering"/> holds the headers to report (sorted by key, as Go marshals its map).
    /// </summary>
    public static bool ShouldSample(ReadOnlySpan<byte> block, out SortedDictionary<string, List<string>>? triggering)
    {
        triggering = null;
        var kind = Decide(block);
        if (kind == Kind.None) return false;
        triggering = new SortedDictionary<string, List<string>>(StringComparer.Ordinal);
        foreach (var (key, value) in Lines(block))
        {
            string? canonical = kind switch
            {
                Kind.Uber when Is(key, Uber) => Uber,
                Kind.Uber when StartsWith(key, UberCtxPrefix) => Canonical(key),
                Kind.B3Multi when Is(key, B3Sampled) => B3Sampled,
                Kind.B3Multi when Is(key, B3TraceId) => B3TraceId,
                Kind.B3Multi when Is(key, B3ParentSpanId) => B3ParentSpanId,
                Kind.B3Multi when Is(key, B3SpanId) => B3SpanId,
                Kind.B3Single when Is(key, B3) => B3,
                Kind.TraceContext when Is(key, TraceParent) => TraceParent,
                Kind.TraceContext when Is(key, TraceState) => TraceState,
                _ => null,
            };
            if (canonical is null) continue;
            if (!triggering.TryGetValue(canonical, out var values)) triggering[canonical] = values = [];
            values.Add(Encoding.UTF8.GetString(value));
        }
        return true;
    }

    /// <summary>shouldSample's decision on the first value of each header, without allocating.</summary>
    private static Kind Decide(ReadOnlySpan<byte> block)
    {
        ReadOnlySpan<byte> uber = default, sampled = default, b3 = default, traceParent = default;
        bool hasUber = false, hasSampled = false, hasTraceId = false, hasB3 = false, hasTraceParent = false;
        foreach (var (key, value) in Lines(block))
        {
            if (!hasUber && Is(key, Uber)) { hasUber = true; uber = value; }
            else if (!hasSampled && Is(key, B3Sampled)) { hasSampled = true; sampled = value; }
            else if (Is(key, B3TraceId)) hasTraceId = true;
            else if (!hasB3 && Is(key, B3)) { hasB3 = true; b3 = value; }
            else if (!hasTraceParent && Is(key, TraceParent)) { hasTraceParent = true; traceParent = value; }
        }
        if (hasUber && uber.Length > 0)
        {
            // trace-id:span-id:parent-id:flags, sampled when the flags' low bit is set (1 or 2 hex digits).
            if (Split(uber, (byte)':', 4, out var flags) && flags.Length is > 0 and <= 2
                && byte.TryParse(flags, NumberStyles.AllowHexSpecifier, CultureInfo.InvariantCulture, out byte f) && (f & 1) == 1)
                return Kind.Uber;
            return Kind.None;
        }
        if (hasSampled && sampled.SequenceEqual("1"u8)) return Kind.B3Multi;
        if (hasSampled && sampled.SequenceEqual("0"u8)) return Kind.None;
        if (hasTraceId) return Kind.B3Multi; // sampling left to the recipient
        if (hasB3 && b3.Length > 0)
        {
            // {trace}-{span}-{sampled}-{parent} or a lone "0": denied when the sampled token is 0.
            if (b3.SequenceEqual("0"u8)) return Kind.None;
            if (Token(b3, (byte)'-', 2, out var s) && s.SequenceEqual("0"u8)) return Kind.None;
            return Kind.B3Single;
        }
        if (hasTraceParent && traceParent.Length > 0)
        {
            // version-traceid-parentid-flags; sampled when the flags' low bit is set.
            if (Split(traceParent, (byte)'-', 4, out var flags) && flags.Length == 2
                && byte.TryParse(flags, NumberStyles.AllowHexSpecifier, CultureInfo.InvariantCulture, out byte f) && f <= sbyte.MaxValue && (f & 1) == 1)
                return Kind.TraceContext;
        }
        return Kind.None;
    }

    /// <summary>The last of exactly <paramref name="count"/> tokens (Go: len(strings.Split(v, sep)) == count).</summary>
    private static bool Split(ReadOnlySpan<byte> value, byte sep, int count, out ReadOnlySpan<byte> last)
    {
        last = default;
        if (value.Count(sep) != count - 1) return false;
        last = value[(value.LastIndexOf(sep) + 1)..];
        return true;
    }

    /// <summary>The token at <paramref name="index"/> (0-based), when there are more than <paramref name="index"/> tokens.</summary>
    private static bool Token(ReadOnlySpan<byte> value, byte sep, int index, out ReadOnlySpan<byte> token)
    {
        token = default;
        for (int i = 0; i < index; i++)
        {
            int at = value.IndexOf(sep);
            if (at < 0) return false;
            value = value[(at + 1)..];
        }
        int end = value.IndexOf(sep);
        token = end < 0 ? value : value[..end];
        return true;
    }

    private static bool Is(ReadOnlySpan<byte> key, string name)
    {
        if (key.Length != name.Length) return false;
        for (int i = 0; i < key.Length; i++)
            if (char.ToLowerInvariant((char)key[i]) != char.ToLowerInvariant(name[i])) return false;
        return true;
    }

    private static bool StartsWith(ReadOnlySpan<byte> key, string prefix) => key.Length >= prefix.Length && Is(key[..prefix.Length], prefix);

    /// <summary>textproto.CanonicalMIMEHeaderKey: upper case first letter and each letter after '-', the rest lower.</summary>
    private static string Canonical(ReadOnlySpan<byte> key)
    {
        var chars = new char[key.Length];
        bool upper = true;
        for (int i = 0; i < key.Length; i++)
        {
            char c = (char)key[i];
            chars[i] = upper ? char.ToUpperInvariant(c) : char.ToLowerInvariant(c);
            upper = c == '-';
        }
        return new string(chars);
    }

    private static LineEnumerator Lines(ReadOnlySpan<byte> block) => new(block);

    /// <summary>The <c>Key: Value</c> lines after the status line, values trimmed.</summary>
    private ref struct LineEnumerator(ReadOnlySpan<byte> block)
    {
        private ReadOnlySpan<byte> _rest = block.IndexOf("\r\n"u8) is int first and >= 0 ? block[(first + 2)..] : default;

        public HeaderLine Current { get; private set; }

        public readonly LineEnumerator GetEnumerator() => this;

        public bool MoveNext()
        {
            while (!_rest.IsEmpty)
            {
                int end = _rest.IndexOf("\r\n"u8);
                var line = end < 0 ? _rest : _rest[..end];
                _rest = end < 0 ? default : _rest[(end + 2)..];
                int colon = line.IndexOf((byte)':');
                if (colon <= 0) continue;
                Current = new HeaderLine(line[..colon].Trim((byte)' '), line[(colon + 1)..].Trim(" \t"u8));
                return true;
            }
            return false;
        }
    }

    private readonly ref struct HeaderLine(ReadOnlySpan<byte> key, ReadOnlySpan<byte> value)
    {
        private readonly ReadOnlySpan<byte> _key = key;
        private readonly ReadOnlySpan<byte> _value = value;

        public void Deconstruct(out ReadOnlySpan<byte> key, out ReadOnlySpan<byte> value)
        {
            key = _key;
            value = _value;
        }
    }
}
