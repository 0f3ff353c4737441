using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Protocol;

public sealed class PubSubTests(ITestOutputHelper output, ServerPool pool) : ProtocolTestBase(output, pool)
{
    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Pub_sub_delivers_msg_with_and_without_reply(ServerKind kind)
    {
        var s = await SharedAsync(kind);
        await using var sub = await Connected(s);
        await using var pub = await Connected(s);
        await sub.SendAsync("SUB ps.a 7\r\n");
        await sub.PingAsync();
        await pub.SendAsync("PUB ps.a 5\r\nhello\r\nPUB ps.a r.inbox 3\r\nabc\r\nPUB ps.a 0\r\n\r\n");
        var m1 = await sub.ExpectMessageAsync();
        Assert.Equal(("MSG", "ps.a", "7", null, "hello"), (m1.Op, m1.Subject, m1.Sid, m1.ReplyTo, m1.PayloadText));
        var m2 = await sub.ExpectMessageAsync();
        Assert.Equal(("ps.a", "7", "r.inbox", "abc"), (m2.Subject, m2.Sid, m2.ReplyTo, m2.PayloadText));
        var m3 = await sub.ExpectMessageAsync();
        Assert.Equal("", m3.PayloadText);
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Exact_wire_format_of_msg(ServerKind kind)
    {
        var s = await SharedAsync(kind);
        await using var c = await Connected(s);
        await c.SendAsync("SUB wf.x 1\r\nPUB wf.x rep 2\r\nhi\r\nPING\r\n");
        await c.ExpectLineAsync("MSG wf.x 1 rep 2");
        await c.ExpectLineAsync("hi");
        await c.ExpectLineAsync("PONG");
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Binary_payload_with_crlf_inside_is_delivered_intact(ServerKind kind)
    {
        var s = await SharedAsync(kind);
        await using var c = await Connected(s);
        var payload = new byte[] { 0, 13, 10, 255, 13, 10, 80, 73, 78, 71, 13, 10 };
        await c.SendAsync("SUB bin 1\r\n");
        await c.SendBytesAsync((byte[])[.. "PUB bin 12\r\n"u8.ToArray(), .. payload, 13, 10]);
        var m = await c.ExpectMessageAsync();
        Assert.Equal(payload, m.Payload);
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Wildcards_match_and_each_subscription_gets_a_copy(ServerKind kind)
    {
        var s = await SharedAsync(kind);
        await using var c = await Connected(s);
        await c.SendAsync("SUB wc.* 1\r\nSUB wc.> 2\r\nSUB > 3\r\nSUB wc.a.b 4\r\nSUB *.a 5\r\nPUB wc.a 1\r\nx\r\n");
        var sids = new List<string>();
        for (var i = 0; i < 4; i++)
        {
            sids.Add((await c.ExpectMessageAsync()).Sid);
        }

        Assert.Empty(await c.PingAsync());
        Assert.Equal(["1", "2", "3", "5"], sids.Order());
        await c.SendAsync("PUB wc.a.b 1\r\ny\r\n");
        sids.Clear();
        for (var i = 0; i < 3; i++)
        {
            sids.Add((await c.ExpectMessageAsync()).Sid);
        }

        Assert.Empty(await c.PingAsync());
        Assert.Equal(["2", "3", "4"], sids.Order());
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Non_matching_subjects_are_not_delivered(ServerKind kind)
    {
        var s = await SharedAsync(kind);
        await using var c = await Connected(s);
        await c.SendAsync("SUB nm.bar 1\r\nSUB nm.* 2\r\nPUB nm.bar.baz 1\r\nx\r\nPUB nm 1\r\nx\r\nPUB NM.BAR 1\r\nx\r\n");
        Assert.Empty(await c.PingAsync());
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Queue_group_delivers_each_message_to_exactly_one_member(ServerKind kind)
    {
        var s = await SharedAsync(kind);
        await using var a = await Connected(s);
        await using var b = await Connected(s);
        await using var plain = await Connected(s);
        await a.SendAsync("SUB qg.x workers 1\r\n");
        await b.SendAsync("SUB qg.x workers 1\r\n");
        await plain.SendAsync("SUB qg.x 9\r\n");
        await a.PingAsync();
        await b.PingAsync();
        await plain.PingAsync();
        await using var pub = await Connected(s);
        const int N = 200;
        for (var i = 0; i < N; i++)
        {
            await pub.SendAsync($"PUB qg.x {i.ToString().Length}\r\n{i}\r\n");
        }

        await pub.PingAsync();
        for (var i = 0; i < N; i++)
        {
            Assert.Equal(i.ToString(), (await plain.ExpectMessageAsync()).PayloadText);
        }

        var got = new List<string>();
        got.AddRange((await a.PingAsync()).Where(l => !l.StartsWith("MSG", StringComparison.Ordinal)));
        got.AddRange((await b.PingAsync()).Where(l => !l.StartsWith("MSG", StringComparison.Ordinal)));
        Assert.Equal(N, got.Count);
        Assert.Equal(Enumerable.Range(0, N).Select(i => i.ToString()), got.Select(int.Parse).Order().Select(i => i.ToString()));
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Unsub_stops_delivery(ServerKind kind)
    {
        var s = await SharedAsync(kind);
        await using var c = await Connected(s);
        await c.SendAsync("SUB us.x 1\r\nPUB us.x 1\r\na\r\nUNSUB 1\r\nPUB us.x 1\r\nb\r\n");
        Assert.Equal("a", (await c.ExpectMessageAsync()).PayloadText);
        Assert.Empty(await c.PingAsync());
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Unsub_with_max_auto_unsubscribes(ServerKind kind)
    {
        var s = await SharedAsync(kind);
        await using var c = await Connected(s);
        await c.SendAsync("SUB um.x 1\r\nUNSUB 1 2\r\nPUB um.x 1\r\na\r\nPUB um.x 1\r\nb\r\nPUB um.x 1\r\nc\r\n");
        Assert.Equal("a", (await c.ExpectMessageAsync()).PayloadText);
        Assert.Equal("b", (await c.ExpectMessageAsync()).PayloadText);
        Assert.Empty(await c.PingAsync());
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Unsub_max_already_reached_removes_at_once(ServerKind kind)
    {
        var s = await SharedAsync(kind);
        await using var c = await Connected(s);
        await c.SendAsync("SUB ur.x 1\r\nPUB ur.x 1\r\na\r\nUNSUB 1 1\r\nPUB ur.x 1\r\nb\r\n");
        Assert.Equal("a", (await c.ExpectMessageAsync()).PayloadText);
        Assert.Empty(await c.PingAsync());
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Unsub_of_unknown_sid_is_ignored(ServerKind kind)
    {
        var s = await SharedAsync(kind);
        await using var c = await Connected(s, """{"verbose":true}""");
        await c.SendAsync("UNSUB 999\r\n");
        Assert.Equal(["+OK"], await c.PingAsync());
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Verbose_acknowledges_every_op_with_ok(ServerKind kind)
    {
        var s = await SharedAsync(kind);
        await using var c = await Raw(s, """{"verbose":true}""");
        await c.SendAsync("SUB vb.x 1\r\nPUB vb.x 2\r\nhi\r\nUNSUB 1\r\nPING\r\n");
        Assert.Equal(["+OK", "+OK", "+OK", "MSG vb.x 1 2", "hi", "+OK"], await c.ReadUntilPongAsync());
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Echo_false_suppresses_own_messages_only(ServerKind kind)
    {
        var s = await SharedAsync(kind);
        await using var self = await Connected(s, """{"verbose":false,"echo":false}""");
        await using var other = await Connected(s);
        await self.SendAsync("SUB ec.x 1\r\n");
        await other.SendAsync("SUB ec.x 1\r\n");
        await self.PingAsync();
        await other.PingAsync();
        await self.SendAsync("PUB ec.x 4\r\nself\r\n");
        Assert.Empty(await self.PingAsync());
        Assert.Equal("self", (await other.ExpectMessageAsync()).PayloadText);
        await other.SendAsync("PUB ec.x 5\r\nother\r\n");
        Assert.Equal("other", (await self.ExpectMessageAsync()).PayloadText);
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Echo_true_delivers_own_messages(ServerKind kind)
    {
        var s = await SharedAsync(kind);
        await using var c = await Connected(s);
        await c.SendAsync("SUB et.x 1\r\nPUB et.x 2\r\nme\r\n");
        Assert.Equal("me", (await c.ExpectMessageAsync()).PayloadText);
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Hpub_delivers_hmsg_to_header_clients(ServerKind kind)
    {
        var s = await SharedAsync(kind);
        await using var c = await Connected(s, QuietHeaders);
        await c.SendAsync("SUB hp.x 1\r\nHPUB hp.x rep 24 29\r\nNATS/1.0\r\nA: b\r\nC: d\r\n\r\nhello\r\nPING\r\n");
        await c.ExpectLineAsync("HMSG hp.x 1 rep 24 29");
        await c.ExpectLineAsync("NATS/1.0");
        await c.ExpectLineAsync("A: b");
        await c.ExpectLineAsync("C: d");
        await c.ExpectLineAsync("");
        await c.ExpectLineAsync("hello");
        await c.ExpectLineAsync("PONG");
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Hpub_to_a_subscriber_without_headers_delivers_payload_only(ServerKind kind)
    {
        var s = await SharedAsync(kind);
        await using var old = await Connected(s, Quiet);
        await using var pub = await Connected(s, QuietHeaders);
        await old.SendAsync("SUB hn.x 1\r\n");
        await old.PingAsync();
        await pub.SendAsync("HPUB hn.x 12 17\r\nNATS/1.0\r\n\r\nhello\r\n");
        var m = await old.ExpectMessageAsync();
        Assert.Equal(("MSG", "hello"), (m.Op, m.PayloadText));
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task No_responders_returns_a_503_hmsg(ServerKind kind)
    {
        var s = await SharedAsync(kind);
        await using var c = await Connected(s, """{"verbose":false,"headers":true,"no_responders":true}""");
        await c.SendAsync("SUB nr.inbox 1\r\nPUB nr.nobody nr.inbox 2\r\nhi\r\nPING\r\n");
        // Ours answers as nats-server 2.10+ (the 11_no_responders transcript compares it with 2.14.5): the status
        // names the request's subject. Debian's 2.9.10 sends the bare status.
        if (kind == ServerKind.Ours)
        {
            await c.ExpectLineAsync("HMSG nr.inbox 1 41 41");
            await c.ExpectLineAsync("NATS/1.0 503");
            await c.ExpectLineAsync("Nats-Subject: nr.nobody");
        }
        else
        {
            await c.ExpectLineAsync("HMSG nr.inbox 1 16 16");
            await c.ExpectLineAsync("NATS/1.0 503");
        }
        await c.ExpectLineAsync("");
        await c.ExpectLineAsync("");
        await c.ExpectLineAsync("PONG");
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task No_responders_is_not_sent_when_someone_listens(ServerKind kind)
    {
        var s = await SharedAsync(kind);
        await using var c = await Connected(s, """{"verbose":false,"headers":true,"no_responders":true}""");
        await c.SendAsync("SUB nl.inbox 1\r\nSUB nl.svc 2\r\nPUB nl.svc nl.inbox 2\r\nhi\r\n");
        var m = await c.ExpectMessageAsync();
        Assert.Equal(("nl.svc", "nl.inbox"), (m.Subject, m.ReplyTo));
        Assert.Empty(await c.PingAsync());
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Request_reply_round_trip_between_connections(ServerKind kind)
    {
        var s = await SharedAsync(kind);
        await using var svc = await Connected(s);
        await using var req = await Connected(s);
        await svc.SendAsync("SUB rr.svc 1\r\n");
        await svc.PingAsync();
        await req.SendAsync("SUB _INBOX.rr 1\r\nPUB rr.svc _INBOX.rr 4\r\nping\r\n");
        var m = await svc.ExpectMessageAsync();
        await svc.SendAsync($"PUB {m.ReplyTo} 4\r\npong\r\n");
        Assert.Equal("pong", (await req.ExpectMessageAsync()).PayloadText);
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Ping_pong_and_pong_is_ignored(ServerKind kind)
    {
        var s = await SharedAsync(kind);
        await using var c = await Connected(s);
        await c.SendAsync("PONG\r\nPING\r\nPING\r\n");
        await c.ExpectLineAsync("PONG");
        await c.ExpectLineAsync("PONG");
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Duplicate_sid_subscription_delivers_once(ServerKind kind)
    {
        var s = await SharedAsync(kind);
        await using var c = await Connected(s);
        await c.SendAsync("SUB ds.x 1\r\nSUB ds.x 1\r\nPUB ds.x 1\r\nx\r\n");
        await c.ExpectMessageAsync();
        Assert.Empty(await c.PingAsync());
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Large_payload_up_to_max_payload_is_delivered(ServerKind kind)
    {
        var s = await SharedAsync(kind);
        await using var c = await Connected(s);
        var payload = new byte[1024 * 1024];
        new Random(42).NextBytes(payload);
        await c.SendAsync("SUB big 1\r\n");
        await c.SendBytesAsync((byte[])[.. "PUB big 1048576\r\n"u8.ToArray(), .. payload, 13, 10]);
        var m = await c.ExpectMessageAsync(TimeSpan.FromSeconds(10));
        Assert.Equal(payload, m.Payload);
    }
}
