namespace NatsBroker.Connections;

/// <summary>
/// What a connection kind's keep-alive uses on one heartbeat, from the options current then (a reload applies on the
/// next tick): nats-server reads them in processPingTimer and setFirstPingTimer (client.go) per kind.
/// </summary>
/// <param name="IntervalMs">ping_interval in milliseconds; zero or less: no PINGs.</param>
/// <param name="MaxPingsOut">ping_max: PINGs unanswered after which the next one declares the peer stale.</param>
/// <param name="FirstPingCapMs">The first PING comes after at most this long (client.go firstClientPingInterval
/// 2 s for clients, firstPingInterval 1 s for routes, gateways and leaf nodes); zero: after the interval.</param>
/// <param name="DelayWhileActive">True for clients: once RTT is known, a peer that sent something within the
/// interval gets no PING. nats-server never delays PINGs to routes, gateways or spoke leaf nodes.</param>
public readonly record struct KeepAlivePolicy(long IntervalMs, int MaxPingsOut, long FirstPingCapMs, bool DelayWhileActive)
{
    /// <summary>client.go firstClientPingInterval.</summary>
    public const long FirstClientPingMs = 2000;

    /// <summary>client.go firstPingInterval (routes, gateways, leaf nodes).</summary>
    public const long FirstPingMs = 1000;

    /// <summary>A client connection's policy (client.go processPingTimer, kind CLIENT).</summary>
    public static KeepAlivePolicy Client(TimeSpan pingInterval, int maxPingsOut) =>
        new((long)pingInterval.TotalMilliseconds, maxPingsOut, FirstClientPingMs, DelayWhileActive: true);
}
