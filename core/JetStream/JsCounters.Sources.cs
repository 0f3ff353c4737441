using System.Buffers;
using System.Globalization;
using System.Numerics;
using System.Text;
using System.Text.Encodings.Web;
using System.Text.Json;
using NatsBroker.JetStream.Api;
using NatsBroker.JetStream.Batching;

namespace NatsBroker.JetStream;

/// <summary>
/// The body of Nats-Counter-Sources (ADR-49; nats-server stream.go CounterSources): per source stream, per origin
/// subject, that source's last total, e.g. <c>{"ORDERS-EU":{"orders.count":"12"}}</c>. Ordinal key order, as Go's
/// encoding/json writes a map.
/// </summary>
internal sealed class CounterSources : SortedDictionary<string, SortedDictionary<string, string>>
{
    public const string Header = "Nats-Counter-Sources";

    public CounterSources() : base(StringComparer.Ordinal) { }

    /// <summary>Go json.Unmarshal into map[string]map[string]string: false when the text is not that shape.</summary>
    public static bool TryParse(ReadOnlySpan<byte> json, out CounterSources? sources)
    {
        sources = null;
        try
        {
            using var doc = JsonDocument.Parse(json.ToArray());
            if (doc.RootElement.ValueKind == JsonValueKind.Null)
            {
                sources = [];
                return true;
            }
            if (doc.RootElement.ValueKind != JsonValueKind.Object) return false;
            var result = new CounterSources();
            foreach (var stream in doc.RootElement.EnumerateObject())
            {
                if (stream.Value.ValueKind == JsonValueKind.Null) continue;
                if (stream.Value.ValueKind != JsonValueKind.Object) return false;
                var subjects = new SortedDictionary<string, string>(StringComparer.Ordinal);
                foreach (var subject in stream.Value.EnumerateObject())
                {
                    if (subject.Value.ValueKind != JsonValueKind.String) return false;
                    subjects[subject.Name] = subject.Value.GetString()!;
                }
                result[stream.Name] = subjects;
            }
            sources = result;
            return true;
        }
        catch (JsonException)
        {
            return false;
        }
    }

    public string ToJson()
    {
        var buffer = new ArrayBufferWriter<byte>(128);
        using (var w = new Utf8JsonWriter(buffer, new JsonWriterOptions { Encoder = JavaScriptEncoder.UnsafeRelaxedJsonEscaping }))
        {
            w.WriteStartObject();
            foreach (var (stream, subjects) in this)
            {
                w.WriteStartObject(stream);
                foreach (var (subject, value) in subjects) w.WriteString(subject, value);
                w.WriteEndObject();
            }
            w.WriteEndObject();
        }
        return Encoding.UTF8.GetString(buffer.WrittenSpan);
    }
}

// Counter sources (ADR-49, nats-server 2.12 stream.go processJetStreamMsgWithBatch): a counter stream that sources
// counter streams keeps, per subject, the last total it saw from each source and origin subject
// (Nats-Counter-Sources on the stored message), and adds only the change since then: a sourced message's own total
// (its payload) minus the source's previous one. Its Nats-Incr is rewritten to that change.
internal sealed partial class JsStream
{
    private ArrayBufferWriter<byte>? _counterHdr; // worker thread only

    /// <summary>The "val" of a stored counter message (Go: json.Unmarshal into CounterValue, then big.Int SetString).</summary>
    private static bool TryReadCounterValue(ReadOnlySpan<byte> payload, out BigInteger value)
    {
        value = BigInteger.Zero;
        try
        {
            using var doc = JsonDocument.Parse(payload.ToArray());
            if (doc.RootElement.ValueKind != JsonValueKind.Object) return false;
            if (!doc.RootElement.TryGetProperty("val", out var v)) return true; // "" parses to nothing: 0
            if (v.ValueKind != JsonValueKind.String) return false;
            // nats-server ignores SetString's failure: an unreadable value counts as 0.
            if (!BigInteger.TryParse(v.GetString(), NumberStyles.AllowLeadingSign, CultureInfo.InvariantCulture, out value)) value = BigInteger.Zero;
            return true;
        }
        catch (JsonException)
        {
            return false;
        }
    }

    /// <summary>
    /// A sourced counter message: records its total under its source and origin subject and turns
    /// <paramref name="incr"/> into the change since that source's previous total.
    /// </summary>
    private static ApiError? CountSourced(ReadOnlySpan<byte> subject, ReadOnlySpan<byte> sourceHeader, ReadOnlySpan<byte> published, ref CounterSources? sources, ref BigInteger incr)
    {
        // Nats-Stream-Source: "<stream> <seq> <filter> <destination> <origin subject>".
        var fields = Encoding.UTF8.GetString(sourceHeader).Split(' ');
        string originStream = fields[0];
        string originSubject = fields.Length >= 5 ? fields[4] : Encoding.UTF8.GetString(subject);
        if (!TryReadCounterValue(published, out var sourced)) return BatchErrors.MessageCounterBroken;
        sources ??= [];
        if (!sources.TryGetValue(originStream, out var subjects)) sources[originStream] = subjects = new(StringComparer.Ordinal);
        subjects.TryGetValue(originSubject, out var previousText);
        subjects[originSubject] = sourced.ToString(CultureInfo.InvariantCulture);
        var previous = previousText is not null && BigInteger.TryParse(previousText, NumberStyles.AllowLeadingSign, CultureInfo.InvariantCulture, out var p) ? p : BigInteger.Zero;
        incr = sourced - previous;
        return null;
    }

    /// <summary>
    /// Writes into <see cref="_counterHdr"/> the headers with Nats-Counter-Sources set and, for a sourced message,
    /// Nats-Incr replaced (nats-server setHeader).
    /// </summary>
    private void CounterHeaders(ReadOnlySpan<byte> hdr, CounterSources sources, BigInteger? sourcedIncr)
    {
        var w = _counterHdr ??= new ArrayBufferWriter<byte>(256);
        if (sourcedIncr is { } change)
        {
            w.ResetWrittenCount();
            NatsHeaders.Set(hdr, IncrHeader, change.ToString(CultureInfo.InvariantCulture), w);
            hdr = w.WrittenSpan.ToArray();
        }
        w.ResetWrittenCount();
        NatsHeaders.Set(hdr, CounterSources.Header, sources.ToJson(), w);
    }
}
