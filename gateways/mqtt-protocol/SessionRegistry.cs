using System.Collections.Concurrent;

namespace NatsBroker.MqttGateway;

/// <summary>
/// The MQTT client IDs connected to this gateway process. [MQTT-3.1.4-2]: a second client with the same ID takes
/// the session over and the first is disconnected (nats-server also drops the first one's will:
/// mqttProcessConnect "Remove will of existing client before closing").
/// </summary>
internal sealed class SessionRegistry
{
    private readonly ConcurrentDictionary<string, MqttSession> _sessions = new(StringComparer.Ordinal);

    // Client IDs whose expired session the sweeper (SessionSweeper) is deleting. A sweep starts only for an ID with no
    // connection here, and a connection registering meanwhile waits for it (SweepOf) before it reads the session:
    // under one lock with Register, so one of the two always sees the other.
    private readonly Lock _sweepLock = new();
    private readonly Dictionary<string, TaskCompletionSource> _sweeping = new(StringComparer.Ordinal);

    /// <summary>Registers <paramref name="session"/> and returns the one it replaces, if any.</summary>
    public MqttSession? Register(string clientId, MqttSession session)
    {
        MqttSession? previous = null;
        lock (_sweepLock)
        {
            _sessions.AddOrUpdate(clientId, session, (_, old) =>
            {
                previous = old;
                return session;
            });
        }
        return previous;
    }

    /// <summary>Claims <paramref name="clientId"/> for a sweep: false while a connection has it (or another sweep does).</summary>
    public bool TryBeginSweep(string clientId)
    {
        lock (_sweepLock)
        {
            if (_sessions.ContainsKey(clientId) || _sweeping.ContainsKey(clientId)) return false;
            _sweeping[clientId] = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
            return true;
        }
    }

    public void EndSweep(string clientId)
    {
        TaskCompletionSource? done;
        lock (_sweepLock) _sweeping.Remove(clientId, out done);
        done?.TrySetResult();
    }

    /// <summary>Completes when no sweep of <paramref name="clientId"/> is under way.</summary>
    public Task SweepOf(string clientId)
    {
        lock (_sweepLock) return _sweeping.TryGetValue(clientId, out var done) ? done.Task : Task.CompletedTask;
    }

    /// <summary>Removes the entry only if it is still <paramref name="session"/> (not a later taker-over).</summary>
    public void Unregister(string clientId, MqttSession session) =>
        _sessions.TryRemove(new KeyValuePair<string, MqttSession>(clientId, session));

    public int Count => _sessions.Count;

    // Unacknowledged deliveries of persistent sessions whose connection ended, by client ID, until the client comes
    // back (MqttSession.Outbound.cs). An entry lives at most ack_wait: after that the JetStream consumers redeliver
    // the messages themselves, and a resend would only duplicate them; expired entries are swept at each Park. Each
    // entry is bounded by what its session had in flight (Receive Maximum / the consumers' max_ack_pending).
    private readonly ConcurrentDictionary<string, (long ParkedAt, KeyValuePair<ushort, MqttSession.Inflight>[] Inflight)> _parked = new(StringComparer.Ordinal);

    public void Park(string clientId, KeyValuePair<ushort, MqttSession.Inflight>[] inflight, TimeSpan keep)
    {
        long now = Environment.TickCount64;
        foreach (var (id, entry) in _parked)
        {
            if (now - entry.ParkedAt > keep.TotalMilliseconds) _parked.TryRemove(new(id, entry));
        }
        _parked[clientId] = (now, inflight);
    }

    public KeyValuePair<ushort, MqttSession.Inflight>[]? TakeParked(string clientId, TimeSpan keep) =>
        _parked.TryRemove(clientId, out var parked) && Environment.TickCount64 - parked.ParkedAt <= keep.TotalMilliseconds ? parked.Inflight : null;
}
