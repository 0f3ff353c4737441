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

    /// <summary>The header block for a PUBLISH: cached when there are no user properties.</summary>
    public static byte[] ForPublish(int qos, IReadOnlyList<KeyValuePair<string, string>>? userProperties)
    {
        if (userProperties is null || userProperties.Count == 0) return s_qosOnly[qos];
        var sb = new StringBuilder("NATS/1.0\r\nNmqtt-Pub:").Append((char)('0' + qos)).Append("\r\n");
        foreach (var (name, value) in userProperties)
        {
            // A header name cannot hold ':' or whitespace, nor a value CR/LF: such properties are not carried.
            if (name.Length == 0 || name.AsSpan().IndexOfAny(":\r\n \t") >= 0 || value.AsSpan().IndexOfAny('\r', '\n') >= 0) continue;
            sb.Append(name).Append(':').Append(value).Append("\r\n");
        }
        return Encoding.UTF8.GetBytes(sb.Append("\r\n").ToString());
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
