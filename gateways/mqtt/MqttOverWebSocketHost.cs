using System.Net.Sockets;
using Microsoft.Extensions.Logging;
using NatsBroker.Gateways.Link;

namespace NatsBroker.MqttGateway;

/// <summary>
/// MQTT over WebSocket (nats-server serves it on its websocket port, path <c>/mqtt</c>, subprotocol <c>mqtt</c>):
/// the websocket gateway upgrades the connection and hands the unframed MQTT bytes here, so the same session logic
/// serves MQTT clients whether they come over TCP or WebSocket. Sessions use the config's <c>mqtt {}</c> block; a
/// client ID taken over is only seen within one process (each process has its own registry).
/// </summary>
public sealed class MqttOverWebSocketHost(MqttOptions options, GatewayEnvironment link, ProxySigner signer, ILogger log)
{
    private readonly SessionRegistry _registry = new();

    /// <summary>Runs one MQTT client whose bytes travel in <paramref name="messages"/> until it ends.</summary>
    public Task RunAsync(Socket socket, Stream messages, CancellationToken drain) =>
        new MqttSession(socket, options, certificates: null, link, signer, _registry, log).RunAsync(messages, drain);
}
