using System.Diagnostics;
using System.Net;
using System.Net.Sockets;
using System.Text;
using NATS.Client.Core;
using NATS.NKeys;
using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Gateways;

/// <summary>
/// Gateways managed elsewhere (as under systemd): the core with <c>gateways { managed: external }</c> and two
/// tls-terminator (or WebSocket gateway) processes sharing one port (SO_REUSEPORT), started by the test with their own seed.
/// </summary>
[Collection("Gateways")]
public sealed class ExternalGatewayTests(ITestOutputHelper output) : IDisposable
{
    private readonly TestPki _pki = new();
    private readonly ExternalGatewayProcesses _gateways = new(output);

    public void Dispose()
    {
        _gateways.Dispose();
        _pki.Dispose();
    }

    private (Process, StringBuilder) StartTerminator(string config, int port, string seed, string socket, params string[] extra) =>
        _gateways.Start("NatsBroker.TlsTerminator.dll", config, port, seed, socket, extra);

    private (Process, StringBuilder) StartGateway(string assembly, string config, int port, string seed, string socket, params string[] extra) =>
        _gateways.Start(assembly, config, port, seed, socket, extra);

    private static Task WaitFor(StringBuilder log, string text) => ExternalGatewayProcesses.WaitFor(log, text);

    [Theory]
    [InlineData("tls-terminator")]
    [InlineData("websocket")]
    public async Task Two_instances_share_a_port_and_stopping_one_sends_its_clients_to_the_other(string gateway)
    {
        using var key = KeyPair.CreatePair(PrefixByte.User);
        int port;
        port = TestPorts.Next();
        var socket = Path.Combine(Path.GetTempPath(), $"nb-{Guid.NewGuid():N}"[..12] + ".sock");
        bool tls = gateway == "tls-terminator";
        // reuse_port (ours): the TLS terminator's in its tls {} block, the WebSocket gateway's in websocket {}.
        string block = tls
            ? $$"""tls { cert_file: "{{_pki.ServerCert}}", key_file: "{{_pki.ServerKey}}", reuse_port: true }"""
            : $$"""websocket { port: {{port}}, no_tls: true, reuse_port: true }""";
        var config = $$"""
            unix_socket: "{{socket}}"
            {{block}}
            gateways { managed: external }
            proxies { trusted = [ { key: "{{key.GetPublicKey()}}" } ] }
            """;
        var configPath = Path.Combine(_pki.Dir, "external.conf");
        File.WriteAllText(configPath, config);

        // The core does not listen on TCP here: start the gateways once its socket exists.
        var coreStart = ServerProcess.StartAsync(ServerKind.Ours, new ServerStartOptions { Config = config, Port = tls ? port : TestPorts.Next() }, output);
        var deadline = DateTime.UtcNow.AddSeconds(30);
        while (!File.Exists(socket) && DateTime.UtcNow < deadline && !coreStart.IsCompleted) await Task.Delay(50);
        Assert.True(File.Exists(socket), "the core's socket did not appear");
        string assembly = tls ? "NatsBroker.TlsTerminator.dll" : "NatsBroker.WebSocketGateway.dll";
        string listening = tls ? "Listening for client connections" : "Listening for websocket clients";
        var (first, firstLog) = StartGateway(assembly, configPath, port, key.GetSeed(), socket);
        var (_, secondLog) = StartGateway(assembly, configPath, port, key.GetSeed(), socket);
        await WaitFor(firstLog, listening);
        await WaitFor(secondLog, listening);
        await using var core = await coreStart;
        Assert.DoesNotContain("Started the " + gateway, core.Output, StringComparison.Ordinal);

        var clients = new List<NatsConnection>();
        try
        {
            for (int i = 0; i < 8; i++)
            {
                var nc = new NatsConnection(new NatsOpts
                {
                    Url = tls ? $"tls://127.0.0.1:{port}" : $"ws://127.0.0.1:{port}",
                    TlsOpts = tls ? new NatsTlsOpts { Mode = TlsMode.Require, CaFile = _pki.CaFile } : NatsTlsOpts.Default,
                    ReconnectWaitMin = TimeSpan.FromMilliseconds(100),
                    ReconnectWaitMax = TimeSpan.FromMilliseconds(500),
                });
                await nc.ConnectAsync();
                clients.Add(nc);
            }

            // SIGTERM: the first instance drains and exits cleanly; its clients reconnect through the second.
            Assert.Equal(0, Kill(first.Id, 15));
            Assert.True(first.WaitForExit(20_000), "the terminator did not stop after SIGTERM");
            Assert.Equal(0, first.ExitCode);

            using var cts = new CancellationTokenSource(TimeSpan.FromSeconds(30));
            foreach (var nc in clients)
            {
                await using var sub = await nc.SubscribeCoreAsync<int>("after.stop");
                // A client still on the stopped instance has its PING cancelled as that connection goes away;
                // once it has reconnected through the other instance the PING is answered.
                while (true)
                {
                    try
                    {
                        await nc.PingAsync(cts.Token);
                        break;
                    }
                    catch (OperationCanceledException) when (!cts.IsCancellationRequested)
                    {
                        await Task.Delay(100, cts.Token);
                    }
                }
                await nc.PublishAsync("after.stop", 1, cancellationToken: cts.Token);
                Assert.Equal(1, (await sub.Msgs.ReadAsync(cts.Token)).Data);
            }
        }
        finally
        {
            foreach (var nc in clients) await nc.DisposeAsync();
        }
    }

