using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Protocol;

/// <summary>
/// A client connection that sends route and leaf node ops gets what nats-server answers: R, L and A ops are
/// parseErr for a CLIENT (server/parser.go OP_START), and an HMSG is read and dropped (OP_H accepts 'M' for every
/// kind; HMSG_ARG parses nothing for a client, so an empty payload must follow).
/// </summary>
public sealed class RouteOpsFromClientTests(ITestOutputHelper output, ServerPool pool) : ProtocolTestBase(output, pool)
{
    public static TheoryData<ServerKind, string> RouteOps()
    {
        var d = new TheoryData<ServerKind, string>();
        foreach (var k in new[] { ServerKind.Ours, ServerKind.Go })
        {
            foreach (var op in new[] { "RS+ $G foo\r\n", "RS- $G foo\r\n", "LS+ foo\r\n", "LS- foo\r\n", "A+ foo\r\n",
                "RMSG $G foo 1\r\nx\r\n", "LMSG foo 1\r\nx\r\n", "HMSG foo 0 0\r\nPING\r\n" })
            {
                d.Add(k, op);
            }
        }
        return d;
    }

    [SkippableTheory]
    [MemberData(nameof(RouteOps))]
    public async Task Route_ops_from_a_client_are_unknown_operations(ServerKind kind, string input)
    {
        var s = await SharedAsync(kind);
        await using var c = await Connected(s, QuietHeaders);
        await c.SendAsync(input);
        Assert.Equal(["-ERR 'Unknown Protocol Operation'"], await c.ExpectClosedAsync());
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task A_client_hmsg_followed_by_crlf_is_dropped(ServerKind kind)
    {
        var s = await SharedAsync(kind);
        await using var c = await Connected(s, QuietHeaders);
        await c.SendAsync("SUB > 1\r\nHMSG foo 0 0\r\n\r\n");
        // Nothing delivered, nothing answered, and the connection stays: PONG is the only reply.
        Assert.Empty(await c.PingAsync());
        await c.SendAsync("PUB foo 2\r\nhi\r\n");
        var msg = await c.ExpectMessageAsync();
        Assert.Equal("foo", msg.Subject);
    }
}
