using System.Globalization;
using System.Text;

namespace NatsBroker.JetStream.Scheduling;

/// <summary>When a schedule fires next: its time (Unix nanoseconds, and the zone offset then) and whether it repeats.</summary>
internal readonly record struct ScheduleNext(bool Has, long Nanos, TimeSpan Offset, bool Repeat);

/// <summary>
/// The <c>Nats-Schedule</c> patterns (ADR-51, nats-server scheduler.go parseMsgSchedule): <c>@at &lt;RFC 3339&gt;</c>
/// (once), <c>@every &lt;Go duration ≥ 1s&gt;</c>, the predefined <c>@yearly @annually @monthly @weekly @daily
/// @midnight @hourly</c> and 6-field cron (<see cref="CronSchedule"/>), cron only with <c>Nats-Schedule-Time-Zone</c>.
/// </summary>
internal static class MsgSchedulePattern
{
    public const string PatternHeader = "Nats-Schedule";
    public const string TimeZoneHeader = "Nats-Schedule-Time-Zone";
    public const string TtlHeader = "Nats-Schedule-TTL";
    public const string RollupHeader = "Nats-Schedule-Rollup";
    public const string TargetHeader = "Nats-Schedule-Target";
    public const string SourceHeader = "Nats-Schedule-Source";
    public const string SchedulerHeader = "Nats-Scheduler";
    public const string NextHeader = "Nats-Schedule-Next";
    /// <summary>Nats-Schedule-Next of a non-repeating schedule's message: the schedule itself is purged.</summary>
    public const string NextPurge = "purge";

    private const long Second = 1_000_000_000;

    /// <summary>
    /// nats-server loadMessageScheduleLocation: no header = no zone (null, true); present but empty or unknown = false.
    /// </summary>
    public static bool TryLocation(ReadOnlySpan<byte> hdr, out TimeZoneInfo? zone)
    {
        zone = null;
        var tz = NatsHeaders.Get(hdr, TimeZoneHeader);
        if (tz.IsEmpty) return hdr.IndexOf("\r\nNats-Schedule-Time-Zone:"u8) < 0;
        string name = Encoding.UTF8.GetString(tz);
        // Go time.LoadLocation: "UTC" and "Local" are built in, anything else is an IANA name.
        if (name == "UTC") { zone = TimeZoneInfo.Utc; return true; }
        if (name == "Local") { zone = TimeZoneInfo.Local; return true; }
        try
        {
            zone = TimeZoneInfo.FindSystemTimeZoneById(name);
            return true;
        }
        catch (TimeZoneNotFoundException)
        {
            return false;
        }
        catch (InvalidTimeZoneException)
        {
            return false;
        }
    }

    /// <summary>
    /// The next firing after <paramref name="ts"/> (Unix nanoseconds); false when the pattern is invalid. An empty
    /// pattern is valid and has no time (<see cref="ScheduleNext.Has"/> false). Overdue repeating schedules skip ahead
    /// to fire once, from <paramref name="now"/>.
    /// </summary>
    public static bool TryNext(string pattern, TimeZoneInfo? zone, long ts, long now, out ScheduleNext next)
    {
        next = default;
        if (pattern.Length == 0) return true;
        if (pattern.StartsWith("@at ", StringComparison.Ordinal))
        {
            if (zone is not null) return false; // time zones are for cron only
            if (!TryParseRfc3339(pattern[4..], out long at)) return false;
            next = new ScheduleNext(true, at, TimeSpan.Zero, false);
            return true;
        }
        if (pattern.StartsWith("@every ", StringComparison.Ordinal))
        {
            if (zone is not null) return false;
            if (!GoDuration.TryParse(pattern[7..], out long dur) || dur < Second) return false;
            long n = RoundSecond(ts) + dur;
            if (n < now) n = RoundSecond(now) + dur;
            next = new ScheduleNext(true, n, TimeSpan.Zero, true);
            return true;
        }
        pattern = pattern switch
        {
            "@yearly" or "@annually" => "0 0 0 1 1 *",
            "@monthly" => "0 0 0 1 * *",
            "@weekly" => "0 0 0 * * 0",
            "@daily" or "@midnight" => "0 0 0 * * *",
            "@hourly" => "0 0 * * * *",
            _ => pattern,
        };
        zone ??= TimeZoneInfo.Utc;
        if (!CronSchedule.TryNext(pattern, zone, ts, out long c, out var offset)) return false;
        if (c < now && !CronSchedule.TryNext(pattern, zone, RoundSecond(now), out c, out offset)) return false;
        next = new ScheduleNext(true, c, offset, true);
        return true;
    }

