namespace NatsBroker.JetStream;

/// <summary>
/// A waiting pull request ($JS.API.CONSUMER.MSG.NEXT): where to deliver, how many messages and bytes remain,
/// when it expires, and its idle heartbeat (nats-server consumer.go waitingRequest).
/// </summary>
internal sealed class PullRequest
{
    public required byte[] Reply { get; init; }
    public int Remaining { get; set; }
    /// <summary>Bytes left under max_bytes; 0 = no byte limit.</summary>
    public long BytesRemaining { get; set; }
    public bool HasByteLimit { get; init; }
    /// <summary>Environment.TickCount64 deadline; long.MaxValue = none.</summary>
    public long ExpiresAt { get; init; }
    public bool NoWait { get; init; }
    public long HeartbeatMs { get; init; }
    public long NextHeartbeatAt { get; set; }
    public int Delivered { get; set; }
}
