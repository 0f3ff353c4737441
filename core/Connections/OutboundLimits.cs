namespace NatsBroker.Connections;

/// <summary>
/// The outbound limits a reload may change (max_pending, write_deadline), shared by the connections of one kind and
/// updated in place on reload, so the per-message path reads a field instead of the options (client.go reads
/// c.out.mp and c.out.wdl, set from the options when the client is created and on reload).
/// </summary>
public sealed class OutboundLimits
{
    private long _maxPending;
    private long _writeDeadlineMs;

    public OutboundLimits(long maxPending, TimeSpan writeDeadline) => Apply(maxPending, writeDeadline);

    /// <summary>Bytes queued past which a connection is a slow consumer.</summary>
    public long MaxPending => Volatile.Read(ref _maxPending);

    /// <summary>How long one write may take before the connection is a slow consumer (milliseconds).</summary>
    public long WriteDeadlineMs => Volatile.Read(ref _writeDeadlineMs);

    public void Apply(long maxPending, TimeSpan writeDeadline)
    {
        Volatile.Write(ref _maxPending, maxPending);
        Volatile.Write(ref _writeDeadlineMs, (long)writeDeadline.TotalMilliseconds);
    }
}
