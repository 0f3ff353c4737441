using System.Globalization;
using System.Net;
using NatsBroker.Bench.Infra;

namespace NatsBroker.Bench.Scenarios.NatsNet;

/// <summary>
/// The WebSocket rows' config: <c>websocket { host, port, no_tls: true }</c>, a new file with a new free port for
/// every run (a killed server's gateway child may still hold the last port for a moment). Both servers get the same
/// kind of file: nats-server serves WebSocket in-process, ours starts its websocket gateway as a supervised child
/// (gateways/README.md), so our rows include the hop. Runs are sequential: <see cref="Endpoint"/> is the current run's.
/// </summary>
internal static class BenchWebSocket
{
    private static readonly string s_dir = BenchTemp.Dir("ws");
    private static int s_port;

    public static IPEndPoint Endpoint => new(IPAddress.Loopback, s_port);

    public static string Url => "ws://127.0.0.1:" + s_port.ToString(CultureInfo.InvariantCulture);

    /// <summary>Writes the config for the next run and makes its port current.</summary>
    public static string NextConfig()
    {
        Directory.CreateDirectory(s_dir);
        s_port = ServerProcess.FreePort();
        string port = s_port.ToString(CultureInfo.InvariantCulture);
        string config = Path.Combine(s_dir, $"ws-{port}.conf");
        File.WriteAllText(config, $"websocket {{\n  host: \"127.0.0.1\"\n  port: {port}\n  no_tls: true\n}}\n");
        return config;
    }
}
