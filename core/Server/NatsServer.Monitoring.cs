using System.Diagnostics;
using System.Text;
using NatsBroker.Connections;
using NatsBroker.Subscriptions;

namespace NatsBroker.Server;

/// <summary>Read-only accessors for the HTTP monitoring endpoints (core/Monitoring). Nothing here is on a message path.</summary>
public sealed partial class NatsServer
{
    private DateTime _configLoadTime;
    private readonly Lock _usageLock = new();
    private TimeSpan _lastCpuTime;
    private long _lastCpuSampleTicks;
    private double _lastCpuPercent;

    /// <summary>When the configuration was last (re)loaded: the start time until a reload (varz config_load_time).</summary>
    public DateTime ConfigLoadTime
    {
        get => _configLoadTime == default ? StartTime : _configLoadTime;
        private set => _configLoadTime = value;
    }

    /// <summary>Whether clients must authenticate (varz auth_required).</summary>
    public bool AuthRequired => _auth.AuthRequired;

    /// <summary>Proxy keys this process made for the gateways it supervises (varz connected_gateways).</summary>
    public IReadOnlyList<string> SupervisedProxyKeys => TrustedProxyKeys.Snapshot();

    /// <summary>Open connections by id (for /connz?cid=).</summary>
    public ClientConnection? FindClient(ulong cid) => _clients.TryGetValue(cid, out var c) ? c : null;

    /// <summary>
    /// Resident memory in bytes and CPU use in percent of one core, averaged since the previous sample (sampled at
    /// most once a second, as nats-server's pse package does; the first sample averages over the process lifetime).
    /// </summary>
    public (long Rss, double CpuPercent) ProcessUsage()
    {
        using var p = Process.GetCurrentProcess();
        long rss = p.WorkingSet64;
        var cpu = p.TotalProcessorTime;
        long now = Environment.TickCount64;
        lock (_usageLock)
        {
            if (_lastCpuSampleTicks == 0)
            {
                var wall = DateTime.Now - p.StartTime;
                _lastCpuPercent = wall.TotalMilliseconds > 0 ? cpu.TotalMilliseconds / wall.TotalMilliseconds * 100 : 0;
                _lastCpuTime = cpu;
                _lastCpuSampleTicks = now;
            }
            else if (now - _lastCpuSampleTicks >= 1000)
            {
                _lastCpuPercent = (cpu - _lastCpuTime).TotalMilliseconds / (now - _lastCpuSampleTicks) * 100;
                _lastCpuTime = cpu;
                _lastCpuSampleTicks = now;
            }
            return (rss, Math.Round(_lastCpuPercent, 1));
        }
    }
}

public sealed partial class ClientConnection
{
    /// <summary>The subscriptions held when the connection closed; null while open.</summary>
    internal List<Subscription>? FinalSubscriptions { get; private set; }

    /// <summary>Round-trip time of the first server PING answered (connz rtt); zero until measured.</summary>
    public TimeSpan Rtt => _conn.KeepAlive.Rtt;
}

/// <summary>A copy of one subscription's monitoring fields (subject, queue, sid, delivered count, auto-unsub max, owner cid).</summary>
public sealed record SubscriptionSnapshot(string Subject, string? Queue, string Sid, long Msgs, long Max, ulong Cid)
{
    public static SubscriptionSnapshot From(Subscription s) => new(
        Encoding.UTF8.GetString(s.Subject), s.Queue is null ? null : Encoding.UTF8.GetString(s.Queue),
        Encoding.UTF8.GetString(s.Sid), Volatile.Read(ref s.Delivered), s.MaxMessages, (s.Owner as ClientConnection)?.Id ?? 0);

    public static IReadOnlyList<SubscriptionSnapshot> Of(IReadOnlyList<Subscription>? subs)
    {
        if (subs is null || subs.Count == 0) return [];
        var list = new SubscriptionSnapshot[subs.Count];
        for (int i = 0; i < list.Length; i++) list[i] = From(subs[i]);
        return list;
    }
}

public static class CloseReasonText
{
    /// <summary>The text nats-server shows for a closed connection's reason (server/monitor.go ClosedState.String).</summary>
    public static string ToNatsString(this CloseReason reason) => reason switch
    {
        CloseReason.ClientClosed => "Client Closed",
        CloseReason.ServerShutdown => "Server Shutdown",
        CloseReason.ProtocolViolation => "Protocol Violation",
        CloseReason.ParseError => "Parse Error",
        CloseReason.AuthenticationViolation => "Authentication Failure",
        CloseReason.AuthenticationTimeout => "Authentication Timeout",
        CloseReason.SlowConsumerPendingBytes => "Slow Consumer (Pending Bytes)",
        CloseReason.SlowConsumerWriteDeadline => "Slow Consumer (Write Deadline)",
        CloseReason.StaleConnection => "Stale Connection",
        CloseReason.MaxPayloadExceeded => "Maximum Message Payload Exceeded",
        CloseReason.MaxControlLineExceeded => "Maximum Control Line Exceeded",
        CloseReason.MaxConnectionsExceeded => "Maximum Connections Exceeded",
        CloseReason.BadClientProtocolVersion => "Bad Client Protocol Version",
        CloseReason.NoRespondersRequiresHeaders => "No Responders Requires Headers",
        CloseReason.ReadError => "Read Error",
        CloseReason.WriteError => "Write Error",
        // nats-server closes lame-duck clients with ServerShutdown.
        CloseReason.LameDuck => "Server Shutdown",
        // nats-server 2.12 (ADR-55).
        CloseReason.ProxyNotTrusted => "Proxy Not Trusted",
        CloseReason.ProxyRequired => "Proxy Required",
        CloseReason.AuthenticationExpired => "Authentication Expired",
        CloseReason.Revocation => "Credentials Revoked",
        CloseReason.DuplicateRoute => "Duplicate Route",
        CloseReason.RouteRemoved => "Route Removed",
        CloseReason.ClusterNameConflict => "Cluster Name Conflict",
        CloseReason.DuplicateServerName => "Duplicate Server Name",
        CloseReason.WrongPort => "Incorrect Port",
        CloseReason.WrongGateway => "Wrong Gateway",
        _ => "Unknown State",
    };
}
