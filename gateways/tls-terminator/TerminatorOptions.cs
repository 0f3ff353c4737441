using NatsBroker.Tls;

namespace NatsBroker.TlsTerminator;

/// <summary>
/// What the terminator serves, read from the shared nats-server config file (<see cref="TerminatorConfig"/>): the
/// top-level <c>tls {}</c> block (<see cref="TlsOptions"/>, shared with the other protocol gateways) and the
/// client port's top-level keys.
/// </summary>
public sealed class TerminatorOptions : TlsOptions, NatsBroker.Gateways.Link.IGatewayListenOptions
{
    public string Host { get; set; } = "0.0.0.0";
    /// <summary>Client port (nats-server's top-level port); -1 = random.</summary>
    public int Port { get; set; } = 4222;
    /// <summary>
    /// Top-level <c>allow_non_tls</c>: TLS offered, not required. INFO says <c>tls_available</c> instead of
    /// <c>tls_required</c>, and the client's first byte after it decides: a TLS handshake record, or plain NATS.
    /// </summary>
    public bool AllowNonTls { get; set; }
    /// <summary>Longest CONNECT line looked at (max_control_line); longer ones are passed on for the core to refuse.</summary>
    public int MaxControlLine { get; set; } = 4096;
    /// <summary>How long a stop waits for clients to drain.</summary>
    public TimeSpan DrainTimeout { get; set; } = TimeSpan.FromSeconds(10);

    /// <summary>
    /// <c>--relay-only</c> on the command line: serve plain NATS (no TLS) and only relay, to measure the gateway hop
    /// against a direct connection (bench/README.md). Not for production: the client's traffic is not encrypted.
    /// </summary>
    public bool RelayOnly { get; set; }
}
