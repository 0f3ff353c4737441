using System.Globalization;
using System.Text;

namespace NatsBroker.JetStream;

/// <summary>
/// Go's time.Duration.String for any nanosecond count ("500ms", "1.5s", "1m30s", "2h0m0s", "750µs", "0s"), as
/// nats-server prints durations with %v (consumer.go processNextMsgRequest "Exceeded MaxRequestExpires of %v").
/// </summary>
internal static class GoDurationFormat
{
    public static string Format(long nanos)
    {
        if (nanos == 0) return "0s";
        bool negative = nanos < 0;
        ulong u = negative ? (ulong)(-(nanos + 1)) + 1 : (ulong)nanos;
        string text;
        if (u < 1_000_000_000)
        {
            if (u < 1_000) text = u.ToString(CultureInfo.InvariantCulture) + "ns";
            else if (u < 1_000_000) text = Frac(u, 3) + "µs";
            else text = Frac(u, 6) + "ms";
        }
        else
        {
            var sb = new StringBuilder();
            string seconds = Frac(u, 9, out ulong whole);
            ulong s = whole % 60, m = whole / 60 % 60, h = whole / 3600;
            if (h > 0) sb.Append(h.ToString(CultureInfo.InvariantCulture)).Append('h');
            if (h > 0 || m > 0) sb.Append(m.ToString(CultureInfo.InvariantCulture)).Append('m');
            sb.Append(s.ToString(CultureInfo.InvariantCulture));
            int dot = seconds.IndexOf('.', StringComparison.Ordinal);
            if (dot >= 0) sb.Append(seconds, dot, seconds.Length - dot);
            text = sb.Append('s').ToString();
        }
        return negative ? "-" + text : text;
    }

    private static string Frac(ulong v, int digits) => Frac(v, digits, out _);

    /// <summary>v / 10^digits with the fraction's trailing zeros dropped (Go fmtFrac + fmtInt).</summary>
    private static string Frac(ulong v, int digits, out ulong whole)
    {
        ulong scale = 1;
        for (int i = 0; i < digits; i++) scale *= 10;
        whole = v / scale;
        ulong frac = v % scale;
        var w = whole.ToString(CultureInfo.InvariantCulture);
        if (frac == 0) return w;
        return w + "." + frac.ToString(CultureInfo.InvariantCulture).PadLeft(digits, '0').TrimEnd('0');
    }
}
