using System.Globalization;
using System.Net;
using NatsBroker.Bench.Infra;
using NatsBroker.Bench.Scenarios.Gateways;

namespace NatsBroker.Bench.Scenarios.Mqtt;

/// <summary>
/// An MQTT row whose "Go" column is Mosquitto (issue 13: "against nats-server's MQTT and Mosquitto 2.0.11 in the same
/// run"): on the "go" side the harness still starts nats-server (idle), and this starts <c>mosquitto -c CONF</c>
/// with <c>listener PORT 127.0.0.1</c>, <c>allow_anonymous true</c> and no persistence, routes the run's MQTT
/// connections there, and measures Mosquitto's CPU and RSS instead of nats-server's. Ours runs the inner row as is.
/// Rows that need NATS clients (NATS⇄MQTT) do not apply: Mosquitto speaks MQTT only.
/// </summary>
internal sealed class MosquittoScenario(IScenario inner, string name) : IScenario
{
    private static readonly string s_dir = BenchTemp.Dir("mosquitto");

    public string Name => name;

    public string Title => inner.Title + " (Go column = Mosquitto 2.0.11)";

    public string Generator => inner.Generator;

    public int PayloadBytes => inner.PayloadBytes;

    public bool NeedsJetStream => inner.NeedsJetStream;

    public bool ReportsLatency => inner.ReportsLatency;

    public long DefaultCount => inner.DefaultCount;

    /// <summary>Ours: the inner row's MQTT config; "go": a plain nats-server that only idles during the run.</summary>
    public IReadOnlyList<string> ServerArgsFor(string side) => side == "ours" ? inner.ServerArgsFor(side) : [];

    public ScenarioResult Run(ScenarioContext ctx)
    {
        if (ctx.Side != "ours")
        {
            string mosquitto = Harness.FindOnPath("mosquitto")
                ?? throw new NotSupportedByServerException("mosquitto not found on PATH or in /usr/sbin (Debian: sudo apt-get install mosquitto)");
            int port = ServerProcess.FreePort();
            string portText = port.ToString(CultureInfo.InvariantCulture);
            Directory.CreateDirectory(s_dir);
            string config = Path.Combine(s_dir, $"mosquitto-{portText}.conf");
            // max_queued_messages: the QoS 1 subscriber's backlog beyond the in-flight window; the publisher's window
            // (64) stays far below it, so nothing is dropped.
            File.WriteAllText(config, $"""
                listener {portText} 127.0.0.1
                allow_anonymous true
                persistence false
                max_connections -1
                log_dest stderr
                log_type error
                log_type warning

                """);
            var broker = BenchGateways.Start(mosquitto, ["-c", config]);
            ctx.Track(broker);
            var endpoint = new IPEndPoint(IPAddress.Loopback, port);
            BenchMqtt.WaitReady(endpoint, TimeSpan.FromSeconds(15), broker);
            ctx.UseMqtt(endpoint);
            ctx.MeasureProcess(broker.Pid);
        }

        return inner.Run(ctx);
    }
}
