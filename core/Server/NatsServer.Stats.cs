using NatsBroker.Connections;

namespace NatsBroker.Server;

public sealed partial class NatsServer
{
    private long _totalConnections;
    private long _slowConsumers;
    private long _staleConnections;
    private long _stalls;
    // Totals of connections that have closed; live connections are summed on demand (monitoring is rare,
    // publishing is not, so the hot path only touches per-connection counters).
    private long _closedInMsgs, _closedInBytes, _closedOutMsgs, _closedOutBytes;
    private readonly Lock _closedLock = new();
    private readonly LinkedList<ClosedClientInfo> _closedClients = new();
    private const int ClosedClientsKept = 10_000;

    public long TotalConnections => Interlocked.Read(ref _totalConnections);
    public long SlowConsumers => Interlocked.Read(ref _slowConsumers);

    /// <summary>Connections closed as stale since start (/varz stale_connections); counted when the close is recorded.</summary>
    public long StaleConnections => Interlocked.Read(ref _staleConnections);

    internal void CountSlowConsumer() => Interlocked.Increment(ref _slowConsumers);

    /// <summary>Fast-producer stalls since start (/varz stalled_clients, nats-server s.stalls).</summary>
    public long StalledClients => Interlocked.Read(ref _stalls);

    internal void CountStall() => Interlocked.Increment(ref _stalls);

    public (long InMsgs, long InBytes, long OutMsgs, long OutBytes) MessageTotals()
    {
        long im, ib, om, ob;
        lock (_closedLock) { im = _closedInMsgs; ib = _closedInBytes; om = _closedOutMsgs; ob = _closedOutBytes; }
        foreach (var c in _clients.Values)
        {
            im += c.InMsgs; ib += c.InBytes;
            om += c.OutMsgs; ob += c.OutBytes;
        }
        return (im, ib, om, ob);
    }

    public IReadOnlyList<ClosedClientInfo> ClosedClients()
    {
        lock (_closedLock) return [.. _closedClients];
    }

    private void RecordClosed(ClientConnection c)
    {
        if (c.ClosedReason == CloseReason.StaleConnection) Interlocked.Increment(ref _staleConnections);
        lock (_closedLock)
        {
            _closedInMsgs += c.InMsgs; _closedInBytes += c.InBytes;
            _closedOutMsgs += c.OutMsgs; _closedOutBytes += c.OutBytes;
            _closedClients.AddLast(new ClosedClientInfo(c.Id, c.RemoteIp, c.RemotePort, c.ConnectedAt, c.ClosedAt ?? DateTime.UtcNow,
                c.Connect?.Name, c.Connect?.Lang, c.Connect?.Version, c.AuthorizedUser, c.InMsgs, c.InBytes, c.OutMsgs, c.OutBytes,
                (c.ClosedReason ?? CloseReason.ClientClosed).ToNatsString())
            {
                LastActivity = c.LastActivity,
                Account = c.Account.Name,
                Subscriptions = SubscriptionSnapshot.Of(c.FinalSubscriptions),
            });
            if (_closedClients.Count > ClosedClientsKept) _closedClients.RemoveFirst();
        }
    }
}

/// <summary>A closed connection as /connz?state=closed reports it.</summary>
public sealed record ClosedClientInfo(ulong Cid, string Ip, int Port, DateTime Start, DateTime Stop, string? Name, string? Lang,
    string? Version, string? User, long InMsgs, long InBytes, long OutMsgs, long OutBytes, string Reason)
{
    public DateTime LastActivity { get; init; }
    /// <summary>The account the connection was bound to.</summary>
    public string? Account { get; init; }
    /// <summary>The subscriptions the connection held when it closed (for /connz?state=closed&amp;subs=1).</summary>
    public IReadOnlyList<SubscriptionSnapshot> Subscriptions { get; init; } = [];
}
