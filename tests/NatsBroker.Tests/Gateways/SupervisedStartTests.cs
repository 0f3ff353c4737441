using System.Diagnostics;
using System.Net;
using System.Net.Sockets;
using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Gateways;

/// <summary>
/// The start of a core that supervises gateways, as a client harness sees it: "Server is ready" (what NATS.Net's test
/// harness waits for before it connects) is logged only once the websocket and MQTT gateways accept on their ports, and
/// a gateway that cannot start (a block it refuses) ends the core with the reason instead of a restart loop.
/// </summary>
[Collection("Gateways")]
public sealed class SupervisedStartTests(ITestOutputHelper output)
{
    private static string WriteConfig(string body)
    {
        var path = Path.Combine(Path.GetTempPath(), $"supervised-start-{Guid.NewGuid():N}.conf");
        File.WriteAllText(path, body);
        return path;
    }

    private static Process Start(string config)
    {
        var psi = TestEnvironment.OursStartInfo("-a", "127.0.0.1", "-p", TestPorts.Next().ToString(System.Globalization.CultureInfo.InvariantCulture), "-c", config);
        psi.RedirectStandardError = true;
        return Process.Start(psi)!;
    }

    private static bool Accepts(int port)
    {
        using var s = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
        try
        {
            s.Connect(IPAddress.Loopback, port);
            return true;
        }
        catch (SocketException)
        {
            return false;
        }
    }

    [Fact]
    public async Task Server_is_ready_only_once_the_websocket_and_mqtt_gateways_accept()
    {
        int ws = TestPorts.Next(), mqtt = TestPorts.Next();
        var config = WriteConfig($"server_name: ready\njetstream {{ store_dir: \"{Path.Combine(Path.GetTempPath(), "ready-" + Guid.NewGuid().ToString("N"))}\" }}\n" +
            $"websocket {{ port: {ws}, no_tls: true }}\nmqtt {{ port: {mqtt} }}\n");
        using var p = Start(config);
        try
        {
            using var cts = new CancellationTokenSource(TimeSpan.FromSeconds(30));
            while (await p.StandardError.ReadLineAsync(cts.Token) is { } line)
            {
                output.WriteLine(line);
                if (!line.Contains("Server is ready", StringComparison.Ordinal)) continue;
                // At once, as the harness does: both gateway ports must accept already.
                Assert.True(Accepts(ws), "websocket port not accepting when the core said ready");
                Assert.True(Accepts(mqtt), "mqtt port not accepting when the core said ready");
                return;
            }
            Assert.Fail("the core exited without saying it is ready");
        }
        finally
        {
            if (!p.HasExited) p.Kill(entireProcessTree: true);
            File.Delete(config);
        }
    }

    /// <summary>
    /// A websocket block without tls {} or no_tls: the gateway refuses it as nats-server does ("websocket requires TLS
    /// configuration") and exits; the core then stops with that reason rather than restarting the gateway every few
    /// seconds while nothing serves the port.
    /// </summary>
    [Fact]
    public async Task A_gateway_that_cannot_start_ends_the_core_with_the_reason()
    {
        var config = WriteConfig($"websocket {{ host: 127.0.0.1, port: {TestPorts.Next()} }}\n");
        using var p = Start(config);
        try
        {
            var log = new System.Text.StringBuilder();
            var reading = Task.Run(async () =>
            {
                while (await p.StandardError.ReadLineAsync() is { } line) lock (log) log.AppendLine(line);
            });
            var deadline = DateTime.UtcNow.AddSeconds(30);
            while (!p.HasExited && DateTime.UtcNow < deadline) await Task.Delay(50);
            await Task.WhenAny(reading, Task.Delay(2000));
            string text;
            lock (log) text = log.ToString();
            output.WriteLine(text);
            Assert.True(p.HasExited, "the core is still running");
            Assert.Equal(1, p.ExitCode);
            Assert.Contains("websocket requires TLS configuration", text, StringComparison.Ordinal);
            // Refused by the gateway's check before the core bound anything (GatewayConfigCheckTests has the cases).
            Assert.DoesNotContain("Listening for", text, StringComparison.Ordinal);
            Assert.DoesNotContain("Server is ready", text, StringComparison.Ordinal);
            Assert.DoesNotContain("restarting in", text, StringComparison.Ordinal);
        }
        finally
        {
            if (!p.HasExited) p.Kill(entireProcessTree: true);
            File.Delete(config);
        }
    }
}
