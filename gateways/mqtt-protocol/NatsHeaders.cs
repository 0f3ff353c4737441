using System.Text;

namespace NatsBroker.MqttGateway;

/// <summary>
/// NATS header blocks as MQTT needs them (server/mqtt.go): every message an MQTT client publishes carries
/// <c>Nmqtt-Pub:&lt;qos&gt;</c>, which tells MQTT subscribers elsewhere the QoS it was published with; MQTT 5 user
/// properties travel as ordinary headers (ours: nats-server has no MQTT 5).
/// </summary>
internal static class NatsHeaders
{
    public const string Pub = "Nmqtt-Pub";
    private static readonly byte[][] s_qosOnly =
    [
        "NATS/1.0\r\nNmqtt-Pub:0\r\n\r\n"u8.ToArray(),
        "NATS/1.0\r\nNmqtt-Pub:1\r\n\r\n"u8.ToArray(),
        "NATS/1.0\r\nNmqtt-Pub:2\r\n\r\n"u8.ToArray(),
    ];

    /// <summary>MQTT 5 message properties carried in headers of ours (nats-server has no MQTT 5): content type,
    /// payload format indicator, correlation data (base64), so an MQTT 5 subscriber gets them back.</summary>
    public const string ContentType = "Nmqtt-CT", PayloadFormat = "Nmqtt-PFI", CorrelationData = "Nmqtt-CD";

    /// <summary>
    /// Ours, for MQTT 5 delivery: <c>Nmqtt-Exp</c> the message's expiry time (Unix ms, from its Message Expiry
    /// Interval, section 3.3.2.3.3), <c>Nmqtt-Ret</c> "1" when it was published with RETAIN (for Retain As
    /// Published, section 3.8.3.1), <c>Nmqtt-Src</c> the publishing client ID's hash (for No Local).
    /// </summary>
    public const string Expires = "Nmqtt-Exp", Retained = "Nmqtt-Ret", Source = "Nmqtt-Src";

    /// <summary>The header block for a PUBLISH: cached when there are no user properties and no MQTT 5 message properties.</summary>
    public static byte[] ForPublish(int qos, IReadOnlyList<KeyValuePair<string, string>>? userProperties,
        string? contentType = null, bool utf8Payload = false, ReadOnlySpan<byte> correlationData = default,
        long expiresAt = 0, bool retain = false, string? source = null)
    {
        // MQTT has QoS 0, 1 and 2 only; CONNECT and PUBLISH with 3 are refused before this (PacketChecks).
        ArgumentOutOfRangeException.ThrowIfGreaterThan((uint)qos, 2u, nameof(qos));
        bool props = !string.IsNullOrEmpty(contentType) || utf8Payload || !correlationData.IsEmpty || expiresAt > 0 || retain || source is not null;
        if ((userProperties is null || userProperties.Count == 0) && !props) return s_qosOnly[qos];
        var sb = new StringBuilder("NATS/1.0\r\nNmqtt-Pub:").Append((char)('0' + qos)).Append("\r\n");
        if (!string.IsNullOrEmpty(contentType) && contentType.AsSpan().IndexOfAny('\r', '\n') < 0)
            sb.Append(ContentType).Append(':').Append(contentType).Append("\r\n");
        if (utf8Payload) sb.Append(PayloadFormat).Append(":1\r\n");
        if (!correlationData.IsEmpty) sb.Append(CorrelationData).Append(':').Append(Convert.ToBase64String(correlationData)).Append("\r\n");
        if (expiresAt > 0) sb.Append(Expires).Append(':').Append(expiresAt.ToString(System.Globalization.CultureInfo.InvariantCulture)).Append("\r\n");
        if (retain) sb.Append(Retained).Append(":1\r\n");
        if (source is not null) sb.Append(Source).Append(':').Append(source).Append("\r\n");
        AppendUserProperties(sb, userProperties);
        return Encoding.UTF8.GetBytes(sb.Append("\r\n").ToString());
    }

    /// <summary>The raw value of a header given as <c>"\r\nName:"</c> (first occurrence, trimmed), or empty.</summary>
    public static ReadOnlySpan<byte> Value(ReadOnlySpan<byte> headers, ReadOnlySpan<byte> crlfNameColon)
    {
        if (headers.IsEmpty) return default;
        int at = headers.IndexOf(crlfNameColon);
        if (at < 0) return default;
        var rest = headers[(at + crlfNameColon.Length)..];
        int eol = rest.IndexOf("\r\n"u8);
        return eol < 0 ? default : rest[..eol].Trim((byte)' ');
    }

