using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Protocol;

/// <summary>
/// Every -ERR path and whether the connection closes, as nats-server 2.9.10 does it.
/// Fatal errors are sent with nothing after them, so the -ERR is not lost to a TCP reset.
/// </summary>
public sealed class ErrorTests(ITestOutputHelper output, ServerPool pool) : ProtocolTestBase(output, pool)
{
    [SkippableTheory]
    [MemberData(nameof(FatalInputs))]
    public async Task Fatal_protocol_errors_close_the_connection(ServerKind kind, string name, string input, string? expectedErr)
    {
        var s = await SharedAsync(kind);
        Output.WriteLine(name);
        await using var c = await Connected(s);
        await c.SendAsync(input);
        var lines = await c.ExpectClosedAsync();
        Assert.Equal(expectedErr is null ? [] : [$"-ERR '{expectedErr}'"], lines);
    }

    public static TheoryData<ServerKind, string, string, string?> FatalInputs()
    {
        var d = new TheoryData<ServerKind, string, string, string?>();
        foreach (var k in new[] { ServerKind.Ours, ServerKind.Go })
        {
            d.Add(k, "unknown op", "FOO bar\r\n", "Unknown Protocol Operation");
            d.Add(k, "empty line", "\r\n", "Unknown Protocol Operation");
            d.Add(k, "binary garbage", "\x01\x02\x03\r\n", "Unknown Protocol Operation");
            d.Add(k, "op prefix PUBX", "PUBX\r\n", "Unknown Protocol Operation");
            d.Add(k, "MSG from client", "MSG foo 1 1\r\nx\r\n", "Unknown Protocol Operation");
            d.Add(k, "UNSUB without sid", "UNSUB\r\n", "Unknown Protocol Operation");
            d.Add(k, "payload longer than size", "PUB foo 2\r\nhiX", "Unknown Protocol Operation");
            d.Add(k, "payload shorter than size", "PUB foo 2\r\nh\r\nPING\r\n", "Unknown Protocol Operation");
            d.Add(k, "PUB above max_payload", "PUB foo 1048577\r\n", "Maximum Payload Violation");
            d.Add(k, "control line too long", "SUB " + new string('a', 5000) + " 1\r\n", "maximum control line exceeded");
            d.Add(k, "control line too long without CRLF", "PUB " + new string('a', 5000), "maximum control line exceeded");
            // Argument errors close silently (no -ERR): the parser returns an error to the read loop.
            d.Add(k, "PUB size not a number", "PUB foo bar\r\n", null);
            d.Add(k, "PUB negative size", "PUB foo -1\r\n", null);
            d.Add(k, "PUB size overflows", "PUB foo 99999999999999999999\r\n", null);
            d.Add(k, "PUB too many args", "PUB foo bar baz 1\r\nx\r\n", null);
            d.Add(k, "SUB without sid", "SUB foo\r\n", null);
            d.Add(k, "SUB too many args", "SUB foo bar baz 1\r\n", null);
            d.Add(k, "client sends -ERR", "-ERR 'x'\r\n", null);
            d.Add(k, "HPUB without headers in CONNECT", "HPUB foo 12 14\r\nNATS/1.0\r\n\r\nhi\r\n", null);
        }

        return d;
    }

    [SkippableTheory]
    [MemberData(nameof(FatalHeaderInputs))]
    public async Task Fatal_header_errors_close_the_connection(ServerKind kind, string name, string input)
    {
        var s = await SharedAsync(kind);
        Output.WriteLine(name);
        await using var c = await Connected(s, QuietHeaders);
        await c.SendAsync(input);
        Assert.Empty(await c.ExpectClosedAsync());
    }

