using System.Text.Json;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using NatsBroker.Configuration;
using NatsBroker.Hosting;
using NatsBroker.Tests.Infrastructure;

namespace NatsBroker.Tests.Monitoring;

public sealed class BrokerServiceMonitoringTests
{
    private sealed class Lifetime : IHostApplicationLifetime
    {
        public CancellationToken ApplicationStarted => CancellationToken.None;
        public CancellationToken ApplicationStopping => CancellationToken.None;
        public CancellationToken ApplicationStopped => CancellationToken.None;
        public void StopApplication() { }
    }

    [Fact]
    public async Task HttpPort_StartsMonitor_LogsAndWritesPortsFile()
    {
        var dir = Directory.CreateTempSubdirectory("natsbroker-svc");
        var loggers = new CapturingLogger();
        var options = new ServerOptions { Host = "127.0.0.1", Port = -1, HttpHost = "127.0.0.1", HttpPort = -1, PortsFileDir = dir.FullName };
        var service = new BrokerService(options, () => null, loggers, new Lifetime());
        try
        {
            await service.StartAsync(CancellationToken.None);
            var line = Assert.Single(loggers.Lines, l => l.StartsWith("Starting http monitor on 127.0.0.1:", StringComparison.Ordinal));
            int port = int.Parse(line[(line.LastIndexOf(':') + 1)..], System.Globalization.CultureInfo.InvariantCulture);

            var file = Path.Combine(dir.FullName, $"nats-server_{Environment.ProcessId}.ports");
            using (var doc = JsonDocument.Parse(await File.ReadAllTextAsync(file)))
            {
                Assert.Equal([$"http://127.0.0.1:{port}"], doc.RootElement.GetProperty("monitoring").EnumerateArray().Select(e => e.GetString()));
            }

            using var http = new HttpClient();
            Assert.Equal("{\"status\":\"ok\"}", await http.GetStringAsync($"http://127.0.0.1:{port}/healthz"));
        }
        finally
        {
            await service.StopAsync(CancellationToken.None);
            dir.Delete(recursive: true);
        }
    }

    [Fact]
    public async Task HttpPortZero_NoMonitor()
    {
        var loggers = new CapturingLogger();
        var options = new ServerOptions { Host = "127.0.0.1", Port = -1 };
        var service = new BrokerService(options, () => null, loggers, new Lifetime());
        await service.StartAsync(CancellationToken.None);
        await service.StopAsync(CancellationToken.None);
        Assert.DoesNotContain(loggers.Lines, l => l.Contains("http monitor", StringComparison.Ordinal));
    }
}
