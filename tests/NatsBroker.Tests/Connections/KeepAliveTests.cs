using NatsBroker.Connections;

namespace NatsBroker.Tests.Connections;

/// <summary>
/// <see cref="KeepAlive"/> on a fake clock (ticks passed in, no sleeps): first-ping jitter, PINGs out, ping_max,
/// activity standing in for a PING, RTT (client.go setFirstPingTimer, processPingTimer, processPong).
/// </summary>
public sealed class KeepAliveTests
{
    private const long T0 = 1_000_000;

    /// <summary>A jitter source that always answers the same fraction of its range (0 = lowest, 1 = highest).</summary>
    private sealed class FixedRandom(double fraction) : Random
    {
        public override long NextInt64(long maxValue) => Math.Min(maxValue - 1, (long)(maxValue * fraction));
    }

    private static KeepAlivePolicy Client(long intervalMs, int maxPingsOut = 2) =>
        KeepAlivePolicy.Client(TimeSpan.FromMilliseconds(intervalMs), maxPingsOut);

    [Theory]
    [InlineData(120_000, 2000)] // the default 2 m interval: the first PING after 2 s (firstClientPingInterval)
    [InlineData(1_000, 1000)]   // an interval under 2 s: the first PING after the interval
    public void First_ping_comes_after_the_capped_interval_plus_up_to_20_percent(long interval, long first)
    {
        var lowest = new KeepAlive(new FixedRandom(0));
        lowest.Restart(T0, Client(interval));
        Assert.Equal(T0 + first, lowest.NextPingTicks);

        var highest = new KeepAlive(new FixedRandom(1));
        highest.Restart(T0, Client(interval));
        Assert.Equal(T0 + first + first / 5 - 1, highest.NextPingTicks);

        // Real randomness stays in [first, first + 20%).
        for (int seed = 0; seed < 200; seed++)
        {
            var k = new KeepAlive(new Random(seed));
            k.Restart(T0, Client(interval));
            Assert.InRange(k.NextPingTicks - T0, first, first + first / 5 - 1);
        }
    }

    [Fact]
    public void The_first_heartbeat_schedules_from_the_connect_time_and_nothing_is_sent_before_it_is_due()
    {
        var k = new KeepAlive(new FixedRandom(0));
        var policy = Client(1000);
        Assert.Equal(KeepAliveAction.None, k.OnTick(T0 + 250, T0, T0, policy));
        Assert.Equal(T0 + 1000, k.NextPingTicks);
        Assert.Equal(KeepAliveAction.None, k.OnTick(T0 + 999, T0, T0, policy));
        Assert.Equal(KeepAliveAction.SendPing, k.OnTick(T0 + 1000, T0, T0, policy));
        Assert.Equal(1, k.PingsOut);
        Assert.Equal(T0 + 2000, k.NextPingTicks);
    }

    [Fact]
    public void Ping_max_unanswered_pings_make_the_next_one_stale()
    {
        var k = new KeepAlive(new FixedRandom(0));
        var policy = Client(1000, maxPingsOut: 2);
        long now = T0 + 1000;
        Assert.Equal(KeepAliveAction.SendPing, k.OnTick(now, T0, T0, policy));
        Assert.Equal(KeepAliveAction.SendPing, k.OnTick(now += 1000, T0, T0, policy));
        Assert.Equal(2, k.PingsOut);
        Assert.Equal(KeepAliveAction.Stale, k.OnTick(now += 1000, T0, T0, policy));
    }

    [Fact]
    public void A_pong_clears_the_pings_out_and_measures_the_rtt()
    {
        var k = new KeepAlive(new FixedRandom(0));
        var policy = Client(1000, maxPingsOut: 1);
        long now = T0 + 1000;
        Assert.Equal(KeepAliveAction.SendPing, k.OnTick(now, T0, T0, policy));
        Assert.False(k.RttMeasured);
        k.OnPong(now + 37);
        Assert.Equal(0, k.PingsOut);
        Assert.Equal(TimeSpan.FromMilliseconds(37), k.Rtt);
        Assert.True(k.RttMeasured);
        // The peer is quiet but answered, so the next PING goes out instead of a stale close (ping_max 1).
        Assert.Equal(KeepAliveAction.SendPing, k.OnTick(now + 1000, T0, T0, policy));
    }

    [Fact]
    public void A_pong_with_no_ping_out_measures_nothing()
    {
        var k = new KeepAlive();
        k.OnPong(T0);
        Assert.Equal(TimeSpan.Zero, k.Rtt);
        Assert.False(k.RttMeasured);
    }

    [Fact]
    public void Once_rtt_is_known_a_client_active_within_the_interval_gets_no_ping()
    {
        var k = new KeepAlive(new FixedRandom(0));
        var policy = Client(1000, maxPingsOut: 1);
        k.SetRtt(5);
        long now = T0 + 1000;
        // Input 500 ms ago: no PING, and the timer still moves on by an interval.
        Assert.Equal(KeepAliveAction.None, k.OnTick(now, T0, lastInputTicks: now - 500, policy));
        Assert.Equal(0, k.PingsOut);
        Assert.Equal(now + 1000, k.NextPingTicks);
        // Quiet for a whole interval: PING.
        now += 1000;
        Assert.Equal(KeepAliveAction.SendPing, k.OnTick(now, T0, lastInputTicks: now - 1000, policy));
    }

    [Fact]
    public void Activity_does_not_stand_in_for_a_ping_before_rtt_is_known_nor_for_kinds_that_never_delay()
    {
        var before = new KeepAlive(new FixedRandom(0));
        long now = T0 + 1000;
        Assert.Equal(KeepAliveAction.SendPing, before.OnTick(now, T0, lastInputTicks: now, Client(1000)));

        // Routes, gateways and spoke leaf nodes: "Do not delay PINGs" (processPingTimer); first PING after 1 s.
        var route = new KeepAlive(new FixedRandom(0));
        route.SetRtt(5);
        var routePolicy = new KeepAlivePolicy(120_000, 2, KeepAlivePolicy.FirstPingMs, DelayWhileActive: false);
        Assert.Equal(KeepAliveAction.None, route.OnTick(T0 + 999, T0, T0 + 999, routePolicy));
        Assert.Equal(KeepAliveAction.SendPing, route.OnTick(T0 + 1000, T0, T0 + 1000, routePolicy));
    }

    [Fact]
    public void Connect_sets_an_rtt_estimate_of_at_least_one_millisecond_and_restarts_the_timer()
    {
        var k = new KeepAlive(new FixedRandom(0));
        var policy = Client(120_000);
        k.SetRtt(0);
        Assert.Equal(TimeSpan.FromMilliseconds(1), k.Rtt);
        Assert.True(k.RttMeasured);
        k.Restart(T0 + 5000, policy);
        Assert.Equal(T0 + 7000, k.NextPingTicks);
        // A heartbeat does not reschedule from the connect time once scheduled (the peer quiet for an interval).
        long quiet = T0 - 120_000;
        Assert.Equal(KeepAliveAction.None, k.OnTick(T0 + 6999, T0, quiet, policy));
        Assert.Equal(KeepAliveAction.SendPing, k.OnTick(T0 + 7000, T0, quiet, policy));
    }

    [Fact]
    public void No_interval_means_no_pings()
    {
        var k = new KeepAlive();
        var off = Client(0);
        k.Restart(T0, off);
        Assert.Equal(0, k.NextPingTicks);
        Assert.Equal(KeepAliveAction.None, k.OnTick(T0 + 10_000_000, T0, T0, off));
    }
}