    public static TheoryData<ServerKind, string, string> FatalHeaderInputs()
    {
        var d = new TheoryData<ServerKind, string, string>();
        foreach (var k in new[] { ServerKind.Ours, ServerKind.Go })
        {
            d.Add(k, "HPUB header size > total", "HPUB foo 20 10\r\n");
            d.Add(k, "HPUB missing total", "HPUB foo 2\r\n");
        }

        return d;
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Hpub_above_max_payload_is_fatal(ServerKind kind)
    {
        var s = await SharedAsync(kind);
        await using var c = await Connected(s, QuietHeaders);
        await c.SendAsync("HPUB foo 12 1048577\r\n");
        Assert.Equal(["-ERR 'Maximum Payload Violation'"], await c.ExpectClosedAsync());
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Configured_max_payload_and_max_control_line_are_enforced(ServerKind kind)
    {
        const string conf = "max_payload: 16\nmax_control_line: 64\n";
        var s = await SharedAsync(kind, conf);
        await using (var ok = await Connected(s))
        {
            await ok.SendAsync("SUB mp 1\r\nPUB mp 16\r\n0123456789abcdef\r\n");
            Assert.Equal(16, (await ok.ExpectMessageAsync()).Payload.Length);
        }

        await using (var c = await Connected(s))
        {
            await c.SendAsync("PUB foo 17\r\n");
            Assert.Equal(["-ERR 'Maximum Payload Violation'"], await c.ExpectClosedAsync());
        }

        await using (var c = await Connected(s))
        {
            await c.SendAsync("SUB " + new string('a', 70) + " 1\r\n");
            Assert.Equal(["-ERR 'maximum control line exceeded'"], await c.ExpectClosedAsync());
        }
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Invalid_subject_on_sub_is_reported_and_connection_stays(ServerKind kind)
    {
        var s = await SharedAsync(kind);
        foreach (var connect in new[] { Quiet, """{"verbose":false,"pedantic":true}""" })
        {
            await using var c = await Connected(s, connect);
            foreach (var bad in new[] { "foo..bar", "foo.>.bar", ".foo", "foo." })
            {
                await c.SendAsync($"SUB {bad} 1\r\n");
                Assert.Equal(["-ERR 'Invalid Subject'"], await c.PingAsync());
            }
        }
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Pedantic_reports_wildcard_publish_but_still_delivers(ServerKind kind)
    {
        // nats-server 2.9.10 sends -ERR 'Invalid Publish Subject' and then routes the message anyway.
        var s = await SharedAsync(kind);
        await using var c = await Connected(s, """{"verbose":false,"pedantic":true}""");
        await c.SendAsync("SUB pw.> 1\r\n");
        foreach (var bad in new[] { "pw.*", "pw.>" })
        {
            await c.SendAsync($"PUB {bad} 1\r\nx\r\n");
            Assert.Equal(["-ERR 'Invalid Publish Subject'", $"MSG {bad} 1 1", "x"], await c.PingAsync());
        }
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Pedantic_verbose_sends_err_then_ok(ServerKind kind)
    {
        var s = await SharedAsync(kind);
        await using var c = await Raw(s, """{"verbose":true,"pedantic":true}""");
        await c.ExpectLineAsync("+OK");
        await c.SendAsync("PUB foo.* 1\r\nx\r\n");
        Assert.Equal(["-ERR 'Invalid Publish Subject'", "+OK"], await c.PingAsync());
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Default_connect_is_pedantic(ServerKind kind)
    {
        var s = await SharedAsync(kind);
        await using var c = await Raw(s, "{}");
        await c.ExpectLineAsync("+OK");
        await c.SendAsync("PUB foo.> 1\r\nx\r\n");
        Assert.Equal(["-ERR 'Invalid Publish Subject'", "+OK"], await c.PingAsync());
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Non_pedantic_wildcard_publish_is_accepted_silently(ServerKind kind)
    {
        var s = await SharedAsync(kind);
        await using var c = await Connected(s);
        await c.SendAsync("PUB np.* 1\r\nx\r\n");
        Assert.Empty(await c.PingAsync());
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Authorization_violation_closes(ServerKind kind)
    {
        var s = await SharedAsync(kind, "authorization { user: alice, password: secret }\n");
        foreach (var connect in new[] { """{"verbose":false,"user":"alice","pass":"bad"}""", """{"verbose":false}""", """{"verbose":false,"auth_token":"secret"}""" })
        {
            await using var c = await Raw(s, connect);
            Assert.Equal(["-ERR 'Authorization Violation'"], await c.ExpectClosedAsync());
        }

        await using var good = await Connected(s, """{"verbose":false,"user":"alice","pass":"secret"}""");
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Ops_before_connect_on_an_auth_server_are_violations(ServerKind kind)
    {
        var s = await SharedAsync(kind, "authorization { user: alice, password: secret }\n");
        foreach (var op in new[] { "PING\r\n", "SUB foo 1\r\n", "PUB foo 1\r\nx\r\n" })
        {
            await using var c = await Raw(s);
            await c.SendAsync(op);
            Assert.Equal(["-ERR 'Authorization Violation'"], await c.ExpectClosedAsync());
        }
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Token_auth(ServerKind kind)
    {
        var s = await SharedAsync(kind, "authorization { token: s3cret }\n");
        await using (var bad = await Raw(s, """{"verbose":false,"auth_token":"nope"}"""))
        {
            Assert.Equal(["-ERR 'Authorization Violation'"], await bad.ExpectClosedAsync());
        }

        await using var good = await Connected(s, """{"verbose":false,"auth_token":"s3cret"}""");
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Authentication_timeout_closes(ServerKind kind)
    {
        var s = await SharedAsync(kind, "authorization { user: alice, password: secret, timeout: 0.5 }\n");
        // Timed from before the connect: the server's timer starts at accept, so a connect (and INFO read) that a
        // loaded machine delays must not count against the lower bound.
        var sw = System.Diagnostics.Stopwatch.StartNew();
        await using var c = await Raw(s);
        Assert.Equal(["-ERR 'Authentication Timeout'"], await c.ExpectClosedAsync(TimeSpan.FromSeconds(5)));
        Assert.InRange(sw.Elapsed, TimeSpan.FromMilliseconds(300), TimeSpan.FromSeconds(4));
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Max_subscriptions_exceeded_keeps_the_connection(ServerKind kind)
    {
        var s = await SharedAsync(kind, "max_subscriptions: 2\n");
        await using var c = await Connected(s);
        await c.SendAsync("SUB ms.a 1\r\nSUB ms.b 2\r\nSUB ms.c 3\r\n");
        Assert.Equal(["-ERR 'maximum subscriptions exceeded'"], await c.PingAsync());
        await c.SendAsync("PUB ms.c 1\r\nx\r\nPUB ms.b 1\r\ny\r\n");
        Assert.Equal("y", (await c.ExpectMessageAsync()).PayloadText);
        Assert.Empty(await c.PingAsync());
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Max_connections_exceeded_sends_info_then_err_and_closes(ServerKind kind)
    {
        await using var s = await OwnAsync(kind, "max_connections: 2\n");
        await using var a = await Connected(s);
        await using var b = await Connected(s);
        await using var c = await RawClient.ConnectAsync(s);
        var lines = await c.ExpectClosedAsync();
        Assert.Equal(2, lines.Count);
        Assert.StartsWith("INFO {", lines[0], StringComparison.Ordinal);
        Assert.Equal("-ERR 'maximum connections exceeded'", lines[1]);
        Assert.Empty(await a.PingAsync());
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Permission_violations_are_reported_and_connection_stays(ServerKind kind)
    {
        const string conf = """
            authorization { users: [
              { user: a, password: a, permissions: { publish: { allow: ["pv.>", "_INBOX.>"] }, subscribe: { deny: ["secret.>"] } } }
              { user: b, password: b }
            ]}
            """;
        var s = await SharedAsync(kind, conf);
        await using var a = await Connected(s, """{"verbose":false,"user":"a","pass":"a"}""");
        await using var b = await Connected(s, """{"verbose":false,"user":"b","pass":"b"}""");
        await b.SendAsync("SUB > 1\r\n");
        await b.PingAsync();

        await a.SendAsync("PUB bar 1\r\nx\r\n");
        Assert.Equal(["-ERR 'Permissions Violation for Publish to \"bar\"'"], await a.PingAsync());
        await a.SendAsync("SUB secret.x 1\r\n");
        Assert.Equal(["-ERR 'Permissions Violation for Subscription to \"secret.x\"'"], await a.PingAsync());
        await a.SendAsync("SUB secret.* q 2\r\n");
        Assert.Equal(["-ERR 'Permissions Violation for Subscription to \"secret.*\" using queue \"q\"'"], await a.PingAsync());

        await a.SendAsync("SUB pv.x 3\r\nPUB pv.x 2\r\nok\r\n");
        Assert.Equal("ok", (await a.ExpectMessageAsync()).PayloadText);
        // b saw only the allowed publish.
        var m = await b.ExpectMessageAsync();
        Assert.Equal("pv.x", m.Subject);
        Assert.Empty(await b.PingAsync());
    }
}
