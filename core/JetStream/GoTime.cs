namespace NatsBroker.JetStream;

/// <summary>Conversions between Unix nanoseconds (store timestamps) and DateTime, and Go's RFC 3339 text.</summary>
internal static class GoTime
{
    public static DateTime FromUnixNanos(long nanos) =>
        nanos <= 0 ? DateTime.SpecifyKind(DateTime.MinValue, DateTimeKind.Utc) : DateTime.UnixEpoch.AddTicks(nanos / 100);

    public static long ToUnixNanos(DateTime t) => (t.ToUniversalTime() - DateTime.UnixEpoch).Ticks * 100;

    public static long NowNanos() => (DateTime.UtcNow - DateTime.UnixEpoch).Ticks * 100;

    /// <summary>RFC 3339 with nanoseconds, trailing zeros trimmed (Go's time.RFC3339Nano), as Nats-Time-Stamp carries it.</summary>
    public static string Rfc3339Nano(long nanos)
    {
        var t = FromUnixNanos(nanos);
        long frac = nanos % 1_000_000_000;
        string s = t.ToString("yyyy-MM-dd'T'HH:mm:ss", System.Globalization.CultureInfo.InvariantCulture);
        if (frac > 0) s += "." + frac.ToString("D9", System.Globalization.CultureInfo.InvariantCulture).TrimEnd('0');
        return s + "Z";
    }
}