    /// <summary>Go time.Round(time.Second): to the nearest second, halves up.</summary>
    private static long RoundSecond(long nanos)
    {
        long r = nanos % Second;
        return r * 2 >= Second ? nanos - r + Second : nanos - r;
    }

    /// <summary>Go time.Parse(time.RFC3339, s): date, 'T', time, optional fraction, then 'Z' or ±hh:mm.</summary>
    public static bool TryParseRfc3339(string s, out long nanos)
    {
        nanos = 0;
        if (s.Length < 20 || s[10] != 'T') return false;
        if (!DateTime.TryParseExact(s.AsSpan(0, 19), "yyyy-MM-dd'T'HH:mm:ss", CultureInfo.InvariantCulture, DateTimeStyles.None, out var wall)) return false;
        int i = 19;
        long frac = 0;
        if (s[i] == '.')
        {
            int start = ++i;
            while (i < s.Length && char.IsAsciiDigit(s[i])) i++;
            int digits = i - start;
            if (digits is 0 or > 9) return false;
            frac = long.Parse(s.AsSpan(start, digits), NumberStyles.None, CultureInfo.InvariantCulture);
            for (int d = digits; d < 9; d++) frac *= 10;
        }
        var zone = s.AsSpan(i);
        long offsetSeconds;
        if (zone is "Z") offsetSeconds = 0;
        else if (zone.Length == 6 && zone[0] is '+' or '-' && zone[3] == ':'
                 && int.TryParse(zone.Slice(1, 2), NumberStyles.None, CultureInfo.InvariantCulture, out int hh)
                 && int.TryParse(zone.Slice(4, 2), NumberStyles.None, CultureInfo.InvariantCulture, out int mm)
                 && hh < 24 && mm < 60)
            offsetSeconds = (zone[0] == '-' ? -1 : 1) * (hh * 3600L + mm * 60);
        else return false;
        nanos = (wall.Ticks - DateTime.UnixEpoch.Ticks) * 100 - offsetSeconds * Second + frac;
        return true;
    }

    /// <summary>Go time.RFC3339Nano of a time in a zone: fraction without trailing zeros, 'Z' for a zero offset.</summary>
    public static string FormatRfc3339Nano(long nanos, TimeSpan offset)
    {
        long local = nanos + offset.Ticks * 100;
        long frac = (local % Second + Second) % Second;
        var wall = DateTime.UnixEpoch.AddTicks((local - frac) / 100);
        var sb = new StringBuilder(wall.ToString("yyyy-MM-dd'T'HH:mm:ss", CultureInfo.InvariantCulture));
        if (frac > 0) sb.Append('.').Append(frac.ToString("D9", CultureInfo.InvariantCulture).TrimEnd('0'));
        if (offset == TimeSpan.Zero) return sb.Append('Z').ToString();
        var abs = offset.Duration();
        return sb.Append(offset < TimeSpan.Zero ? '-' : '+').Append(abs.Hours.ToString("D2", CultureInfo.InvariantCulture))
            .Append(':').Append(abs.Minutes.ToString("D2", CultureInfo.InvariantCulture)).ToString();
    }

    /// <summary>Go IsValidPublishSubject: a valid subject without wildcard tokens.</summary>
    public static bool IsValidPublishSubject(string subject) => JsSubjects.IsValid(subject) && JsSubjects.IsLiteral(subject);
}
