namespace NatsBroker.Connections;

/// <summary>
/// PING/PONG keep-alive of one connection, whatever its protocol: when the next PING is due (with the first one's
/// jitter), the PINGs out, stale detection at ping_max and the round-trip time. nats-server serves every connection
/// kind with the same timer logic (client.go setFirstPingTimer, processPingTimer, processPong; route.go and
/// leafnode.go call setFirstPingTimer too). Time is passed in (<see cref="Environment.TickCount64"/> milliseconds),
/// so the logic runs on the owner's heartbeat and tests drive it with a fake clock.
/// </summary>
/// <remarks>
/// <see cref="OnTick"/> runs on the heartbeat's thread, <see cref="OnPong"/> and <see cref="Restart"/> on the read
/// loop's: the fields shared between them are read and written with <see cref="Volatile"/>, as single words.
/// </remarks>
public sealed class KeepAlive
{
    private readonly Random _random;
    private long _nextPingTicks;
    private long _pingSentTicks;
    private long _rttMs;
    private int _rttMeasured;
    private int _pingsOut;

    /// <param name="random">The first PING's jitter source (tests pass a seeded or fixed one).</param>
    public KeepAlive(Random? random = null) => _random = random ?? Random.Shared;

    /// <summary>The round-trip time last measured (CONNECT's estimate, then each PONG); zero until then.</summary>
    public TimeSpan Rtt => TimeSpan.FromMilliseconds(Volatile.Read(ref _rttMs));

    /// <summary>Whether an RTT is known (only then does a client's activity stand in for a PING).</summary>
    public bool RttMeasured => Volatile.Read(ref _rttMeasured) != 0;

    /// <summary>PINGs sent and not yet answered.</summary>
    public int PingsOut => Volatile.Read(ref _pingsOut);

    /// <summary>When the next PING is due (tick count); zero before the first heartbeat schedules it.</summary>
    public long NextPingTicks => Volatile.Read(ref _nextPingTicks);

    /// <summary>
    /// One heartbeat: schedules the first PING (from <paramref name="connectedTicks"/>) if none is, and when one is
    /// due says whether to send it or to declare the connection stale (client.go processPingTimer).
    /// </summary>
    public KeepAliveAction OnTick(long nowTicks, long connectedTicks, long lastInputTicks, in KeepAlivePolicy policy)
    {
        long interval = policy.IntervalMs;
        if (interval <= 0) return KeepAliveAction.None;
        long next = Volatile.Read(ref _nextPingTicks);
        if (next == 0)
        {
            Restart(connectedTicks, policy);
            next = Volatile.Read(ref _nextPingTicks);
        }
        if (nowTicks < next) return KeepAliveAction.None;
        Volatile.Write(ref _nextPingTicks, nowTicks + interval);
        // Once RTT is known, a client that sent us something within the interval needs no PING (processPingTimer:
        // "If we received client data or a ping from the other side within the PingInterval").
        if (policy.DelayWhileActive && RttMeasured && nowTicks - lastInputTicks < interval) return KeepAliveAction.None;
        int outNow = Volatile.Read(ref _pingsOut);
        if (outNow + 1 > policy.MaxPingsOut) return KeepAliveAction.Stale;
        Volatile.Write(ref _pingsOut, outNow + 1);
        Volatile.Write(ref _pingSentTicks, nowTicks);
        return KeepAliveAction.SendPing;
    }

    /// <summary>
    /// (Re)starts the ping timer from <paramref name="fromTicks"/>: the first PING comes after the interval or
    /// <see cref="KeepAlivePolicy.FirstPingCapMs"/>, whichever is shorter, plus up to 20% jitter
    /// (client.go setFirstPingTimer: "We randomize the first one by an offset up to 20%"). nats-server restarts it
    /// when a client's CONNECT is processed.
    /// </summary>
    public void Restart(long fromTicks, in KeepAlivePolicy policy)
    {
        long interval = policy.IntervalMs;
        if (interval <= 0) return;
        long first = policy.FirstPingCapMs > 0 ? Math.Min(interval, policy.FirstPingCapMs) : interval;
        // rand.Int63n(d / 5): [0, d/5); at least one value so a tiny interval still gets a valid range.
        Volatile.Write(ref _nextPingTicks, fromTicks + first + _random.NextInt64(Math.Max(1, first / 5)));
    }

    /// <summary>An RTT estimate from elsewhere (a client's CONNECT: the time since accept, at least 1 ms).</summary>
    public void SetRtt(long rttMs)
    {
        Volatile.Write(ref _rttMs, Math.Max(1, rttMs));
        Volatile.Write(ref _rttMeasured, 1);
    }

    /// <summary>A PONG: nothing is out any more; the time since the last PING sent is the RTT (client.go processPong).</summary>
    public void OnPong(long nowTicks)
    {
        Volatile.Write(ref _pingsOut, 0);
        long sent = Volatile.Read(ref _pingSentTicks);
        if (sent == 0) return;
        Volatile.Write(ref _rttMs, Math.Max(0, nowTicks - sent));
        Volatile.Write(ref _rttMeasured, 1);
    }
}
