using System.Globalization;
using System.Text;

namespace NatsBroker.JetStream;

/// <summary>Go's time.Duration text: ParseDuration ("1h30m", "1.5s", "500ms") and String ("1m0s").</summary>
internal static class GoDuration
{
    /// <summary>Parses Go duration syntax into nanoseconds; false when it is not one.</summary>
    public static bool TryParse(string text, out long nanos)
    {
        nanos = 0;
        if (string.IsNullOrEmpty(text)) return false;
        int i = 0;
        bool negative = false;
        if (text[0] is '-' or '+') { negative = text[0] == '-'; i++; }
        if (i == text.Length) return false;
        if (text[i..] == "0") return true;
        decimal total = 0;
        while (i < text.Length)
        {
            int start = i;
            while (i < text.Length && (char.IsAsciiDigit(text[i]) || text[i] == '.')) i++;
            if (start == i || !decimal.TryParse(text.AsSpan(start, i - start), NumberStyles.AllowDecimalPoint, CultureInfo.InvariantCulture, out var value)) return false;
            int unitStart = i;
            while (i < text.Length && !char.IsAsciiDigit(text[i]) && text[i] != '.') i++;
            decimal unit = text[unitStart..i] switch
            {
                "ns" => 1m,
                "us" or "µs" or "μs" => 1_000m,
                "ms" => 1_000_000m,
                "s" => 1_000_000_000m,
                "m" => 60_000_000_000m,
                "h" => 3_600_000_000_000m,
                _ => -1m,
            };
            if (unit < 0) return false;
            total += value * unit;
            if (total > long.MaxValue) return false;
        }
        nanos = (long)(negative ? -total : total);
        return true;
    }

    /// <summary>A whole number of seconds as Go's Duration.String writes it ("30s", "1m0s", "1h0m0s").</summary>
    public static string FormatSeconds(long seconds)
    {
        if (seconds == 0) return "0s";
        var sb = new StringBuilder();
        long h = seconds / 3600, m = seconds / 60 % 60, s = seconds % 60;
        if (h > 0) sb.Append(h.ToString(CultureInfo.InvariantCulture)).Append('h');
        if (h > 0 || m > 0) sb.Append(m.ToString(CultureInfo.InvariantCulture)).Append('m');
        sb.Append(s.ToString(CultureInfo.InvariantCulture)).Append('s');
        return sb.ToString();
    }
}
