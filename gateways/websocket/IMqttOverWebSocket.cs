namespace NatsBroker.WebSocketGateway;

/// <summary>
/// The seam for MQTT over WebSocket (<c>/mqtt</c> path, <c>mqtt</c> subprotocol): after the upgrade, the session
/// hands the MQTT bytes (unframed, as a stream) to the MQTT gateway's session logic. The MQTT gateway is a later
/// issue: until an implementation is registered, <c>/mqtt</c> upgrades are refused with an HTTP error before the
/// upgrade, so a browser MQTT client sees a clean failure instead of a half-working connection.
/// </summary>
public interface IMqttOverWebSocket
{
    /// <summary>Runs one MQTT client over <paramref name="client"/> (reads and writes are whole MQTT bytes) until it ends.</summary>
    Task RunAsync(Stream client, string remoteIp, int remotePort, CancellationToken drain);
}
