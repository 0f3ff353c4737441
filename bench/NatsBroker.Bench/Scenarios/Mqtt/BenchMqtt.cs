using System.Diagnostics;
using System.Globalization;
using System.Net;
using System.Net.Sockets;
using NatsBroker.Bench.Infra;
using NatsBroker.Bench.Scenarios.Gateways;

namespace NatsBroker.Bench.Scenarios.Mqtt;

/// <summary>
/// What the MQTT rows share: the server config (<c>server_name</c>, which nats-server 2.9.10 requires for MQTT with
/// JetStream, and <c>mqtt { host, port }</c> with a new free port per run; the harness adds <c>-js -sd DIR</c>),
/// where our MQTT gateway is, a bounded readiness probe, and client connections tracked by the run. Runs are
/// sequential: <see cref="Endpoint"/> is the current run's port.
/// </summary>
internal static class BenchMqtt
{
    private static readonly string s_dir = BenchTemp.Dir("mqtt");
    private static int s_port;

    public static IPEndPoint Endpoint => new(IPAddress.Loopback, s_port);

    /// <summary>Writes the config for the next server start and makes its MQTT port current.</summary>
    public static string NextConfig()
    {
        Directory.CreateDirectory(s_dir);
        s_port = ServerProcess.FreePort();
        string port = s_port.ToString(CultureInfo.InvariantCulture);
        string config = Path.Combine(s_dir, $"mqtt-{port}.conf");
        File.WriteAllText(config, $"server_name: bench\nmqtt {{\n  host: \"127.0.0.1\"\n  port: {port}\n}}\n");
        return config;
    }

    /// <summary>Our MQTT gateway as the core finds it: $NATSBROKER_MQTT_GATEWAY, else the repository's Release build.</summary>
    public static string Gateway(string repoRoot) =>
        Environment.GetEnvironmentVariable("NATSBROKER_MQTT_GATEWAY") is { Length: > 0 } p ? p
            : Path.Combine(repoRoot, "gateways", "mqtt", "bin", "Release", "net10.0", "NatsBroker.MqttGateway.dll");

    /// <summary>
    /// The run's MQTT endpoint: the one a decorator chose (Mosquitto), else the server's <c>mqtt {}</c> port once it
    /// completes a CONNECT (ours serves MQTT from a gateway the core starts as a child, so the core's port answering
    /// does not mean MQTT is up).
    /// </summary>
    public static IPEndPoint Prepare(ScenarioContext ctx)
    {
        if (ctx.MqttEndpoint is { } chosen)
        {
            return chosen;
        }

        if (ctx.Side == "ours")
        {
            string gateway = Gateway(ctx.RepoRoot);
            if (!File.Exists(gateway))
            {
                throw new InvalidOperationException($"{gateway} is missing: build the MQTT gateway (dotnet build gateways/mqtt -c Release) or set NATSBROKER_MQTT_GATEWAY");
            }
        }

        WaitReady(Endpoint, TimeSpan.FromSeconds(20));
        ctx.UseMqtt(Endpoint);
        return Endpoint;
    }

    /// <summary>Waits (bounded) until a client gets a CONNACK on <paramref name="endpoint"/>.</summary>
    public static void WaitReady(IPEndPoint endpoint, TimeSpan timeout, RelayProcess? process = null)
    {
        var sw = Stopwatch.StartNew();
        Exception? last = null;
        while (sw.Elapsed < timeout)
        {
            if (process is not null && process.HasExited)
            {
                throw new InvalidOperationException("broker exited at startup: " + process.Log);
            }

            try
            {
                using var probe = MqttConnection.Connect(endpoint, "bench-ready-" + Guid.NewGuid().ToString("N")[..8], TimeSpan.FromSeconds(2));
                probe.Send(MqttPackets.Disconnect);
                return;
            }
            catch (Exception ex) when (ex is SocketException or IOException or InvalidDataException or ObjectDisposedException)
            {
                last = ex;
            }

            Thread.Sleep(20);
        }

        throw new TimeoutException($"MQTT port {endpoint} not ready after {timeout.TotalSeconds:0} s ({last?.Message}) {process?.Log}");
    }

    /// <summary>An MQTT connection of this run (client ID unique per run), closed when the run ends or times out.</summary>
    public static MqttConnection Connect(ScenarioContext ctx, string name, int readBuffer = 64 * 1024)
    {
        ctx.ThrowIfFailed();
        var ep = ctx.MqttEndpoint ?? throw new InvalidOperationException("no MQTT endpoint: call BenchMqtt.Prepare first");
        var c = MqttConnection.Connect(ep, "bench-" + ctx.RunId + "-" + name, TimeSpan.FromSeconds(10), readBuffer);
        ctx.Track(c);
        return c;
    }
}
