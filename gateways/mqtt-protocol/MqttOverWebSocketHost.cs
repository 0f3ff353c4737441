using System.Net.Sockets;
using Microsoft.Extensions.Logging;
using NatsBroker.Gateways.Link;

namespace NatsBroker.MqttGateway;

/// <summary>
/// MQTT over WebSocket (nats-server serves it on its websocket port, path <c>/mqtt</c>, subprotocol <c>mqtt</c>):
/// the websocket gateway upgrades the connection and hands the unframed MQTT bytes here, so the same session logic
/// serves MQTT clients whether they come over TCP or WebSocket. Sessions use the config's <c>mqtt {}</c> block; a
/// client ID taken over is only seen within one process (each process has its own registry), and this process's
/// own <see cref="SessionSweeper"/> deletes the expired sessions of the accounts its clients belong to.
/// </summary>
public sealed class MqttOverWebSocketHost : IDisposable
{
    private readonly MqttOptions _options;
    private readonly GatewayEnvironment _link;
    private readonly ProxySigner _signer;
    private readonly ILogger _log;
    private readonly SessionRegistry _registry = new();
    private readonly SessionSweeper _sweeper;
    private readonly EnhancedAuth _enhancedAuth;

    public MqttOverWebSocketHost(MqttOptions options, GatewayEnvironment link, ProxySigner signer, ILogger log)
    {
        _options = options;
        _link = link;
        _signer = signer;
        _log = log;
        _sweeper = new SessionSweeper(options, link, signer, _registry, log);
        _sweeper.Start();
        _enhancedAuth = new EnhancedAuth(options, link, signer, log);
    }

    /// <summary>Runs one MQTT client whose bytes travel in <paramref name="messages"/> until it ends.</summary>
    public Task RunAsync(Socket socket, Stream messages, CancellationToken drain) =>
        new MqttSession(socket, _options, certificates: null, _link, _signer, _registry, _log, _sweeper, _enhancedAuth).RunAsync(messages, drain);

    public void Dispose()
    {
        _sweeper.Dispose();
        _enhancedAuth.Dispose();
    }
}