    /// <summary>The expiry time in <c>Nmqtt-Exp</c> (Unix ms), or 0.</summary>
    public static long ExpiresAt(ReadOnlySpan<byte> headers) =>
        System.Buffers.Text.Utf8Parser.TryParse(Value(headers, "\r\nNmqtt-Exp:"u8), out long at, out _) ? at : 0;

    /// <summary>Whether the message was published with RETAIN (<c>Nmqtt-Ret</c>).</summary>
    public static bool WasRetained(ReadOnlySpan<byte> headers) => Value(headers, "\r\nNmqtt-Ret:"u8).SequenceEqual("1"u8);

    /// <summary>The value of header <paramref name="name"/> (first occurrence), or null.</summary>
    public static string? Get(ReadOnlySpan<byte> headers, string name)
    {
        if (headers.IsEmpty) return null;
        var key = Encoding.ASCII.GetBytes("\r\n" + name + ":");
        int at = headers.IndexOf(key);
        if (at < 0) return null;
        var rest = headers[(at + key.Length)..];
        int eol = rest.IndexOf("\r\n"u8);
        return eol < 0 ? null : Encoding.UTF8.GetString(rest[..eol]).Trim();
    }

    /// <summary>Whether the headers carry MQTT 5 message properties of ours (see <see cref="ContentType"/>).</summary>
    public static bool HasMessageProperties(ReadOnlySpan<byte> headers) =>
        !headers.IsEmpty && (headers.IndexOf("\r\nNmqtt-CT:"u8) >= 0 || headers.IndexOf("\r\nNmqtt-PFI:"u8) >= 0 || headers.IndexOf("\r\nNmqtt-CD:"u8) >= 0
            || headers.IndexOf("\r\nNmqtt-Exp:"u8) >= 0);

    /// <summary>MQTT 5 user properties as header lines (also kept with retained messages).</summary>
    public static void AppendUserProperties(StringBuilder sb, IEnumerable<KeyValuePair<string, string>>? userProperties)
    {
        if (userProperties is null) return;
        foreach (var (name, value) in userProperties)
        {
            // A header name cannot hold ':' or whitespace, nor a value CR/LF: such properties are not carried.
            if (name.Length == 0 || name.AsSpan().IndexOfAny(":\r\n \t") >= 0 || value.AsSpan().IndexOfAny('\r', '\n') >= 0) continue;
            sb.Append(name).Append(':').Append(value).Append("\r\n");
        }
    }

    /// <summary>The QoS in <c>Nmqtt-Pub</c> (its first byte), or 0 when absent (a NATS publisher).</summary>
    public static byte PublishedQoS(ReadOnlySpan<byte> headers)
    {
        if (headers.IsEmpty) return 0;
        int at = headers.IndexOf("\r\nNmqtt-Pub:"u8);
        if (at < 0 || at + 12 >= headers.Length) return 0;
        byte q = (byte)(headers[at + 12] - '0');
        return q <= 2 ? q : (byte)0;
    }

    /// <summary>
    /// The headers an MQTT 5 subscriber gets as user properties: every header line except the status line and
    /// nats-server's own <c>Nmqtt-*</c> ones. Null when there are none (the common case: no allocation).
    /// </summary>
    public static List<KeyValuePair<string, string>>? UserProperties(ReadOnlySpan<byte> headers)
    {
        if (headers.IsEmpty) return null;
        int eol = headers.IndexOf("\r\n"u8);
        if (eol < 0) return null;
        var rest = headers[(eol + 2)..];
        List<KeyValuePair<string, string>>? list = null;
        while (true)
        {
            eol = rest.IndexOf("\r\n"u8);
            if (eol <= 0) break;
            var line = rest[..eol];
            rest = rest[(eol + 2)..];
            int colon = line.IndexOf((byte)':');
            if (colon <= 0 || line.StartsWith("Nmqtt-"u8)) continue;
            list ??= [];
            list.Add(new(Encoding.UTF8.GetString(line[..colon]).Trim(), Encoding.UTF8.GetString(line[(colon + 1)..]).Trim()));
        }
        return list;
    }
}
