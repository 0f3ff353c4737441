using System.Net.Sockets;
using System.Text;
using System.Text.Json;
using Microsoft.Extensions.Logging.Abstractions;
using NatsBroker.Configuration;
using NatsBroker.Monitoring;
using NatsBroker.Server;

namespace NatsBroker.Tests.Monitoring;

/// <summary>An in-process broker on random ports (client and HTTP) on 127.0.0.1, with an HttpClient on its monitor.</summary>
public sealed class MonitoredBroker : IAsyncDisposable
{
    private MonitoredBroker(NatsServer server, MonitoringServer monitor)
    {
        Server = server;
        Monitor = monitor;
        Http = new HttpClient { BaseAddress = new Uri($"http://127.0.0.1:{monitor.Port}"), Timeout = TimeSpan.FromSeconds(10) };
    }

    public NatsServer Server { get; }
    public MonitoringServer Monitor { get; }
    public HttpClient Http { get; }
    public int ClientPort => Server.ClientPort;

    public static async Task<MonitoredBroker> StartAsync(Action<ServerOptions>? configure = null, Microsoft.Extensions.Logging.ILogger? log = null)
    {
        var options = new ServerOptions { Host = "127.0.0.1", Port = -1, HttpHost = "127.0.0.1", HttpPort = -1 };
        configure?.Invoke(options);
        var server = new NatsServer(options, log ?? NullLogger.Instance);
        server.Start();
        var monitor = await MonitoringServer.StartAsync(server, NullLogger.Instance, CancellationToken.None);
        return new MonitoredBroker(server, monitor);
    }

    public async Task<JsonElement> GetJsonAsync(string path)
    {
        using var response = await Http.GetAsync(path);
        var body = await response.Content.ReadAsStringAsync();
        Assert.True(response.IsSuccessStatusCode, $"{path}: {(int)response.StatusCode} {body}");
        using var doc = JsonDocument.Parse(body);
        return doc.RootElement.Clone();
    }

    public async Task<(int Status, string ContentType, string Body)> GetAsync(string path)
    {
        using var response = await Http.GetAsync(path);
        var body = await response.Content.ReadAsStringAsync();
        return ((int)response.StatusCode, response.Content.Headers.ContentType?.ToString() ?? "", body);
    }

    /// <summary>Waits until the server has recorded <paramref name="count"/> closed connections.</summary>
    public async Task WaitForClosedAsync(int count)
    {
        var deadline = DateTime.UtcNow.AddSeconds(10);
        while (Server.ClosedClients().Count < count)
        {
            Assert.True(DateTime.UtcNow < deadline, $"expected {count} closed connections, have {Server.ClosedClients().Count}");
            await Task.Delay(10);
        }
    }

    public async ValueTask DisposeAsync()
    {
        Http.Dispose();
        await Monitor.DisposeAsync();
        await Server.DisposeAsync();
    }
}

/// <summary>A raw protocol client: sends text and waits for PONG so the server has processed everything before it.</summary>
public sealed class RawClient : IAsyncDisposable
{
    private readonly TcpClient _tcp;
    private readonly NetworkStream _stream;
    private readonly StringBuilder _received = new();

    private RawClient(TcpClient tcp)
    {
        _tcp = tcp;
        _stream = tcp.GetStream();
    }

    public static async Task<RawClient> ConnectAsync(int port, string name = "x", string? extraConnect = null)
    {
        var tcp = new TcpClient();
        await tcp.ConnectAsync("127.0.0.1", port);
        var c = new RawClient(tcp);
        await c.ReadUntilAsync("\r\n"); // INFO
        var connect = $"{{\"name\":\"{name}\",\"lang\":\"raw\",\"version\":\"1.0\"{extraConnect}}}";
        await c.SendAsync($"CONNECT {connect}\r\nPING\r\n");
        await c.ReadUntilAsync("PONG\r\n");
        return c;
    }

    /// <summary>Sends <paramref name="text"/> followed by PING and waits for the PONG.</summary>
    public async Task SendAndFlushAsync(string text)
    {
        await SendAsync(text + "PING\r\n");
        await ReadUntilAsync("PONG\r\n");
    }

    public async Task SendAsync(string text)
    {
        var bytes = Encoding.ASCII.GetBytes(text);
        await _stream.WriteAsync(bytes);
    }

    private async Task ReadUntilAsync(string marker)
    {
        using var cts = new CancellationTokenSource(TimeSpan.FromSeconds(10));
        var buf = new byte[4096];
        while (true)
        {
            var s = _received.ToString();
            int i = s.IndexOf(marker, StringComparison.Ordinal);
            if (i >= 0)
            {
                _received.Remove(0, i + marker.Length);
                return;
            }
            int n = await _stream.ReadAsync(buf, cts.Token);
            if (n == 0) throw new IOException($"connection closed waiting for {marker.Trim()}; got: {s}");
            _received.Append(Encoding.ASCII.GetString(buf, 0, n));
        }
    }

    public ValueTask DisposeAsync()
    {
        _stream.Dispose();
        _tcp.Dispose();
        return ValueTask.CompletedTask;
    }
}
