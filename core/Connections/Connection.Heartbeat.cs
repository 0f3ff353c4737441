namespace NatsBroker.Connections;

/// <summary>
/// The connection's share of the owner's heartbeat (one timer for every connection's timeouts, as Kestrel's
/// heartbeat): the handshake deadline, the write deadline and keep-alive. The handler supplies what differs by
/// protocol (how long the handshake may take, the PING bytes, the -ERR and close reason); the timing is here, the same
/// for every kind (nats-server: client.go setAuthTimer/authTimeout and processPingTimer serve every kind).
/// </summary>
public sealed partial class Connection
{
    /// <summary>PINGs out, next PING due, RTT (the handler reports PONGs to it).</summary>
    public KeepAlive KeepAlive { get; } = new();

    /// <summary>
    /// From the owner's heartbeat: while the handshake is pending, its deadline only; then the write deadline, then
    /// keep-alive.
    /// </summary>
    public void OnHeartbeat(long nowTicks)
    {
        if (_closing) return;
        if (_handler.HandshakeTimeout is { } timeout)
        {
            // Infinite: the handshake's current step bounds its own wait (an auth callout in flight).
            if (timeout != Timeout.InfiniteTimeSpan && nowTicks - ConnectedTicks >= (long)timeout.TotalMilliseconds)
                _handler.OnHandshakeTimeout();
            return;
        }
        if (CheckWriteDeadline(nowTicks)) return;
        switch (KeepAlive.OnTick(nowTicks, ConnectedTicks, LastInputTicks, _handler.KeepAlivePolicy))
        {
            case KeepAliveAction.SendPing:
                _handler.SendPing();
                break;
            case KeepAliveAction.Stale:
                _handler.OnStale();
                break;
        }
    }
}
