using NatsBroker.Bench.Scenarios.NatsNet;

namespace NatsBroker.Bench.Scenarios.Gateways;

/// <summary>
/// A raw-generator workload over TLS (issue 11): every connection of <paramref name="inner"/> reads the server's
/// plaintext INFO, does the TLS handshake and speaks NATS inside it (<see cref="Raw.TlsTransport"/>). Both servers
/// run the same <see cref="BenchTls"/> config: nats-server serves TLS in-process, ours through the tls-terminator the
/// core starts as a child, so our figures include the hop (and the terminator's CPU: the server's CPU columns count
/// its child processes). A generator written for the rows, not a client library, so that it is not the bottleneck
/// (the nn-tls rows' NATS.Net client is): compare its ns/msg with the servers'.
/// </summary>
internal sealed class TlsScenario(IScenario inner, string name) : IScenario
{
    public string Name => name;
    public string Title => inner.Title + ", TLS";
    public string Generator => inner.Generator;
    public int PayloadBytes => inner.PayloadBytes;
    public bool NeedsJetStream => false;
    public bool ReportsLatency => inner.ReportsLatency;
    public long DefaultCount => inner.DefaultCount;

    /// <summary>The same TLS config for both servers, as the nn-tls rows (the terminator listens on the client port).</summary>
    public IReadOnlyList<string> ServerArgs => ["-c", BenchTls.ConfigPath];

    public ScenarioResult Run(ScenarioContext ctx)
    {
        ctx.ConnectOverTls(BenchTls.CaFile);
        return inner.Run(ctx);
    }
}
