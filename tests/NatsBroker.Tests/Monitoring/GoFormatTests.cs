using NatsBroker.Monitoring;

namespace NatsBroker.Tests.Monitoring;

public sealed class GoFormatTests
{
    [Theory]
    [InlineData(0, "0s")]
    [InlineData(59, "59s")]
    [InlineData(62, "1m2s")]
    [InlineData(3600, "1h0m0s")]
    [InlineData(90061, "1d1h1m1s")]
    [InlineData(365 * 86400 + 1, "1y0d0h0m1s")]
    public void Uptime_MatchesMyUptime(long seconds, string expected) =>
        Assert.Equal(expected, GoFormat.Uptime(TimeSpan.FromSeconds(seconds)));

    [Theory]
    [InlineData(0, "0s")]
    [InlineData(100, "100ns")]
    [InlineData(474_000, "474µs")]
    [InlineData(1_340_800, "1.3408ms")]
    [InlineData(1_500_000_000, "1.5s")]
    [InlineData(62_500_000_000, "1m2.5s")]
    [InlineData(3_600_000_000_000, "1h0m0s")]
    public void Duration_MatchesGoDurationString(long nanoseconds, string expected) =>
        Assert.Equal(expected, GoFormat.Duration(TimeSpan.FromTicks(nanoseconds / 100)));

    [Fact]
    public void Time_IsRfc3339NanoWithTrimmedFraction()
    {
        Assert.Equal("2026-11-22T01:01:08Z", GoFormat.Time(new DateTime(2026, 11, 22, 1, 1, 8, DateTimeKind.Utc)));
        Assert.Equal("2026-11-22T01:01:08.5Z", GoFormat.Time(new DateTime(2026, 11, 22, 1, 1, 8, 500, DateTimeKind.Utc)));
        Assert.Equal("2026-11-22T01:01:08.2383185Z", GoFormat.Time(new DateTime(2026, 11, 22, 1, 1, 8, DateTimeKind.Utc).AddTicks(2_383_185)));
        Assert.Equal("0001-01-01T00:00:00Z", GoFormat.Time(default));
    }

    [Theory]
    [InlineData("1", true)]
    [InlineData("T", true)]
    [InlineData("True", true)]
    [InlineData("0", false)]
    [InlineData("FALSE", false)]
    public void ParseBool_AcceptsStrconvForms(string text, bool expected)
    {
        Assert.True(GoFormat.TryParseBool(text, out var v));
        Assert.Equal(expected, v);
    }

    [Fact]
    public void ParseInt_ErrorsAsStrconv()
    {
        Assert.False(GoFormat.TryParseInt("abc", out _, out var e1));
        Assert.Equal("strconv.Atoi: parsing \"abc\": invalid syntax", e1);
        Assert.False(GoFormat.TryParseInt("99999999999999999999", out _, out var e2));
        Assert.Equal("strconv.Atoi: parsing \"99999999999999999999\": value out of range", e2);
        Assert.True(GoFormat.TryParseInt("-5", out var v, out _));
        Assert.Equal(-5, v);
    }
}
