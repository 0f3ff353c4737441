using System.Globalization;
using System.Text;

namespace NatsBroker.Monitoring;

/// <summary>
/// Go's text formats as nats-server's monitoring JSON shows them: RFC 3339 times with trimmed nanoseconds,
/// <c>myUptime</c> ("1d2h3m4s"), <c>time.Duration.String()</c> ("1.5ms") and strconv's parse errors.
/// </summary>
public static class GoFormat
{
    /// <summary>time.Time as encoding/json writes it (RFC3339Nano, trailing zeros of the fraction trimmed).</summary>
    public static string Time(DateTime t)
    {
        var utc = t.Kind == DateTimeKind.Local ? t.ToUniversalTime() : t;
        return utc.ToString("yyyy'-'MM'-'dd'T'HH':'mm':'ss.FFFFFFF'Z'", CultureInfo.InvariantCulture);
    }

    /// <summary>server/monitor.go myUptime: whole seconds, with years, days, hours and minutes when non-zero.</summary>
    public static string Uptime(TimeSpan d)
    {
        long tsecs = Math.Max(0, (long)d.TotalSeconds);
        long tmins = tsecs / 60, thrs = tmins / 60, tdays = thrs / 24, tyrs = tdays / 365;
        var ci = CultureInfo.InvariantCulture;
        if (tyrs > 0) return string.Format(ci, "{0}y{1}d{2}h{3}m{4}s", tyrs, tdays % 365, thrs % 24, tmins % 60, tsecs % 60);
        if (tdays > 0) return string.Format(ci, "{0}d{1}h{2}m{3}s", tdays, thrs % 24, tmins % 60, tsecs % 60);
        if (thrs > 0) return string.Format(ci, "{0}h{1}m{2}s", thrs, tmins % 60, tsecs % 60);
        if (tmins > 0) return string.Format(ci, "{0}m{1}s", tmins, tsecs % 60);
        return string.Format(ci, "{0}s", tsecs);
    }

    /// <summary>Go's time.Duration.String() ("0s", "474µs", "1.340851ms", "2m3.5s", "1h0m0s").</summary>
    public static string Duration(TimeSpan d)
    {
        long ns = d.Ticks * 100;
        if (ns == 0) return "0s";
        var sb = new StringBuilder();
        ulong u = ns < 0 ? (ulong)(-ns) : (ulong)ns;
        if (ns < 0) sb.Append('-');
        if (u < 1_000_000_000UL)
        {
            // Sub-second: one unit with a fraction.
            (ulong unit, string suffix) = u < 1_000UL ? (1UL, "ns") : u < 1_000_000UL ? (1_000UL, "µs") : (1_000_000UL, "ms");
            AppendFraction(sb, u, unit);
            sb.Append(suffix);
            return sb.ToString();
        }
        ulong totalSecs = u / 1_000_000_000UL;
        ulong hours = totalSecs / 3600, mins = totalSecs / 60 % 60;
        if (hours > 0) sb.Append(hours).Append('h');
        if (hours > 0 || mins > 0) sb.Append(mins).Append('m');
        AppendFraction(sb, u % 60_000_000_000UL, 1_000_000_000UL);
        sb.Append('s');
        return sb.ToString();
    }

    private static void AppendFraction(StringBuilder sb, ulong value, ulong unit)
    {
        sb.Append(value / unit);
        ulong frac = value % unit;
        if (frac == 0) return;
        int digits = (int)Math.Round(Math.Log10(unit));
        var f = frac.ToString(CultureInfo.InvariantCulture).PadLeft(digits, '0').TrimEnd('0');
        sb.Append('.').Append(f);
    }

    /// <summary>strconv.ParseBool.</summary>
    public static bool TryParseBool(string s, out bool value)
    {
        switch (s)
        {
            case "1" or "t" or "T" or "TRUE" or "true" or "True": value = true; return true;
            case "0" or "f" or "F" or "FALSE" or "false" or "False": value = false; return true;
            default: value = false; return false;
        }
    }

    /// <summary>strconv.Atoi / ParseInt (base 10, optional sign, no spaces); the error text on failure.</summary>
    public static bool TryParseInt(string s, out long value, out string? error, string func = "Atoi")
    {
        error = null;
        if (long.TryParse(s, NumberStyles.AllowLeadingSign, CultureInfo.InvariantCulture, out value)) return true;
        bool digits = s.Length > 0 && s.TrimStart('+', '-').Length > 0 && s.TrimStart('+', '-').All(char.IsAsciiDigit) && s.LastIndexOfAny(['+', '-']) <= 0;
        error = $"strconv.{func}: parsing \"{s}\": {(digits ? "value out of range" : "invalid syntax")}";
        return false;
    }

    /// <summary>strconv.ParseUint (base 10, no sign).</summary>
    public static bool TryParseUInt64(string s, out ulong value, out string? error)
    {
        error = null;
        if (s.Length > 0 && s.All(char.IsAsciiDigit) && ulong.TryParse(s, NumberStyles.None, CultureInfo.InvariantCulture, out value)) return true;
        value = 0;
        bool digits = s.Length > 0 && s.All(char.IsAsciiDigit);
        error = $"strconv.ParseUint: parsing \"{s}\": {(digits ? "value out of range" : "invalid syntax")}";
        return false;
    }
}
