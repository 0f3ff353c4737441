using NatsBroker.Gateways.Link;
using NatsBroker.Tls;

namespace NatsBroker.MqttGateway;

/// <summary>
/// <c>NatsBroker.MqttGateway -c FILE</c>: reads the same nats-server config file as the core (its <c>mqtt {}</c>
/// block and <c>unix_socket</c>) and serves MQTT 3.1.1 and 5 clients, each over its own link to the core
/// (command line and hosting: <see cref="GatewayProgram"/>).
/// </summary>
public static class Program
{
    public static int Main(string[] args) =>
        GatewayProgram.Main<MqttOptions, MqttService>(args, "NatsBroker.MqttGateway", "mqtt gateway", MqttConfig.Load,
            // -t reads the TLS certificate files as the start does (MqttService.OnStarting), so the check refuses them too.
            (tree, o) =>
            {
                if (o.Tls is { } tls) CertificateCheck.Run(tls, CertificateCheck.KeyPosition(tree, "mqtt", "tls"));
            });
}
