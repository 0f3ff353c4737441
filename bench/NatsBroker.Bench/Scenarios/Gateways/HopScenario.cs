using System.Globalization;
using System.Net;
using NatsBroker.Bench.Infra;

namespace NatsBroker.Bench.Scenarios.Gateways;

/// <summary>
/// A raw-generator workload with one relay hop in front of the server, to measure what a gateway hop costs
/// (issue 11: "plain NATS through a gateway that only relays vs straight to the core").
/// <list type="bullet">
/// <item>ours: clients → our tls-terminator in <c>--relay-only</c> mode (plain NATS, TCP in, one Unix-socket link
/// per client to the core) → the core, started with <c>--unix_socket</c>.</item>
/// <item>Go: clients → <c>socat</c> (a plain TCP relay, one process, a child per connection) → nats-server.</item>
/// </list>
/// So the ratio is our core with our hop against nats-server behind a plain TCP relay; the same run's direct rows
/// (<c>pub-128</c>, <c>pubsub-16k</c>, <c>reqrep-128</c>) give each side without a hop, and the differences are the
/// hops' costs. The CPU columns count the server only, not the relay.
/// </summary>
internal sealed class HopScenario(IScenario inner, string name) : IScenario
{
    public string Name => name;
    public string Title => inner.Title + ", through a relay hop";
    public string Generator => inner.Generator;
    public int PayloadBytes => inner.PayloadBytes;
    public bool NeedsJetStream => false;
    public bool ReportsLatency => inner.ReportsLatency;
    public long DefaultCount => inner.DefaultCount;

    public IReadOnlyList<string> ServerArgsFor(string side) => side == "ours" ? ["--unix_socket", BenchGateways.CoreSocket] : [];

    public ScenarioResult Run(ScenarioContext ctx)
    {
        int port = ServerProcess.FreePort();
        var relayEndpoint = new IPEndPoint(IPAddress.Loopback, port);
        string portText = port.ToString(CultureInfo.InvariantCulture);
        RelayProcess relay;
        if (ctx.Side == "ours")
        {
            string terminator = BenchGateways.Terminator(ctx.RepoRoot);
            if (terminator.EndsWith(".dll", StringComparison.Ordinal) && !File.Exists(terminator))
                throw new InvalidOperationException($"{terminator} is missing: build the solution (dotnet build NatsBroker.slnx -c Release)");
            string config = BenchTemp.File("hop.conf");
            File.WriteAllText(config, "# relay-only gateway for the hop rows\n");
            var args = new List<string>();
            string file = terminator;
            if (terminator.EndsWith(".dll", StringComparison.Ordinal))
            {
                file = "dotnet";
                args.Add(terminator);
            }
            args.AddRange(["-c", config, "--relay-only", "-a", "127.0.0.1", "-p", portText]);
            relay = BenchGateways.Start(file, args, new Dictionary<string, string>
            {
                ["NATSBROKER_CORE_SOCKET"] = BenchGateways.CoreSocket,
                ["NATSBROKER_GATEWAY_SEED"] = BenchGateways.Seed,
            });
        }
        else
        {
            relay = BenchGateways.Start("socat", [$"TCP-LISTEN:{portText},bind=127.0.0.1,reuseaddr,fork,nodelay", $"TCP:127.0.0.1:{ctx.Endpoint.Port},nodelay"]);
        }
        ctx.Track(relay);
        BenchGateways.WaitReady(relayEndpoint, TimeSpan.FromSeconds(15), relay);
        ctx.RouteThrough(relayEndpoint);
        return inner.Run(ctx);
    }
}
