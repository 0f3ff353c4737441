using System.Net.Sockets;

namespace NatsBroker.Tests.Monitoring;

/// <summary>
/// The monitor binds its port at start-up but starts Kestrel only when a connection is waiting
/// (core/Monitoring/MonitoringServer.cs): the port is reserved and in the ports file at once, and the first
/// request is still answered.
/// </summary>
public sealed class LazyMonitorTests
{
    [Fact]
    public async Task PortIsBoundAtStart_KestrelStartsOnFirstRequest()
    {
        await using var broker = await MonitoredBroker.StartAsync();

        // Nothing has connected yet: the port is held, Kestrel is not running.
        Assert.NotEqual(0, broker.Monitor.Port);
        Assert.False(broker.Monitor.KestrelStarted.IsCompleted);

        var (status, _, body) = await broker.GetAsync("/healthz");
        Assert.Equal(200, status);
        Assert.Contains("ok", body, StringComparison.Ordinal);
        await broker.Monitor.KestrelStarted.WaitAsync(TimeSpan.FromSeconds(10));
    }

    [Fact]
    public async Task DisposedBeforeAnyRequest_ReleasesThePort()
    {
        var broker = await MonitoredBroker.StartAsync();
        int port = broker.Monitor.Port;
        await broker.DisposeAsync();

        await Assert.ThrowsAnyAsync<SocketException>(async () =>
        {
            using var tcp = new TcpClient();
            await tcp.ConnectAsync("127.0.0.1", port).WaitAsync(TimeSpan.FromSeconds(10));
        });
    }
}
