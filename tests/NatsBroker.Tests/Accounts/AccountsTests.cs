using NatsBroker.Tests.Infrastructure;
using NatsBroker.Tests.Protocol;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Accounts;

/// <summary>
/// Accounts as nats-server configures them, run against both servers: isolation, stream imports (prefix and
/// wildcard <c>to</c>), service imports with reply mapping (single and stream responses), no_auth_user into an
/// account, per-account limits.
/// </summary>
public sealed class AccountsTests(ITestOutputHelper output, ServerPool pool) : ProtocolTestBase(output, pool)
{
    private const string Config = """
        accounts {
          A: {
            users: [{user: a, password: a}]
            exports: [
              {stream: "news.>"}
              {service: "help.>"}
              {service: "multi", response_type: "stream"}
              {stream: "secret.>", accounts: [C]}
            ]
          }
          B: {
            users: [{user: b, password: b}]
            imports: [
              {stream: {account: A, subject: "news.>"}, prefix: "a"}
              {service: {account: A, subject: "help.>"}, to: "ask.>"}
              {service: {account: A, subject: "multi"}}
            ]
          }
          C: { users: [{user: c, password: c}], imports: [{stream: {account: A, subject: "secret.>"}, to: "got.>"}] }
          L: { users: [{user: l, password: l}], limits: { max_connections: 1, max_subscriptions: 2 } }
        }
        authorization { users: [{user: g, password: g}] }
        no_auth_user: b
        """;

    private static string As(string user) => $$"""{"verbose":false,"pedantic":false,"headers":true,"user":"{{user}}","pass":"{{user}}"}""";

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Accounts_are_separate_subject_spaces(ServerKind kind)
    {
        var s = await SharedAsync(kind, Config);
        await using var a = await Connected(s, As("a"));
        await using var c = await Connected(s, As("c"));
        await using var g = await Connected(s, As("g"));
        await c.SendLineAsync("SUB iso 1");
        await g.SendLineAsync("SUB iso 1");
        await a.SendLineAsync("SUB iso 1");
        await c.PingAsync();
        await g.PingAsync();
        await a.PingAsync();
        await g.SendAsync("PUB iso 3\r\n$G!\r\n");
        // Only the global account's subscriber sees it; A and C see nothing.
        var got = await g.ExpectMessageAsync();
        Assert.Equal("$G!", got.PayloadText);
        Assert.Empty(await a.PingAsync());
        Assert.Empty(await c.PingAsync());
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Stream_imports_map_subjects_and_private_exports_reach_only_listed_accounts(ServerKind kind)
    {
        var s = await SharedAsync(kind, Config);
        await using var a = await Connected(s, As("a"));
        await using var b = await Connected(s, As("b"));
        await using var c = await Connected(s, As("c"));
        await b.SendLineAsync("SUB a.news.> 1");
        await b.SendLineAsync("SUB news.> 2");
        await b.SendLineAsync("SUB got.> 3");
        await c.SendLineAsync("SUB got.> 1");
        await c.SendLineAsync("SUB a.news.> 2");
        await b.PingAsync();
        await c.PingAsync();
        await a.SendAsync("PUB news.x 2\r\nhi\r\nPUB secret.y 3\r\nsec\r\n");
        await a.PingAsync();
        var m = await b.ExpectMessageAsync();
        Assert.Equal(("a.news.x", "1", "hi"), (m.Subject, m.Sid, m.PayloadText));
        var n = await c.ExpectMessageAsync();
        Assert.Equal(("got.y", "1", "sec"), (n.Subject, n.Sid, n.PayloadText));
        Assert.Empty(await b.PingAsync());
        Assert.Empty(await c.PingAsync());
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Service_import_maps_the_reply_and_a_single_response_ends_it(ServerKind kind)
    {
        var s = await SharedAsync(kind, Config);
        await using var a = await Connected(s, As("a"));
        await using var b = await Connected(s, As("b"));
        await a.SendLineAsync("SUB help.> 9");
        await b.SendLineAsync("SUB _INBOX.x 3");
        await a.PingAsync();
        await b.PingAsync();
        await b.SendAsync("PUB ask.me _INBOX.x 3\r\nreq\r\n");
        var req = await a.ExpectMessageAsync();
        Assert.Equal("HMSG", req.Op);
        Assert.Equal("help.me", req.Subject);
        Assert.StartsWith("_R_.", req.ReplyTo, StringComparison.Ordinal);
        Assert.Matches("^NATS/1.0\r\nNats-Request-Info: \\{\"acc\":\"B\",\"rtt\":[0-9]+\\}\r\n\r\n$", req.HeaderText);
        Assert.Equal("req", req.PayloadText);
        await a.SendAsync($"PUB {req.ReplyTo} 3\r\nans\r\nPUB {req.ReplyTo} 4\r\nans2\r\n");
        await a.PingAsync();
        var resp = await b.ExpectMessageAsync();
        Assert.Equal(("MSG", "_INBOX.x", "3", "ans"), (resp.Op, resp.Subject, resp.Sid, resp.PayloadText));
        Assert.Empty(await b.PingAsync());
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Streamed_service_keeps_request_headers_and_forwards_every_response(ServerKind kind)
    {
        var s = await SharedAsync(kind, Config);
        await using var a = await Connected(s, As("a"));
        await using var b = await Connected(s, As("b"));
        await a.SendLineAsync("SUB multi 10");
        await b.SendLineAsync("SUB _INBOX.y 4");
        await a.PingAsync();
        await b.PingAsync();
        await b.SendAsync("HPUB multi _INBOX.y 18 21\r\nNATS/1.0\r\nX: y\r\n\r\nreq\r\n");
        var req = await a.ExpectMessageAsync();
        Assert.Matches("^NATS/1.0\r\nX: y\r\nNats-Request-Info: \\{\"acc\":\"B\",\"rtt\":[0-9]+\\}\r\n\r\n$", req.HeaderText);
        await a.SendAsync($"PUB {req.ReplyTo} 1\r\n1\r\nPUB {req.ReplyTo} 1\r\n2\r\nPUB {req.ReplyTo} 1\r\n3\r\n");
        await a.PingAsync();
        foreach (var expected in new[] { "1", "2", "3" })
            Assert.Equal(expected, (await b.ExpectMessageAsync()).PayloadText);
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task No_auth_user_lands_in_its_account(ServerKind kind)
    {
        var s = await SharedAsync(kind, Config);
        await using var a = await Connected(s, As("a"));
        await using var anon = await Connected(s, Quiet);
        await anon.SendLineAsync("SUB a.news.> 1");
        await anon.PingAsync();
        await a.SendAsync("PUB news.anon 2\r\nhi\r\n");
        var m = await anon.ExpectMessageAsync();
        Assert.Equal("a.news.anon", m.Subject);
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Account_limits_refuse_extra_connections_and_subscriptions(ServerKind kind)
    {
        await using var s = await OwnAsync(kind, Config);
        var first = await Connected(s, As("l"));
        await using var second = await Raw(s, As("l"));
        await second.ExpectErrAsync("maximum account active connections exceeded");
        await second.ExpectClosedAsync();
        await first.SendLineAsync("SUB x 1");
        await first.SendLineAsync("SUB y 2");
        await first.SendLineAsync("SUB z 3");
        Assert.Equal(["-ERR 'maximum subscriptions exceeded'"], await first.PingAsync());
        // The slot frees when the connection goes.
        await first.DisposeAsync();
        await Task.Delay(300);
        await using var third = await Connected(s, As("l"));
    }
}
