using System.Globalization;

namespace NatsBroker.JetStream.Api;

/// <summary>Go's time.Duration.String ("1h2m3.5s", "150ms", "0s"), for error texts that print a duration with %v.</summary>
internal static class GoDurationText
{
    public static string Format(long d)
    {
        if (d == 0) return "0s";
        bool neg = d < 0;
        ulong u = neg ? (ulong)(-(d + 1)) + 1 : (ulong)d;
        string s;
        if (u < 1_000_000_000)
        {
            s = u < 1_000 ? u.ToString(CultureInfo.InvariantCulture) + "ns"
                : u < 1_000_000 ? Fixed(u, 3) + "µs"
                : Fixed(u, 6) + "ms";
        }
        else
        {
            ulong secs = u / 1_000_000_000;
            s = Fixed((secs % 60) * 1_000_000_000 + u % 1_000_000_000, 9) + "s";
            ulong mins = secs / 60;
            if (mins > 0)
            {
                s = (mins % 60).ToString(CultureInfo.InvariantCulture) + "m" + s;
                if (mins / 60 > 0) s = (mins / 60).ToString(CultureInfo.InvariantCulture) + "h" + s;
            }
        }
        return neg ? "-" + s : s;
    }

    /// <summary><paramref name="v"/> / 10^<paramref name="digits"/> with the fraction's trailing zeros dropped.</summary>
    private static string Fixed(ulong v, int digits)
    {
        ulong scale = 1;
        for (int i = 0; i < digits; i++) scale *= 10;
        string whole = (v / scale).ToString(CultureInfo.InvariantCulture);
        ulong frac = v % scale;
        if (frac == 0) return whole;
        return whole + "." + frac.ToString(CultureInfo.InvariantCulture).PadLeft(digits, '0').TrimEnd('0');
    }
}
