namespace NatsBroker.JetStream;

/// <summary>
/// A waiting pull request ($JS.API.CONSUMER.MSG.NEXT): where to deliver, how many messages and bytes remain,
/// when it expires, its idle heartbeat, and its priority group fields (nats-server consumer.go waitingRequest and
/// PriorityGroup, ADR-42).
/// </summary>
internal sealed class PullRequest
{
    public required byte[] Reply { get; init; }
    /// <summary>
    /// Messages still wanted (nats-server wr.n): as asked, so 0 or less for a JSON request without "batch" (it still
    /// gets one message, as nats-server's pop delivers before counting down); reported in Nats-Pending-Messages.
    /// </summary>
    public long Remaining { get; set; }
    /// <summary>Bytes left under max_bytes (nats-server wr.b); 0 = no byte limit. Reported in Nats-Pending-Bytes.</summary>
    public long BytesRemaining { get; set; }
    /// <summary>Environment.TickCount64 deadline; long.MaxValue = none.</summary>
    public long ExpiresAt { get; init; }
    public bool NoWait { get; init; }
    /// <summary>The request has an expiry (nats-server !wr.expires.IsZero()): a no_wait one then waits for a first message.</summary>
    public bool HasExpiry { get; init; }
    public long HeartbeatMs { get; init; }
    public long NextHeartbeatAt { get; set; }
    public int Delivered { get; set; }

    /// <summary>The request was JSON, so it carries priority group fields (nats-server: priorityGroup != nil).</summary>
    public bool HasPriorityGroup { get; init; }
    public string? Group { get; init; }
    /// <summary>overflow: served only when num_pending reaches this (0 = no condition).</summary>
    public long MinPending { get; init; }
    /// <summary>overflow: served only when num_ack_pending reaches this (0 = no condition).</summary>
    public long MinAckPending { get; init; }
    /// <summary>pinned_client: the pin id the client holds; set by the server when it pins this request.</summary>
    public string? PinId { get; set; }
    /// <summary>prioritized: 0 (first) to 9.</summary>
    public int Priority { get; init; }
}
