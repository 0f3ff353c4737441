namespace NatsBroker.Connections;

/// <summary>What one heartbeat asks of a connection's protocol handler (<see cref="KeepAlive.OnTick"/>).</summary>
public enum KeepAliveAction
{
    /// <summary>Not due, or the peer was active within the interval.</summary>
    None,
    /// <summary>Send a PING now (it is counted as out).</summary>
    SendPing,
    /// <summary>ping_max PINGs went unanswered: the connection is stale (client.go processPingTimer, StaleConnection).</summary>
    Stale,
}
