using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Protocol;

/// <summary>
/// Our extension: plain NATS over a Unix domain socket (<c>--unix_socket</c>). nats-server has no such listener,
/// so these run against our broker only (and are reported skipped when redirected to Go).
/// </summary>
public sealed class UnixSocketTests(ITestOutputHelper output)
{
    private async Task<ServerProcess> StartAsync()
    {
        Prerequisites.RequireOursUnixSocket(output);
        return await ServerProcess.StartAsync(ServerKind.Ours, new ServerStartOptions { UnixSocket = true }, output);
    }

    [SkippableFact]
    public async Task Unix_socket_speaks_the_same_protocol_and_bridges_with_tcp()
    {
        await using var s = await StartAsync();
        Assert.True(File.Exists(s.UnixSocketPath), "socket file missing: " + s.UnixSocketPath);

        await using var uds = await RawClient.ConnectUnixAsync(s.UnixSocketPath!);
        var info = await uds.ReadInfoAsync();
        Assert.False(string.IsNullOrEmpty(info.GetProperty("server_id").GetString()));
        await uds.SendAsync("CONNECT {\"verbose\":false,\"headers\":true}\r\nPING\r\n");
        await uds.ExpectLineAsync("PONG");

        await using var tcp = await RawClient.ConnectAndHandshakeAsync(s);
        await uds.SendAsync("SUB ux.> 1\r\n");
        await uds.PingAsync();
        await tcp.SendAsync("SUB ux.back 2\r\nPUB ux.a 3\r\nabc\r\n");
        await tcp.PingAsync();
        var m = await uds.ExpectMessageAsync();
        Assert.Equal(("ux.a", "abc"), (m.Subject, m.PayloadText));
        await uds.SendAsync("PUB ux.back 4\r\nback\r\n");
        Assert.Equal("back", (await tcp.ExpectMessageAsync()).PayloadText);
    }

    [SkippableFact]
    public async Task Unix_socket_errors_close_like_tcp()
    {
        await using var s = await StartAsync();
        await using var uds = await RawClient.ConnectUnixAsync(s.UnixSocketPath!);
        await uds.ReadInfoAsync();
        await uds.SendAsync("BOGUS\r\n");
        Assert.Equal(["-ERR 'Unknown Protocol Operation'"], await uds.ExpectClosedAsync());
    }

    [SkippableFact]
    public async Task Unix_socket_split_writes()
    {
        await using var s = await StartAsync();
        await using var uds = await RawClient.ConnectUnixAsync(s.UnixSocketPath!);
        await uds.ReadInfoAsync();
        var bytes = "CONNECT {\"verbose\":false}\r\nSUB u.x 1\r\nPUB u.x 5\r\nhello\r\n"u8.ToArray();
        await uds.SendChunkedAsync(bytes, 1, TimeSpan.FromMilliseconds(1));
        Assert.Equal("hello", (await uds.ExpectMessageAsync()).PayloadText);
    }
}
