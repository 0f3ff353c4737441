using NATS.Client.Core;
using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;
using static NatsBroker.Tests.Clients.NatsNet.NatsNetKit;

namespace NatsBroker.Tests.Clients.NatsNet;

/// <summary>
/// Core messaging through the official .NET client (NATS.Client.Core 3.3.2), each case against our broker and
/// against nats-server with the same expectations.
/// </summary>
public sealed class CoreMessagingTests(ITestOutputHelper output, ServerPool pool) : IClassFixture<ServerPool>
{
    private async Task<ServerProcess> ServerAsync(ServerKind kind)
    {
        Prerequisites.RequireServer(kind, output);
        var server = await pool.GetAsync(kind);
        output.WriteLine($"using {server}");
        return server;
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Publish_reaches_a_subscriber_on_another_connection_in_order(ServerKind kind)
    {
        var server = await ServerAsync(kind);
        await using var sub = await ConnectAsync(server, "sub");
        await using var pub = await ConnectAsync(server, "pub");
        await using var s = await sub.SubscribeCoreAsync<string>("nn.ps");
        await sub.PingAsync();

        for (var i = 0; i < 100; i++)
        {
            await pub.PublishAsync("nn.ps", "m" + i);
        }

        for (var i = 0; i < 100; i++)
        {
            var m = await NextAsync(s, "nn.ps #" + i);
            Assert.Equal(("nn.ps", "m" + i), (m.Subject, m.Data));
        }

        await BarrierAsync(pub, sub);
        Assert.Empty(Drain(s));
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Wildcards_match_by_token(ServerKind kind)
    {
        var server = await ServerAsync(kind);
        await using var sub = await ConnectAsync(server, "sub");
        await using var pub = await ConnectAsync(server, "pub");
        await using var star = await sub.SubscribeCoreAsync<string>("nw.*");
        await using var tail = await sub.SubscribeCoreAsync<string>("nw.>");
        await using var mid = await sub.SubscribeCoreAsync<string>("nw.*.c");
        await sub.PingAsync();

        foreach (var subject in new[] { "nw", "nw.a", "nw.a.b", "nw.a.c", "nw.b.c.d", "nx.a" })
        {
            await pub.PublishAsync(subject, subject);
        }

        await BarrierAsync(pub, sub);
        Assert.Equal(["nw.a"], Drain(star).Select(m => m.Subject));
        Assert.Equal(["nw.a", "nw.a.b", "nw.a.c", "nw.b.c.d"], Drain(tail).Select(m => m.Subject));
        Assert.Equal(["nw.a.c"], Drain(mid).Select(m => m.Subject));
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Queue_group_delivers_each_message_to_exactly_one_member(ServerKind kind)
    {
        const int count = 600;
        var server = await ServerAsync(kind);
        await using var pub = await ConnectAsync(server, "pub");
        var members = new List<(NatsConnection Connection, INatsSub<int> Sub)>();
        try
        {
            for (var i = 0; i < 3; i++)
            {
                var c = await ConnectAsync(server, "member" + i);
                members.Add((c, await c.SubscribeCoreAsync<int>("nq.work", queueGroup: "workers")));
                await c.PingAsync();
            }

            await using var plainConnection = await ConnectAsync(server, "plain");
            await using var plain = await plainConnection.SubscribeCoreAsync<int>("nq.work");
            await plainConnection.PingAsync();

            for (var i = 0; i < count; i++)
            {
                await pub.PublishAsync("nq.work", i);
            }

            await BarrierAsync(pub, [.. members.Select(m => m.Connection), plainConnection]);
            var perMember = members.Select(m => Drain(m.Sub).Select(x => x.Data).ToList()).ToList();
            output.WriteLine("per member: " + string.Join(", ", perMember.Select(l => l.Count)));
            var all = perMember.SelectMany(l => l).Order().ToList();
            Assert.Equal(Enumerable.Range(0, count), all);
            Assert.All(perMember, l => Assert.NotEmpty(l));
            Assert.Equal(Enumerable.Range(0, count), Drain(plain).Select(m => m.Data));
        }
        finally
        {
            foreach (var (c, s) in members)
            {
                await s.DisposeAsync();
                await c.DisposeAsync();
            }
        }
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Request_reply_with_a_responder_on_another_connection(ServerKind kind)
    {
        var server = await ServerAsync(kind);
        await using var service = await ConnectAsync(server, "service");
        await using var client = await ConnectAsync(server, "client");
        await using var sub = await service.SubscribeCoreAsync<int>("nr.square");
        await service.PingAsync(); // the SUB has reached the server before the other connection's requests
        using var stop = new CancellationTokenSource();
        var responder = Task.Run(async () =>
        {
            await foreach (var m in sub.Msgs.ReadAllAsync(stop.Token))
            {
                await m.ReplyAsync(m.Data * m.Data);
            }
        });

        var replies = await Task.WhenAll(Enumerable.Range(1, 50).Select(async i =>
            (i, (await client.RequestAsync<int, int>("nr.square", i)).Data)));
        Assert.All(replies, r => Assert.Equal(r.i * r.i, r.Data));

        await stop.CancelAsync();
        await Assert.ThrowsAnyAsync<OperationCanceledException>(() => responder);
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Headers_arrive_as_sent(ServerKind kind)
    {
        var server = await ServerAsync(kind);
        await using var sub = await ConnectAsync(server, "sub");
        await using var pub = await ConnectAsync(server, "pub");
        await using var s = await sub.SubscribeCoreAsync<string>("nh.x");
        await sub.PingAsync();

        var headers = new NatsHeaders { ["X-Id"] = "42", ["X-Multi"] = new(["a", "b"]), ["X-Empty"] = "" };
        await pub.PublishAsync("nh.x", "body", headers: headers);
        await pub.PublishAsync("nh.x", (string?)null, headers: new NatsHeaders { ["Only"] = "headers" });

        var m = await NextAsync(s, "nh.x with headers");
        Assert.Equal("body", m.Data);
        Assert.NotNull(m.Headers);
        Assert.Equal("42", m.Headers["X-Id"].ToString());
        Assert.Equal("a|b", string.Join("|", m.Headers["X-Multi"].ToArray()));
        Assert.Equal("", m.Headers["X-Empty"].ToString());

        var empty = await NextAsync(s, "nh.x headers only");
        Assert.Equal("headers", empty.Headers!["Only"].ToString());
        Assert.True(string.IsNullOrEmpty(empty.Data));
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Request_without_responders_throws_NatsNoRespondersException(ServerKind kind)
    {
        var server = await ServerAsync(kind);
        await using var client = await ConnectAsync(server, "client");
        await Assert.ThrowsAsync<NatsNoRespondersException>(async () => await client.RequestAsync<string, string>("nobody.home", "anyone?"));

        // The connection is still usable afterwards.
        await client.PingAsync();
        Assert.Equal(NatsConnectionState.Open, client.ConnectionState);
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Unsubscribe_stops_delivery(ServerKind kind)
    {
        var server = await ServerAsync(kind);
        await using var sub = await ConnectAsync(server, "sub");
        await using var pub = await ConnectAsync(server, "pub");
        var s = await sub.SubscribeCoreAsync<string>("nu.x");
        await sub.PingAsync();
        await pub.PublishAsync("nu.x", "before");
        Assert.Equal("before", (await NextAsync(s, "nu.x before")).Data);

        await s.UnsubscribeAsync();
        await sub.PingAsync();
        await pub.PublishAsync("nu.x", "after");
        await BarrierAsync(pub, sub);
        Assert.Empty(Drain(s));
        await s.DisposeAsync();
    }
}
