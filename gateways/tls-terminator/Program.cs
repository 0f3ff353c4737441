using NatsBroker.Gateways.Link;
using NatsBroker.Tls;

namespace NatsBroker.TlsTerminator;

/// <summary>
/// <c>NatsBroker.TlsTerminator -c FILE</c>: reads the same nats-server config file as the core (its <c>tls {}</c>
/// block, host/port, <c>unix_socket</c>) and serves TLS clients, relaying them to the core
/// (command line and hosting: <see cref="GatewayProgram"/>).
/// </summary>
public static class Program
{
    /// <summary>Our flag on top of GatewayProgram's: plain NATS, relay only (<see cref="TerminatorOptions.RelayOnly"/>).</summary>
    public const string RelayOnlyFlag = "--relay-only";

    public static int Main(string[] args)
    {
        ArgumentNullException.ThrowIfNull(args);
        bool relayOnly = args.Contains(RelayOnlyFlag);
        return GatewayProgram.Main<TerminatorOptions, TerminatorService>([.. args.Where(a => a != RelayOnlyFlag)], "NatsBroker.TlsTerminator", "tls-terminator",
            tree => TerminatorConfig.Load(tree, relayOnly),
            // -t reads the certificate files as the start does (TerminatorService.OnStarting), so the check refuses them too.
            (tree, o) =>
            {
                if (!o.RelayOnly) CertificateCheck.Run(o, CertificateCheck.KeyPosition(tree, "tls"));
            });
    }
}
