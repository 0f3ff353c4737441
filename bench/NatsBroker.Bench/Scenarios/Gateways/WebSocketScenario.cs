using NatsBroker.Bench.Scenarios.NatsNet;

namespace NatsBroker.Bench.Scenarios.Gateways;

/// <summary>
/// A raw-generator workload over WebSocket (issue 12): every connection of <paramref name="inner"/> upgrades on the
/// server's <c>websocket {}</c> port and speaks NATS in masked binary frames (<see cref="Raw.WebSocketTransport"/>).
/// nats-server serves it in-process; ours through the websocket gateway the core supervises, so our figures include
/// the hop (and the gateway's CPU: the server's CPU columns count its child processes). A generator written for
/// the rows, not a client library, so that it is not the bottleneck: compare its ns/msg with the servers'.
/// </summary>
internal sealed class WebSocketScenario(IScenario inner, string name) : IScenario
{
    public string Name => name;
    public string Title => inner.Title + ", WebSocket";
    public string Generator => inner.Generator;
    public int PayloadBytes => inner.PayloadBytes;
    public bool NeedsJetStream => false;
    public bool ReportsLatency => inner.ReportsLatency;
    public long DefaultCount => inner.DefaultCount;

    /// <summary>A new config (a new port) for every server start, as the NATS.Net WebSocket rows.</summary>
    public IReadOnlyList<string> ServerArgsFor(string side) => ["-c", BenchWebSocket.NextConfig()];

    public ScenarioResult Run(ScenarioContext ctx)
    {
        // Ours serves ws:// from a gateway the core starts as a child: the core's port answering does not mean it is up.
        BenchGateways.WaitWebSocketReady(BenchWebSocket.Endpoint, TimeSpan.FromSeconds(15));
        ctx.ConnectOverWebSocket(BenchWebSocket.Endpoint);
        return inner.Run(ctx);
    }
}
