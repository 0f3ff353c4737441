using System.Globalization;
using System.Text;

namespace NatsBroker.Configuration;

/// <summary>
/// Go's <c>time.ParseDuration</c> and <c>Duration.String</c>, which nats-server uses for every duration option:
/// a signed sequence of decimal numbers, each with an optional fraction and a unit (ns, us, µs, ms, s, m, h),
/// e.g. "300ms", "-1.5h", "1h30m". A bare "0" is allowed; any other number needs a unit.
/// </summary>
public static class GoDuration
{
    /// <summary>Parses <paramref name="s"/>; on failure <paramref name="error"/> holds Go's message, e.g.
    /// <c>time: unknown unit "x" in duration "2x"</c>.</summary>
    public static bool TryParse(string s, out TimeSpan value, out string? error)
    {
        value = default;
        error = null;
        string orig = s;
        string Invalid() => $"time: invalid duration \"{orig}\"";
        bool neg = false;
        int i = 0;
        if (s.Length > 0 && (s[0] == '-' || s[0] == '+'))
        {
            neg = s[0] == '-';
            i++;
        }
        if (s.Length - i == 1 && s[i] == '0')
            return true;
        if (i == s.Length)
        {
            error = Invalid();
            return false;
        }
        decimal totalNs = 0;
        while (i < s.Length)
        {
            int start = i;
            while (i < s.Length && char.IsAsciiDigit(s[i]))
                i++;
            bool pre = i > start;
            bool post = false;
            if (i < s.Length && s[i] == '.')
            {
                i++;
                int f = i;
                while (i < s.Length && char.IsAsciiDigit(s[i]))
                    i++;
                post = i > f;
            }
            if (!pre && !post)
            {
                error = Invalid();
                return false;
            }
            string number = s[start..i];
            int u = i;
            while (i < s.Length && s[i] != '.' && !char.IsAsciiDigit(s[i]))
                i++;
            if (u == i)
            {
                error = $"time: missing unit in duration \"{orig}\"";
                return false;
            }
            string unit = s[u..i];
            decimal unitNs = unit switch
            {
                "ns" => 1m,
                "us" or "\u00b5s" or "\u03bcs" => 1_000m,
                "ms" => 1_000_000m,
                "s" => 1_000_000_000m,
                "m" => 60m * 1_000_000_000m,
                "h" => 3600m * 1_000_000_000m,
                _ => -1m,
            };
            if (unitNs < 0)
            {
                error = $"time: unknown unit \"{unit}\" in duration \"{orig}\"";
                return false;
            }
            if (!decimal.TryParse(number.StartsWith('.') ? "0" + number : number.EndsWith('.') ? number + "0" : number,
                    NumberStyles.AllowDecimalPoint, CultureInfo.InvariantCulture, out decimal n))
            {
                error = Invalid();
                return false;
            }
            try
            {
                totalNs += n * unitNs;
            }
            catch (OverflowException)
            {
                error = Invalid();
                return false;
            }
            if (totalNs > long.MaxValue)
            {
                error = Invalid();
                return false;
            }
        }
        long ticks = (long)decimal.Truncate(totalNs / 100m);
        value = TimeSpan.FromTicks(neg ? -ticks : ticks);
        return true;
    }

    /// <summary>Formats like Go's <c>Duration.String</c>: "1h30m0s", "30s", "1.5s", "500ms", "0s".</summary>
    public static string Format(TimeSpan d)
    {
        long ticks = d.Ticks;
        if (ticks == 0)
            return "0s";
        var sb = new StringBuilder();
        if (ticks < 0)
        {
            sb.Append('-');
            ticks = -ticks;
        }
        decimal ns = ticks * 100m;
        if (ns < 1_000_000_000m)
        {
            (decimal div, string unit) = ns < 1_000m ? (1m, "ns") : ns < 1_000_000m ? (1_000m, "µs") : (1_000_000m, "ms");
            sb.Append((ns / div).ToString("0.#########", CultureInfo.InvariantCulture)).Append(unit);
            return sb.ToString();
        }
        long totalSeconds = (long)(ns / 1_000_000_000m);
        decimal fraction = ns / 1_000_000_000m - totalSeconds;
        long h = totalSeconds / 3600, m = totalSeconds / 60 % 60, sec = totalSeconds % 60;
        if (h > 0)
            sb.Append(h.ToString(CultureInfo.InvariantCulture)).Append('h');
        if (h > 0 || m > 0)
            sb.Append(m.ToString(CultureInfo.InvariantCulture)).Append('m');
        sb.Append((sec + fraction).ToString("0.#########", CultureInfo.InvariantCulture)).Append('s');
        return sb.ToString();
    }
}
