using System.Text.Json.Nodes;
using MQTTnet.Packets;

namespace NatsBroker.MqttGateway;

/// <summary>
/// How long a session outlives its connection. MQTT 3.1.1: Clean Session 0 keeps it for ever, 1 not at all.
/// MQTT 5 separates the two (section 3.1.2.4 and 3.1.2.11.2): Clean Start only discards an existing session at
/// CONNECT, and the Session Expiry Interval (CONNECT, changed by DISCONNECT [MQTT-3.14.2-2]) says how many seconds
/// the session is kept after the connection closes (0: not kept, 0xFFFFFFFF: for ever). The stored record carries
/// <c>"expires"</c> (Unix milliseconds) while no connection has it; a session found past it is deleted instead of
/// resumed (here, or by the <see cref="SessionSweeper"/> when nobody reconnects).
/// </summary>
internal sealed partial class MqttSession
{
    /// <summary>Seconds the session is kept after the connection closes (uint.MaxValue: never expires).</summary>
    private uint _sessionExpiry;
    /// <summary>CONNECT's Clean Session (3.1.1) / Clean Start (5) flag.</summary>
    private bool _cleanStart;

    private static uint SessionExpiryOf(MqttConnectPacket connect, bool v5) =>
        v5 ? connect.SessionExpiryInterval : connect.CleanSession ? 0 : uint.MaxValue;

    private static bool Expired(JsonObject stored) =>
        stored["expires"] is JsonNode at && at.GetValue<long>() <= DateTimeOffset.UtcNow.ToUnixTimeMilliseconds();

    /// <summary>
    /// A DISCONNECT's Session Expiry Interval (read from its body: 0 is a value, absent means "as in CONNECT")
    /// replaces the CONNECT's, except that a session that was not to be kept cannot be made to outlive the connection
    /// ([MQTT-3.14.2-2]: a protocol error; the value is ignored).
    /// </summary>
    private void OnDisconnectExpiry(ReadOnlySpan<byte> body)
    {
        if (!_v5 || body.Length < 2) return;
        if (!Mqtt5Properties.TryFind(Mqtt5Properties.Block(body, 1), Mqtt5Properties.SessionExpiryInterval, out uint expiry)) return;
        if (_sessionExpiry == 0 && expiry > 0) return;
        _sessionExpiry = expiry;
    }

    /// <summary>
    /// The connection ended (not by a takeover): a kept session's record gets its expiry time; a session that is not
    /// kept (expiry 0) but was resumed from storage is deleted now, consumers and record. <paramref name="closedAt"/>
    /// (Unix ms) is when the client loop ended, where the expiry time starts.
    /// </summary>
    private async Task EndSessionAsync(long closedAt, CancellationToken ct)
    {
        if (_js is null || _cleanSession) return;
        if (_sessionExpiry == 0)
        {
            foreach (var subject in _durables.Keys.ToList()) await DeleteDurableAsync(subject, ct).ConfigureAwait(false);
            await _js.RequestAsync("$JS.API.STREAM.PURGE." + JetStreamApi.SessionStream, new JsonObject { ["filter"] = SessionSubject }, ct).ConfigureAwait(false);
            return;
        }
        if (_sessionExpiry == uint.MaxValue) return; // the record saved while connected never expires
        await SaveSessionAsync(ct, closedAt + _sessionExpiry * 1000L).ConfigureAwait(false);
        RememberForSweep();
    }

    /// <summary>The sweeper learns how to reach this client's account (the latest client of an account wins).</summary>
    private void RememberForSweep()
    {
        if (_sweeper is not null && _connectFieldsJson is not null && _proxiedClient is not null
            && JsonNode.Parse(_connectFieldsJson) is JsonObject connectFields)
        {
            _sweeper.Remember(_username, connectFields, _proxiedClient);
        }
    }
}
