using System.Globalization;

namespace NatsBroker.JetStream.Scheduling;

/// <summary>
/// The 6-field cron patterns of message schedules (ADR-51), ported from nats-server server/cron.go (itself based on
/// robfig/cron): seconds minutes hours day-of-month month day-of-week; '*', '?', ranges, lists, steps, month and
/// weekday names. The walk runs on the zone's wall clock and converts the result to UTC at the end, so a time
/// inside a daylight-saving gap moves forward by the gap (Go leaves that case unspecified).
/// </summary>
internal static class CronSchedule
{
    private const ulong StarBit = 1UL << 63;

    private readonly record struct Bounds(uint Min, uint Max, string[]? Names);

    private static readonly Bounds Seconds = new(0, 59, null);
    private static readonly Bounds Minutes = new(0, 59, null);
    private static readonly Bounds Hours = new(0, 23, null);
    private static readonly Bounds DaysOfMonth = new(1, 31, null);
    private static readonly Bounds Months = new(1, 12, ["", "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]);
    private static readonly Bounds DaysOfWeek = new(0, 6, ["sun", "mon", "tue", "wed", "thu", "fri", "sat"]);

    /// <summary>
    /// The first time after <paramref name="tsNanos"/> (Unix nanoseconds) the pattern fires in <paramref name="zone"/>,
    /// as Unix nanoseconds and the zone's offset then; false when the pattern is invalid or finds no time within five
    /// years (nats-server parseCron).
    /// </summary>
    public static bool TryNext(string pattern, TimeZoneInfo zone, long tsNanos, out long nextNanos, out TimeSpan offset)
    {
        nextNanos = 0;
        offset = TimeSpan.Zero;
        var fields = pattern.Split([' ', '\t', '\n', '\r', '\v', '\f'], StringSplitOptions.RemoveEmptyEntries);
        if (fields.Length != 6) return false;
        if (!TryField(fields[0], Seconds, out ulong second) || !TryField(fields[1], Minutes, out ulong minute)
            || !TryField(fields[2], Hours, out ulong hour) || !TryField(fields[3], DaysOfMonth, out ulong dom)
            || !TryField(fields[4], Months, out ulong month) || !TryField(fields[5], DaysOfWeek, out ulong dow))
            return false;

        var utc = DateTime.UnixEpoch.AddTicks(tsNanos / 100);
        var next = TimeZoneInfo.ConvertTimeFromUtc(utc, zone);
        next = DateTime.SpecifyKind(new DateTime(next.Ticks - next.Ticks % TimeSpan.TicksPerSecond), DateTimeKind.Unspecified).AddSeconds(1);
        bool truncated = false;
        int yearLimit = next.Year + 5;

    wrap:
        if (next.Year > yearLimit) return false;
        while ((1UL << next.Month & month) == 0)
        {
            if (!truncated)
            {
                truncated = true;
                next = new DateTime(next.Year, next.Month, 1);
            }
            next = next.AddMonths(1);
            if (next.Month == 1) goto wrap;
        }
        while (!DayMatches(dom, dow, next))
        {
            if (!truncated)
            {
                truncated = true;
                next = next.Date;
            }
            next = next.AddDays(1);
            if (next.Day == 1) goto wrap;
        }
        while ((1UL << next.Hour & hour) == 0)
        {
            if (!truncated)
            {
                truncated = true;
                next = new DateTime(next.Year, next.Month, next.Day, next.Hour, 0, 0);
            }
            next = next.AddHours(1);
            if (next.Hour == 0) goto wrap;
        }
        while ((1UL << next.Minute & minute) == 0)
        {
            if (!truncated)
            {
                truncated = true;
                next = new DateTime(next.Year, next.Month, next.Day, next.Hour, next.Minute, 0);
            }
            next = next.AddMinutes(1);
            if (next.Minute == 0) goto wrap;
        }
        while ((1UL << next.Second & second) == 0)
        {
            if (!truncated)
            {
                truncated = true;
                next = new DateTime(next.Year, next.Month, next.Day, next.Hour, next.Minute, next.Second);
            }
            next = next.AddSeconds(1);
            if (next.Second == 0) goto wrap;
        }

        // A wall-clock time skipped by a daylight-saving jump does not exist: move past the gap.
        while (zone.IsInvalidTime(next)) next = next.AddMinutes(1);
        offset = zone.GetUtcOffset(next);
        nextNanos = (next.Ticks - offset.Ticks - DateTime.UnixEpoch.Ticks) * 100;
        return true;
    }

    /// <summary>Day-of-month and day-of-week: both must match when either has a '*', otherwise either may.</summary>
    private static bool DayMatches(ulong dom, ulong dow, DateTime t)
    {
        bool domMatch = (1UL << t.Day & dom) != 0;
        bool dowMatch = (1UL << (int)t.DayOfWeek & dow) != 0;
        if ((dom & StarBit) != 0 || (dow & StarBit) != 0) return domMatch && dowMatch;
        return domMatch || dowMatch;
    }

    /// <summary>A comma-separated list of ranges as a bit set (nats-server getField; empty parts are skipped).</summary>
    private static bool TryField(string field, Bounds r, out ulong bits)
    {
        bits = 0;
        foreach (var expr in field.Split(',', StringSplitOptions.RemoveEmptyEntries))
        {
            if (!TryRange(expr, r, out ulong bit)) return false;
            bits |= bit;
        }
        return true;
    }

    /// <summary>number | number "-" number [ "/" step ], '*' or '?' for the whole range (nats-server getRange).</summary>
    private static bool TryRange(string expr, Bounds r, out ulong bits)
    {
        bits = 0;
        var rangeAndStep = expr.Split('/');
        var lowAndHigh = rangeAndStep[0].Split('-');
        bool single = lowAndHigh.Length == 1;
        uint start, end, step;
        ulong extra = 0;
        if (lowAndHigh[0] is "*" or "?")
        {
            start = r.Min;
            end = r.Max;
            extra = StarBit;
        }
        else
        {
            if (!TryIntOrName(lowAndHigh[0], r.Names, out start)) return false;
            switch (lowAndHigh.Length)
            {
                case 1: end = start; break;
                case 2: if (!TryIntOrName(lowAndHigh[1], r.Names, out end)) return false; break;
                default: return false; // too many hyphens
            }
        }
        switch (rangeAndStep.Length)
        {
            case 1:
                step = 1;
                break;
            case 2:
                if (!TryInt(rangeAndStep[1], out step)) return false;
                if (single) end = r.Max; // "N/step" means "N-max/step"
                if (step > 1) extra = 0;
                break;
            default:
                return false; // too many slashes
        }
        if (start < r.Min || end > r.Max || start > end || step == 0) return false;
        for (uint i = start; i <= end; i += step) bits |= 1UL << (int)i;
        bits |= extra;
        return true;
    }

    private static bool TryIntOrName(string expr, string[]? names, out uint value)
    {
        if (names is not null)
        {
            int i = Array.IndexOf(names, expr.ToLowerInvariant());
            if (i >= 0 && names[i].Length > 0)
            {
                value = (uint)i;
                return true;
            }
        }
        return TryInt(expr, out value);
    }

    /// <summary>Go strconv.Atoi, non-negative.</summary>
    private static bool TryInt(string expr, out uint value)
    {
        value = 0;
        if (!int.TryParse(expr, NumberStyles.AllowLeadingSign, CultureInfo.InvariantCulture, out int n) || n < 0) return false;
        value = (uint)n;
        return true;
    }
}
