using NatsBroker.Gateways.Link;
using NatsBroker.Tls;

namespace NatsBroker.WebSocketGateway;

/// <summary>
/// <c>NatsBroker.WebSocketGateway -c FILE</c>: reads the same nats-server config file as the core (its
/// <c>websocket {}</c> block and <c>unix_socket</c>) and serves NATS over WebSocket, relaying to the core
/// (command line and hosting: <see cref="GatewayProgram"/>).
/// </summary>
public static class Program
{
    public static int Main(string[] args) =>
        GatewayProgram.Main<WebSocketOptions, WebSocketService>(args, "NatsBroker.WebSocketGateway", "websocket gateway", WebSocketConfig.Load,
            // -t reads the wss certificate files as the start does (WebSocketService), so the check refuses them too.
            (tree, o) =>
            {
                if (o.Tls is { } tls)
                    CertificateCheck.Run(tls, CertificateCheck.KeyPosition(tree, "websocket", "tls") ?? CertificateCheck.KeyPosition(tree, "ws", "tls"));
            });
}
