namespace NatsBroker.JetStream;

/// <summary>Conversions between Unix nanoseconds (store timestamps) and DateTime, and Go's RFC 3339 text.</summary>
internal static class GoTime
{
    public static DateTime FromUnixNanos(long nanos) =>
        nanos <= 0 ? DateTime.SpecifyKind(DateTime.MinValue, DateTimeKind.Utc) : DateTime.UnixEpoch.AddTicks(nanos / 100);

    public static long ToUnixNanos(DateTime t) => (t.ToUniversalTime() - DateTime.UnixEpoch).Ticks * 100;

    public static long NowNanos() => (DateTime.UtcNow - DateTime.UnixEpoch).Ticks * 100;

    /// <summary>The longest <see cref="FormatRfc3339Nano"/> text: "yyyy-MM-ddTHH:mm:ss.nnnnnnnnnZ".</summary>
    public const int MaxRfc3339NanoLength = 30;

    /// <summary>RFC 3339 with nanoseconds, trailing zeros trimmed (Go's time.RFC3339Nano), as Nats-Time-Stamp carries it.</summary>
    public static string Rfc3339Nano(long nanos)
    {
        Span<byte> text = stackalloc byte[MaxRfc3339NanoLength];
        return System.Text.Encoding.ASCII.GetString(text[..FormatRfc3339Nano(nanos, text)]);
    }

    /// <summary>
    /// <see cref="Rfc3339Nano"/> written as ASCII into <paramref name="into"/> (at least
    /// <see cref="MaxRfc3339NanoLength"/> bytes) without allocating; returns the length.
    /// </summary>
    public static int FormatRfc3339Nano(long nanos, Span<byte> into)
    {
        var t = FromUnixNanos(nanos);
        if (!t.TryFormat(into, out int n, "yyyy-MM-dd'T'HH:mm:ss", System.Globalization.CultureInfo.InvariantCulture))
            throw new ArgumentException("destination too short", nameof(into));
        long frac = nanos % 1_000_000_000;
        if (frac > 0)
        {
            into[n++] = (byte)'.';
            // Nine digits, then the trailing zeros dropped (frac > 0, so at least one digit stays).
            for (int i = 8; i >= 0; i--)
            {
                into[n + i] = (byte)('0' + (int)(frac % 10));
                frac /= 10;
            }
            int digits = 9;
            while (into[n + digits - 1] == (byte)'0') digits--;
            n += digits;
        }
        into[n++] = (byte)'Z';
        return n;
    }
}
