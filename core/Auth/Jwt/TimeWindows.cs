using System.Globalization;

namespace NatsBroker.Auth.Jwt;

/// <summary>
/// A user JWT's <c>times</c> (server/auth.go validateTimes): daily windows "HH:MM:SS"–"HH:MM:SS" in
/// <c>times_location</c> (an IANA zone; local time when empty). A window whose start is after its end spans
/// midnight. The connection is allowed while now is inside a window, and expires at that window's end.
/// </summary>
internal static class TimeWindows
{
    public static bool Contains(List<(string Start, string End)> windows, string? location, DateTimeOffset now, out DateTimeOffset? end)
    {
        end = null;
        if (windows.Count == 0) return true;
        TimeZoneInfo zone;
        try
        {
            zone = string.IsNullOrEmpty(location) ? TimeZoneInfo.Local : TimeZoneInfo.FindSystemTimeZoneById(location);
        }
        catch (Exception ex) when (ex is TimeZoneNotFoundException or InvalidTimeZoneException)
        {
            return false;
        }
        var local = TimeZoneInfo.ConvertTime(now, zone);
        foreach (var (s, e) in windows)
        {
            if (!TimeSpan.TryParseExact(s, @"hh\:mm\:ss", CultureInfo.InvariantCulture, out var start)
                || !TimeSpan.TryParseExact(e, @"hh\:mm\:ss", CultureInfo.InvariantCulture, out var stop)) continue;
            var day = new DateTimeOffset(local.Date, local.Offset);
            DateTimeOffset from = day + start, to = day + stop;
            if (start > stop)
            {
                // Overnight: either since start today until stop tomorrow, or since start yesterday until stop today.
                if (local >= from) to = to.AddDays(1);
                else from = from.AddDays(-1);
            }
            if (local >= from && local < to)
            {
                end = to;
                return true;
            }
        }
        return false;
    }
}
