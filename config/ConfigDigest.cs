using System.Globalization;
using System.Security.Cryptography;
using System.Text;

namespace NatsBroker.Configuration;

/// <summary>
/// nats-server's configuration digest (conf/parse.go configDigest, /varz <c>config_digest</c>, the "Using
/// configuration file" log line): <c>"sha256:" + hex(sha256(json.NewEncoder(w).Encode(tree)))</c>, where the tree is
/// the parsed document (includes and variables resolved). The JSON is written here as Go's encoding/json writes it,
/// byte for byte, because the digest is compared across servers and tools:
/// <list type="bullet">
/// <item>map keys sorted by their UTF-8 bytes; no spaces; the Encoder's trailing newline;</item>
/// <item>strings with <c>\"</c>, <c>\\</c>, <c>\b \f \n \r \t</c>, other control characters as <c>\u00XX</c>, and
/// (HTML-safe escaping, on by default) <c>&lt; &gt; &amp;</c> and U+2028/U+2029 as <c>\uXXXX</c>;</item>
/// <item>int64 in decimal; float64 as strconv 'f' with the shortest digits for 1e-6 ≤ |f| &lt; 1e21, else 'e' with a
/// two-digit minimum exponent trimmed (<c>1e-07</c> becomes <c>1e-7</c>);</item>
/// <item>times as RFC 3339 with nanoseconds trimmed (time.Time.MarshalJSON).</item>
/// </list>
/// </summary>
public static class ConfigDigest
{
    public static string Of(ConfigTree tree)
    {
        var json = new StringBuilder();
        WriteMap(json, tree.Root);
        json.Append('\n');
        var hash = SHA256.HashData(Encoding.UTF8.GetBytes(json.ToString()));
        return "sha256:" + Convert.ToHexStringLower(hash);
    }

    /// <summary>The JSON the digest is taken over (for tests and diagnostics).</summary>
    public static string Json(ConfigTree tree)
    {
        var json = new StringBuilder();
        WriteMap(json, tree.Root);
        return json.Append('\n').ToString();
    }

    private static void WriteMap(StringBuilder json, ConfigMap map)
    {
        json.Append('{');
        bool first = true;
        foreach (var entry in map.OrderBy(e => Encoding.UTF8.GetBytes(e.Key), ByteOrder.Instance))
        {
            if (!first) json.Append(',');
            first = false;
            WriteString(json, entry.Key);
            json.Append(':');
            WriteValue(json, entry.Value);
        }
        json.Append('}');
    }

    private static void WriteValue(StringBuilder json, ConfigValue value)
    {
        switch (value.Kind)
        {
            case ConfigValueKind.String: WriteString(json, value.AsString()); break;
            case ConfigValueKind.Integer: json.Append(value.AsInteger().ToString(CultureInfo.InvariantCulture)); break;
            case ConfigValueKind.Float: json.Append(GoFloat(value.AsFloat())); break;
            case ConfigValueKind.Bool: json.Append(value.AsBool() ? "true" : "false"); break;
            case ConfigValueKind.DateTime: WriteString(json, GoTime(value.AsDateTime())); break;
            case ConfigValueKind.Map: WriteMap(json, value.AsMap()); break;
            case ConfigValueKind.Array:
                json.Append('[');
                var items = value.AsArray();
                for (int i = 0; i < items.Count; i++)
                {
                    if (i > 0) json.Append(',');
                    WriteValue(json, items[i]);
                }
                json.Append(']');
                break;
            default: throw new InvalidOperationException($"unexpected config value kind {value.Kind}");
        }
    }

    /// <summary>encoding/json appendString with escapeHTML: what must be escaped, and how.</summary>
    private static void WriteString(StringBuilder json, string s)
    {
        json.Append('"');
        foreach (var c in s)
        {
            switch (c)
            {
                case '"': json.Append("\\\""); break;
                case '\\': json.Append("\\\\"); break;
                case '\b': json.Append("\\b"); break;
                case '\f': json.Append("\\f"); break;
                case '\n': json.Append("\\n"); break;
                case '\r': json.Append("\\r"); break;
                case '\t': json.Append("\\t"); break;
                case '<' or '>' or '&' or '\u2028' or '\u2029' or < ' ':
                    json.Append("\\u").Append(((int)c).ToString("x4", CultureInfo.InvariantCulture));
                    break;
                default: json.Append(c); break;
            }
        }
        json.Append('"');
    }

    /// <summary>
    /// encoding/json floatEncoder for float64: strconv.AppendFloat(f, 'f' or 'e', -1, 64), the shortest digits that
    /// read back as the same double ('e' below 1e-6 and from 1e21), then "e-07" cleaned to "e-7".
    /// </summary>
    private static string GoFloat(double f)
    {
        if (double.IsNaN(f) || double.IsInfinity(f)) throw new InvalidOperationException("json: unsupported value: " + f.ToString(CultureInfo.InvariantCulture));
        if (f == 0) return double.IsNegative(f) ? "-0" : "0";
        // .NET's "R" is the shortest round-trip form too; take its digits and decimal exponent.
        var r = f.ToString("R", CultureInfo.InvariantCulture);
        bool negative = r[0] == '-';
        if (negative) r = r[1..];
        var parts = r.Split('E');
        int exp10 = parts.Length > 1 ? int.Parse(parts[1], CultureInfo.InvariantCulture) : 0;
        var mantissa = parts[0].Split('.');
        var digits = mantissa[0] + (mantissa.Length > 1 ? mantissa[1] : "");
        int e = mantissa[0].Length - 1 + exp10; // value = d1.d2d3... x 10^e
        while (digits.Length > 1 && digits[0] == '0') { digits = digits[1..]; e--; }
        digits = digits.TrimEnd('0');
        if (digits.Length == 0) digits = "0";
        string text;
        double abs = Math.Abs(f);
        if (abs < 1e-6 || abs >= 1e21)
        {
            text = digits[..1] + (digits.Length > 1 ? "." + digits[1..] : "") + "e" + (e < 0 ? "-" : "+")
                + Math.Abs(e).ToString(CultureInfo.InvariantCulture);
        }
        else if (e >= digits.Length - 1)
        {
            text = digits + new string('0', e - (digits.Length - 1));
        }
        else if (e >= 0)
        {
            text = digits[..(e + 1)] + "." + digits[(e + 1)..];
        }
        else
        {
            text = "0." + new string('0', -e - 1) + digits;
        }
        return negative ? "-" + text : text;
    }

    /// <summary>time.Time.MarshalJSON: RFC 3339 with a trimmed fraction; the offset as parsed ("Z" for UTC).</summary>
    private static string GoTime(DateTimeOffset t)
    {
        var text = t.ToString("yyyy-MM-dd'T'HH:mm:ss", CultureInfo.InvariantCulture);
        long fraction = t.Ticks % TimeSpan.TicksPerSecond;
        if (fraction != 0) text += "." + (fraction * 100).ToString("000000000", CultureInfo.InvariantCulture).TrimEnd('0');
        return t.Offset == TimeSpan.Zero ? text + "Z" : text + t.ToString("zzz", CultureInfo.InvariantCulture);
    }

    private sealed class ByteOrder : IComparer<byte[]>
    {
        public static readonly ByteOrder Instance = new();
        public int Compare(byte[]? x, byte[]? y) => x.AsSpan().SequenceCompareTo(y);
    }
}