    [Fact]
    public async Task Relay_only_mode_serves_plain_NATS_through_the_link_as_the_users_own_connection()
    {
        // --relay-only (for measuring the hop, bench/README.md): no tls {} needed, plain NATS in, the link as usual.
        using var key = KeyPair.CreatePair(PrefixByte.User);
        int port;
        port = TestPorts.Next();
        var socket = Path.Combine(Path.GetTempPath(), $"nb-{Guid.NewGuid():N}"[..12] + ".sock");
        var config = $$"""
            unix_socket: "{{socket}}"
            proxies { trusted = [ { key: "{{key.GetPublicKey()}}" } ] }
            """;
        var configPath = Path.Combine(_pki.Dir, "relay-only.conf");
        File.WriteAllText(configPath, config);
        await using var core = await ServerProcess.StartAsync(ServerKind.Ours, new ServerStartOptions { Config = config, Monitoring = true }, output);
        var (_, log) = StartTerminator(configPath, port, key.GetSeed(), socket, "--relay-only");
        await WaitFor(log, "Listening for client connections");

        await using var nc = new NatsConnection(new NatsOpts { Url = $"nats://127.0.0.1:{port}", Name = "through-relay" });
        await nc.ConnectAsync();
        Assert.False(nc.ServerInfo!.TlsRequired);
        Assert.Equal(port, nc.ServerInfo.Port);
        using var cts = new CancellationTokenSource(TimeSpan.FromSeconds(30));
        await using var sub = await nc.SubscribeCoreAsync<string>("relay.only", cancellationToken: cts.Token);
        await nc.PublishAsync("relay.only", "hello", cancellationToken: cts.Token);
        Assert.Equal("hello", (await sub.Msgs.ReadAsync(cts.Token)).Data);

        // The core took the proxy signature: the connection is the user's, marked as coming through the gateway.
        using var http = new HttpClient();
        using var connz = System.Text.Json.JsonDocument.Parse(await http.GetStringAsync(await GatewayTestHelpers.ConnzUri(core), cts.Token));
        var mine = connz.RootElement.GetProperty("connections").EnumerateArray()
            .Single(c => c.TryGetProperty("name", out var n) && n.GetString() == "through-relay");
        Assert.Equal("tls-terminator", mine.GetProperty("proxy").GetProperty("gateway").GetString());
    }

    [Fact]
    public async Task Control_plane_over_grpc_reports_health_and_sessions_and_drains_the_gateway()
    {
        using var key = KeyPair.CreatePair(PrefixByte.User);
        int port;
        port = TestPorts.Next();
        var socket = Path.Combine(Path.GetTempPath(), $"nb-{Guid.NewGuid():N}"[..12] + ".sock");
        var control = Path.Combine(Path.GetTempPath(), $"nb-{Guid.NewGuid():N}"[..12] + ".ctl");
        var config = $$"""
            unix_socket: "{{socket}}"
            proxies { trusted = [ { key: "{{key.GetPublicKey()}}" } ] }
            """;
        var configPath = Path.Combine(_pki.Dir, "control.conf");
        File.WriteAllText(configPath, config);
        await using var core = await ServerProcess.StartAsync(ServerKind.Ours, new ServerStartOptions { Config = config }, output);
        var (terminator, log) = StartTerminator(configPath, port, key.GetSeed(), socket, "--relay-only", "--control-socket", control);
        await WaitFor(log, "Control plane (gRPC) on");
        if (!OperatingSystem.IsWindows()) Assert.Equal(UnixFileMode.UserRead | UnixFileMode.UserWrite, File.GetUnixFileMode(control));

        using var channel = NatsBroker.Gateways.Link.Control.ControlClient.Channel(control);
        var client = new NatsBroker.Gateways.Link.Control.GatewayControl.GatewayControlClient(channel);
        var deadline = () => DateTime.UtcNow.AddSeconds(30);
        var health = await client.HealthAsync(new(), deadline: deadline());
        Assert.True(health.Serving);
        Assert.Equal("tls-terminator", health.Gateway);
        Assert.Equal(terminator.Id, health.Pid);

        await using var nc = new NatsConnection(new NatsOpts { Url = $"nats://127.0.0.1:{port}", MaxReconnectRetry = 0 });
        await nc.ConnectAsync();
        var stats = await client.StatsAsync(new(), deadline: deadline());
        Assert.Equal(1, stats.Sessions);
        Assert.Equal(1, stats.SessionsTotal);

        // Drain: as SIGTERM, the gateway stops accepting, closes its sessions once flushed, and exits cleanly.
        var drained = await client.DrainAsync(new(), deadline: deadline());
        Assert.Equal(1, drained.Sessions);
        Assert.True(terminator.WaitForExit(20_000), "the terminator did not exit after Drain");
        Assert.Equal(0, terminator.ExitCode);
        Assert.False(File.Exists(control), "the control socket was left behind");
    }

    [System.Runtime.InteropServices.DllImport("libc", EntryPoint = "kill")]
    private static extern int Kill(int pid, int sig);
}
