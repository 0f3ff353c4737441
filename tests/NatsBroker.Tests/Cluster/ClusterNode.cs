using System.Net.Http;
using System.Text.Json;
using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Cluster;

/// <summary>
/// One node of a <see cref="TestCluster"/>: its kind, its three fixed ports (client, monitoring, route; fixed because
/// the other nodes' configs name the route port, and a restart must come back on all three) and its config file.
/// The process is a <see cref="ServerProcess"/> started with <c>-p</c> = <see cref="ClientPort"/>; the config's
/// <c>http</c> key opens the monitoring listener (so <see cref="ServerStartOptions.Monitoring"/> stays off: its
/// <c>-m -1</c> would override the fixed port).
/// </summary>
public sealed class ClusterNode : IAsyncDisposable
{
    private static readonly HttpClient s_http = new() { Timeout = TimeSpan.FromSeconds(3) };
    private readonly ITestOutputHelper? _log;
    private ServerProcess? _process;

    internal ClusterNode(int index, ClusterNodeKind kind, int clientPort, int monitorPort, int routePort, ITestOutputHelper? log)
    {
        Index = index;
        Kind = kind;
        ClientPort = clientPort;
        MonitorPort = monitorPort;
        RoutePort = routePort;
        _log = log;
    }

    /// <summary>Position in the cluster (0-based); the node's <c>server_name</c> is <see cref="Name"/>.</summary>
    public int Index { get; }

    /// <summary><c>n1</c>, <c>n2</c>, ...: the config's <c>server_name</c> (1-based, as people count nodes).</summary>
    public string Name => "n" + (Index + 1);

    public ClusterNodeKind Kind { get; }

    public int ClientPort { get; }

    public int MonitorPort { get; }

    public int RoutePort { get; }

    /// <summary>The config file text (set by <see cref="TestCluster"/> once every node's ports are known).</summary>
    public string Config { get; internal set; } = "";

    public string Url => $"nats://127.0.0.1:{ClientPort}";

    /// <summary>The client URL as nats-server puts it in INFO <c>connect_urls</c> (host:port, no scheme).</summary>
    public string ConnectUrl => $"127.0.0.1:{ClientPort}";

    /// <summary>The route URL other nodes list in <c>routes</c>.</summary>
    public string RouteUrl => $"nats-route://127.0.0.1:{RoutePort}";

    /// <summary>The <c>server_id</c> of the running process (from /varz; a new one after each restart), or null before the first start.</summary>
    public string? ServerId { get; private set; }

    public bool IsRunning => _process is { HasExited: false };

    public int Pid => _process?.Pid ?? -1;

    /// <summary>The process's captured output (tail), for failure messages.</summary>
    public string OutputTail(int chars = 2000) => _process?.OutputTail(chars) ?? "(never started)";

    /// <summary>Starts the node (or starts it again after <see cref="StopAsync"/>/<see cref="Kill"/>, on the same ports and config) and reads its server_id.</summary>
    public async Task StartAsync()
    {
        if (IsRunning)
        {
            throw new InvalidOperationException($"{this} is already running");
        }

        if (_process is null)
        {
            _process = await ServerProcess.StartAsync(Kind == ClusterNodeKind.Ours ? ServerKind.Ours : ServerKind.Go, new ServerStartOptions
            {
                Config = Config,
                Port = ClientPort,
                GoBinary = Kind switch
                {
                    ClusterNodeKind.Go29 => TestEnvironment.GoServerPath,
                    ClusterNodeKind.Go214 => TestEnvironment.Oracle214Path,
                    _ => null,
                },
            }, _log).ConfigureAwait(false);
        }
        else
        {
            // Not running: RestartAsync's stop is a no-op, then it launches on the same port with the same config file.
            await _process.RestartAsync().ConfigureAwait(false);
        }

        ServerId = await ReadServerIdAsync().ConfigureAwait(false);
    }

    /// <summary>Graceful stop (SIGINT, then a kill after 5 s).</summary>
    public Task StopAsync() => _process?.StopAsync() ?? Task.CompletedTask;

    /// <summary><c>kill -9</c>: no shutdown, the peers see the route connections drop.</summary>
    public void Kill() => _process?.Kill();

    /// <summary>
    /// The server_id from /varz. The ports file that <see cref="ServerProcess"/> waits for is written once every
    /// listener accepts, but a few retries cover an HTTP listener still settling.
    /// </summary>
    private async Task<string> ReadServerIdAsync()
    {
        var deadline = DateTime.UtcNow + TimeSpan.FromSeconds(5);
        while (true)
        {
            try
            {
                var body = await s_http.GetStringAsync($"http://127.0.0.1:{MonitorPort}/varz").ConfigureAwait(false);
                using var doc = JsonDocument.Parse(body);
                return doc.RootElement.GetProperty("server_id").GetString()
                    ?? throw new InvalidOperationException($"{this}: /varz server_id is null");
            }
            catch (Exception e) when (e is HttpRequestException or TaskCanceledException or JsonException or KeyNotFoundException)
            {
                if (DateTime.UtcNow >= deadline || !IsRunning)
                {
                    throw new InvalidOperationException($"{this}: no server_id from http://127.0.0.1:{MonitorPort}/varz ({e.Message})\n{OutputTail()}", e);
                }

                await Task.Delay(50).ConfigureAwait(false);
            }
        }
    }

    public override string ToString() =>
        $"{Name} ({Kind}, pid {Pid}, client {ClientPort}, monitor {MonitorPort}, route {RoutePort}, server_id {Routez.Abbrev(ServerId)})";

    public async ValueTask DisposeAsync()
    {
        if (_process is null)
        {
            return;
        }

        // Dispose kills: nothing a cluster test checks depends on a graceful end, and a kill is immediate.
        _process.Kill();
        await _process.DisposeAsync().ConfigureAwait(false);
    }
}
