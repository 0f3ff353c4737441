using System.Text.RegularExpressions;
using NATS.Client.Core;
using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Gateways;

/// <summary>
/// The gateways a core starts from its config (tls {} and websocket {}) live and die with it: a core stopped with
/// SIGTERM stops them, and a core that is killed (it cannot stop them) leaves no orphan holding the client ports,
/// so the same config starts again and serves (gateways/link SupervisorWatch).
/// </summary>
[Collection("Gateways")]
public sealed partial class SupervisedLifetimeTests(ITestOutputHelper output) : IDisposable
{
    private readonly TestPki _pki = new();

    public void Dispose() => _pki.Dispose();

    private string Config(int wsPort) =>
        $$"""
        tls {
          cert_file: "{{_pki.ServerCert}}"
          key_file: "{{_pki.ServerKey}}"
        }
        websocket {
          port: {{wsPort}}
          no_tls: true
        }
        """;

    private async Task<(ServerProcess Server, int WsPort, int[] Children)> StartAsync(int? port = null, int? wsPort = null)
    {
        int ws = wsPort ?? TestPorts.Next();
        var server = await ServerProcess.StartAsync(ServerKind.Ours,
            new ServerStartOptions { Config = Config(ws), Port = port ?? TestPorts.Next() }, output);
        await GatewayTestHelpers.WaitListeningAsync(server.Port);
        await GatewayTestHelpers.WaitListeningAsync(ws);
        var children = await ChildrenAsync(server, 2);
        return (server, ws, children);
    }

    /// <summary>The pids the core logged for its started gateways, once <paramref name="count"/> are known.</summary>
    private static async Task<int[]> ChildrenAsync(ServerProcess server, int count)
    {
        var deadline = DateTime.UtcNow.AddSeconds(30);
        while (true)
        {
            var pids = StartedLine().Matches(server.Output)
                .Select(m => int.Parse(m.Groups[1].Value, System.Globalization.CultureInfo.InvariantCulture)).Distinct().ToArray();
            if (pids.Length >= count) return pids;
            if (DateTime.UtcNow > deadline) throw new InvalidOperationException("gateways not started:\n" + server.OutputTail());
            await Task.Delay(50);
        }
    }

    /// <summary>Running and not a zombie (an orphan's zombie is reaped by init, which a container may not run).</summary>
    private static bool IsRunning(int pid)
    {
        try
        {
            var stat = File.ReadAllText($"/proc/{pid}/stat");
            // pid (comm) state ...: comm may contain spaces and parentheses, the state follows the last ')'.
            char state = stat[stat.LastIndexOf(')') + 2];
            return state is not ('Z' or 'X');
        }
        catch (Exception e) when (e is FileNotFoundException or DirectoryNotFoundException)
        {
            return false;
        }
    }

    private static async Task<bool> AllExitWithinAsync(IEnumerable<int> pids, TimeSpan timeout)
    {
        var deadline = DateTime.UtcNow + timeout;
        while (pids.Any(IsRunning))
        {
            if (DateTime.UtcNow > deadline) return false;
            await Task.Delay(50);
        }
        return true;
    }

    private static void KillAll(IEnumerable<int> pids)
    {
        foreach (var pid in pids.Where(IsRunning))
        {
            try
            {
                using var p = System.Diagnostics.Process.GetProcessById(pid);
                p.Kill();
            }
            catch (ArgumentException)
            {
            }
        }
    }

    private async Task RoundTripAsync(string url, NatsTlsOpts? tls = null)
    {
        await using var nc = new NatsConnection(new NatsOpts { Url = url, TlsOpts = tls ?? NatsTlsOpts.Default, ConnectTimeout = TimeSpan.FromSeconds(10) });
        await nc.ConnectAsync();
        await using var sub = await nc.SubscribeCoreAsync<string>("life.>");
        await nc.PublishAsync("life.x", "hi");
        using var cts = new CancellationTokenSource(TimeSpan.FromSeconds(10));
        Assert.Equal("hi", (await sub.Msgs.ReadAsync(cts.Token)).Data);
    }

    [Fact]
    public async Task SIGTERM_to_the_core_stops_its_gateways()
    {
        var (server, _, children) = await StartAsync();
        await using (server)
        {
            try
            {
                server.Signal("TERM");
                Assert.True(await AllExitWithinAsync(children, TimeSpan.FromSeconds(20)), "gateways still running after the core's SIGTERM:\n" + server.OutputTail());
            }
            finally
            {
                KillAll(children);
            }
        }
    }

    [Fact]
    public async Task A_killed_core_leaves_no_gateway_behind_and_the_same_config_serves_again()
    {
        var (server, ws, children) = await StartAsync();
        int port = server.Port;
        try
        {
            await using (server)
            {
                // SIGKILL the core alone (not its process tree): it cannot stop its children.
                server.Signal("KILL");
                // SupervisorWatch looks every 250 ms; the drain that follows is quick with no clients.
                Assert.True(await AllExitWithinAsync(children, TimeSpan.FromSeconds(15)),
                    "a gateway outlived its killed core: " + string.Join(", ", children.Where(IsRunning)));
            }

            // The same ports again: the new core's gateways can bind them, TLS and WebSocket clients are served.
            var (again, _, next) = await StartAsync(port, ws);
            await using (again)
            {
                try
                {
                    Assert.Empty(next.Intersect(children));
                    await RoundTripAsync($"tls://127.0.0.1:{port}", new NatsTlsOpts { Mode = TlsMode.Require, CaFile = _pki.CaFile });
                    await RoundTripAsync($"ws://127.0.0.1:{ws}");
                }
                finally
                {
                    await again.StopAsync(TimeSpan.FromSeconds(15));
                    KillAll(next);
                }
            }
        }
        finally
        {
            KillAll(children);
        }
    }

    [GeneratedRegex(@"Started the (?:tls-terminator|websocket) gateway \(pid (\d+)\)")]
    private static partial Regex StartedLine();
}
