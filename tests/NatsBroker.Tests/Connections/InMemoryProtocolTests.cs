using Microsoft.Extensions.Logging.Abstractions;
using NatsBroker.Configuration;
using NatsBroker.Connections;
using NatsBroker.Server;
using NatsBroker.Transport;

namespace NatsBroker.Tests.Connections;

/// <summary>
/// The client protocol over the in-memory listener (issue 45: "the in-memory transport becomes a fast test tier"):
/// the same Connection and ClientConnection as over TCP, with no socket.
/// </summary>
public sealed class InMemoryProtocolTests : IAsyncLifetime
{
    private const string Quiet = "CONNECT {\"verbose\":false,\"pedantic\":false,\"headers\":true}\r\n";
    private NatsServer _server = null!;
    private InMemoryConnectionListener _listener = null!;

    private void Create(Action<ServerOptions>? configure = null)
    {
        // No TCP port: the in-memory listener is the only way in (a TLS-configured server leaves the client port to
        // the terminator; here nothing listens on it).
        var options = new ServerOptions { Host = "127.0.0.1", Port = -1 };
        configure?.Invoke(options);
        _server = new NatsServer(options, NullLogger.Instance);
        _listener = _server.ListenInMemory();
    }

    public Task InitializeAsync() => Task.CompletedTask;

    public async Task DisposeAsync()
    {
        if (_server is not null) await _server.DisposeAsync();
    }

    private async Task<StreamLines> ConnectAsync(string? connect = Quiet)
    {
        var c = new StreamLines(_listener.Connect());
        var info = await c.ReadUntilAsync("\r\n");
        Assert.StartsWith("INFO {", info, StringComparison.Ordinal);
        if (connect is not null) await c.SendAsync(connect);
        return c;
    }

    [Fact]
    public async Task Info_connect_and_ping_are_answered_without_a_socket()
    {
        Create();
        var c = await ConnectAsync("CONNECT {\"verbose\":true}\r\n");
        Assert.Equal("+OK\r\n", await c.ReadUntilAsync("+OK\r\n"));
        await c.SendAsync("PING\r\n");
        Assert.Equal("PONG\r\n", await c.ReadUntilAsync("PONG\r\n"));
        var client = Assert.Single(_server.Clients);
        Assert.Equal(TransportKind.InMemory, client.Kind);
    }

    [Fact]
    public async Task A_message_goes_from_one_in_memory_client_to_another_and_is_counted()
    {
        Create();
        var sub = await ConnectAsync();
        await sub.SendAsync("SUB foo.* 7\r\nPING\r\n");
        await sub.ReadUntilAsync("PONG\r\n");
        var pub = await ConnectAsync();
        await pub.SendAsync("PUB foo.bar reply.x 5\r\nhello\r\nHPUB foo.baz 12 14\r\nNATS/1.0\r\n\r\nhi\r\nPING\r\n");
        await pub.ReadUntilAsync("PONG\r\n");
        var got = await sub.ReadUntilAsync("hi\r\n");
        Assert.Equal("MSG foo.bar 7 reply.x 5\r\nhello\r\nHMSG foo.baz 7 12 14\r\nNATS/1.0\r\n\r\nhi\r\n", got);
        var (inMsgs, _, outMsgs, _) = _server.MessageTotals();
        Assert.Equal(2, inMsgs);
        Assert.Equal(2, outMsgs);
    }

    [Fact]
    public async Task A_protocol_error_is_sent_before_the_close_and_recorded_as_the_reason()
    {
        Create();
        var c = await ConnectAsync();
        await c.SendAsync("BOGUS\r\n");
        var rest = await c.ReadToEndAsync();
        Assert.Equal("-ERR 'Unknown Protocol Operation'\r\n", rest);
        var closed = await WaitForClosedAsync();
        Assert.Equal("Parse Error", closed.Reason);
    }

    [Fact]
    public async Task A_client_that_goes_away_is_unregistered_with_client_closed()
    {
        Create();
        var c = await ConnectAsync();
        await c.SendAsync("SUB x 1\r\nPING\r\n");
        await c.ReadUntilAsync("PONG\r\n");
        Assert.Equal(1, _server.ClientCount);
        await c.Stream.DisposeAsync();
        var closed = await WaitForClosedAsync();
        Assert.Equal("Client Closed", closed.Reason);
        Assert.Equal(0, _server.ClientCount);
        // Its subscription went with it.
        Assert.Equal(0, _server.SubList.Count);
    }

    [Fact]
    public async Task A_subscriber_that_does_not_read_is_cut_off_as_a_slow_consumer()
    {
        // The pipe stops taking bytes once 64 KiB are unread, so the writer blocks and the outbound buffer fills.
        Create(o => o.MaxPending = 256 * 1024);
        var sub = await ConnectAsync();
        await sub.SendAsync("SUB big 1\r\nPING\r\n");
        await sub.ReadUntilAsync("PONG\r\n");
        var pub = await ConnectAsync();
        var payload = new string('x', 8 * 1024);
        var batch = string.Concat(Enumerable.Repeat($"PUB big {payload.Length}\r\n{payload}\r\n", 16));
        // 2 MiB, eight times max_pending, then a PING: its PONG shows the publisher went on after the cut.
        for (int i = 0; i < 16; i++) await pub.SendAsync(batch);
        await pub.SendAsync("PING\r\n");
        await pub.ReadUntilAsync("PONG\r\n");
        var closed = await WaitForClosedAsync();
        Assert.Equal("Slow Consumer (Pending Bytes)", closed.Reason);
        Assert.Equal(1, _server.SlowConsumers);
    }

    private async Task<ClosedClientInfo> WaitForClosedAsync()
    {
        var deadline = Environment.TickCount64 + 5000;
        while (Environment.TickCount64 < deadline)
        {
            if (_server.ClosedClients() is [var first, ..]) return first;
            await Task.Delay(10);
        }
        throw new Xunit.Sdk.XunitException("no connection closed");
    }
}
