using NatsBroker.Gateways.Link;

namespace NatsBroker.TlsTerminator;

/// <summary>
/// <c>NatsBroker.TlsTerminator -c FILE</c>: reads the same nats-server config file as the core (its <c>tls {}</c>
/// block, host/port, <c>unix_socket</c>) and serves TLS clients, relaying them to the core
/// (command line and hosting: <see cref="GatewayProgram"/>).
/// </summary>
public static class Program
{
    public static int Main(string[] args) =>
        GatewayProgram.Main<TerminatorOptions, TerminatorService>(args, "NatsBroker.TlsTerminator", "tls-terminator", TerminatorConfig.Load);
}
