using System.Globalization;

namespace NatsBroker.JetStream.Api;

/// <summary>
/// Go's time.Time.UnmarshalJSON verdict on a request's time field: RFC 3339 in a JSON string, or Go's own error
/// text (time/format.go Parse with layout RFC3339: "cannot parse X as Y", "month out of range", "extra text").
/// The strict re-checks Go makes after a successful Parse (single-digit hour, comma fraction) are not modelled.
/// </summary>
internal static class GoTimeText
{
    private const string Layout = "2006-01-02T15:04:05Z07:00";

    public static string? UnmarshalJson(string raw)
    {
        if (raw == "null") return null;
        if (raw.Length < 2 || raw[0] != '"' || raw[^1] != '"') return "Time.UnmarshalJSON: input is not a JSON string";
        return Parse(raw[1..^1]);
    }

    private static string Bad(string value, string elem, string rest) =>
        $"parsing time {GoJson.GoQuote(value)} as {GoJson.GoQuote(Layout)}: cannot parse {GoJson.GoQuote(rest)} as {GoJson.GoQuote(elem)}";

    private static string Range(string value, string what) => $"parsing time {GoJson.GoQuote(value)}: {what} out of range";

    private static bool Digit(string s, int i) => i < s.Length && s[i] is >= '0' and <= '9';

    /// <summary>time.getnum: one or two digits (exactly two when <paramref name="fixedWidth"/>).</summary>
    private static bool GetNum(ref string s, bool fixedWidth, out int n)
    {
        n = 0;
        if (!Digit(s, 0)) return false;
        if (!Digit(s, 1))
        {
            if (fixedWidth) return false;
            n = s[0] - '0';
            s = s[1..];
            return true;
        }
        n = (s[0] - '0') * 10 + (s[1] - '0');
        s = s[2..];
        return true;
    }

    private static string? Parse(string value)
    {
        string v = value;
        if (v.Length < 4 || !int.TryParse(v[..4], NumberStyles.AllowLeadingSign, CultureInfo.InvariantCulture, out int year)) return Bad(value, "2006", v);
        v = v[4..];
        if (!Lit(ref v, "-")) return Bad(value, "-", v);
        string hold = v;
        if (!GetNum(ref v, true, out int month)) return Bad(value, "01", hold);
        if (month is <= 0 or > 12) return Range(value, "month");
        if (!Lit(ref v, "-")) return Bad(value, "-", v);
        hold = v;
        if (!GetNum(ref v, true, out int day)) return Bad(value, "02", hold);
        if (!Lit(ref v, "T")) return Bad(value, "T", v);
        hold = v;
        if (!GetNum(ref v, false, out int hour)) return Bad(value, "15", hold);
        if (hour >= 24) return Range(value, "hour");
        if (!Lit(ref v, ":")) return Bad(value, ":", v);
        hold = v;
        if (!GetNum(ref v, true, out int minute)) return Bad(value, "04", hold);
        if (minute >= 60) return Range(value, "minute");
        if (!Lit(ref v, ":")) return Bad(value, ":", v);
        hold = v;
        if (!GetNum(ref v, true, out int second)) return Bad(value, "05", hold);
        if (second >= 60) return Range(value, "second");
        if (v.Length >= 2 && v[0] is '.' or ',' && Digit(v, 1))
        {
            int n = 2;
            while (Digit(v, n)) n++;
            v = v[n..];
        }
        hold = v;
        if (v.Length >= 1 && v[0] == 'Z')
        {
            v = v[1..];
        }
        else
        {
            if (v.Length < 6 || v[3] != ':' || v[0] is not ('+' or '-') || !Digit(v, 1) || !Digit(v, 2) || !Digit(v, 4) || !Digit(v, 5))
                return Bad(value, "Z07:00", hold);
            v = v[6..];
        }
        if (v.Length != 0) return $"parsing time {GoJson.GoQuote(value)}: extra text: {GoJson.GoQuote(v)}";
        if (day < 1 || day > DaysIn(month, year)) return Range(value, "day");
        return null;
    }

    private static bool Lit(ref string v, string lit)
    {
        if (!v.StartsWith(lit, StringComparison.Ordinal)) return false;
        v = v[lit.Length..];
        return true;
    }

    private static int DaysIn(int month, int year) =>
        month == 2 ? (DateTime.IsLeapYear(Math.Clamp(year, 1, 9999)) ? 29 : 28) : DateTime.DaysInMonth(2001, month);
}
