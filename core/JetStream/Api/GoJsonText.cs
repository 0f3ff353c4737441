using System.Buffers;
using System.Text;

namespace NatsBroker.JetStream.Api;

/// <summary>
/// JSON text as Go's encoding/json writes it: System.Text.Json's default encoder escapes far more (', +, `,
/// every non-ASCII character) and in upper-case hex; Go escapes only control characters, &lt; &gt; &amp; and
/// U+2028/U+2029, as \u00xx in lower case (encode.go appendString), and writes the rest as UTF-8.
/// </summary>
internal static class GoJsonText
{
    public static byte[] FromDotNet(byte[] json)
    {
        int first = json.AsSpan().IndexOf("\\u"u8);
        if (first < 0) return json;
        var w = new ArrayBufferWriter<byte>(json.Length + 16);
        w.Write(json.AsSpan(0, first));
        int i = first;
        Span<byte> utf8 = stackalloc byte[4];
        while (i < json.Length)
        {
            byte b = json[i];
            if (b != '\\')
            {
                w.Write(json.AsSpan(i, 1));
                i++;
                continue;
            }
            if (i + 1 < json.Length && json[i + 1] != 'u')
            {
                w.Write(json.AsSpan(i, 2)); // \" \\ \n ... as they are
                i += 2;
                continue;
            }
            int cp = Hex(json, i + 2);
            i += 6;
            if (cp is >= 0xD800 and <= 0xDBFF && i + 5 < json.Length && json[i] == '\\' && json[i + 1] == 'u' && Hex(json, i + 2) is >= 0xDC00 and <= 0xDFFF and var low)
            {
                cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
                i += 6;
            }
            else if (cp is >= 0xD800 and <= 0xDFFF)
            {
                cp = 0xFFFD; // Go writes an invalid code point as the replacement character
            }
            if (cp == '"' || cp == '\\')
            {
                w.Write(cp == '"' ? "\\\""u8 : "\\\\"u8);
            }
            else if (cp < 0x20 || cp is '<' or '>' or '&' or 0x2028 or 0x2029)
            {
                w.Write(Encoding.ASCII.GetBytes("\\u" + cp.ToString("x4", System.Globalization.CultureInfo.InvariantCulture)));
            }
            else
            {
                int n = new Rune(cp).EncodeToUtf8(utf8);
                w.Write(utf8[..n]);
            }
        }
        return w.WrittenSpan.ToArray();
    }

    private static int Hex(byte[] s, int at)
    {
        int v = 0;
        for (int k = 0; k < 4; k++)
        {
            byte c = s[at + k];
            v = (v << 4) | (c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
        }
        return v;
    }
}
