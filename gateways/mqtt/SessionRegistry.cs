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

    /// <summary>Registers <paramref name="session"/> and returns the one it replaces, if any.</summary>
    public MqttSession? Register(string clientId, MqttSession session)
    {
        MqttSession? previous = null;
        _sessions.AddOrUpdate(clientId, session, (_, old) =>
        {
            previous = old;
            return session;
        });
        return previous;
    }

    /// <summary>Removes the entry only if it is still <paramref name="session"/> (not a later taker-over).</summary>
    public void Unregister(string clientId, MqttSession session) =>
        _sessions.TryRemove(new KeyValuePair<string, MqttSession>(clientId, session));

    public int Count => _sessions.Count;
}
