using System.Buffers;
using System.Collections.Concurrent;
using System.Text;
using NatsBroker.Routing;
using NatsBroker.Subscriptions;
using NatsBroker.Tests.Server;

namespace NatsBroker.Tests.Routing;

/// <summary>The router as the seam for server-internal publishers and subscribers (JetStream, services, gateways).</summary>
public sealed class RouterTests
{
    [Fact]
    public async Task Internal_subscriber_receives_a_client_publish_with_reply_and_headers()
    {
        await using var server = new EmbeddedServer();
        var got = new BlockingCollection<(string Subject, string Reply, string Headers, string Body, ulong Origin)>();
        server.Server.Router.SubscribeInternal("svc.>", null, (Subscription _, in InternalMessage m) =>
            got.Add((Encoding.ASCII.GetString(m.Subject), Encoding.ASCII.GetString(m.Reply),
                Encoding.ASCII.GetString(m.Headers.ToArray()), Encoding.ASCII.GetString(m.Body.ToArray()), m.Origin?.Id ?? 0)));
        using var c = server.Connect();
        c.Send("PUB svc.a 2\r\nhi\r\nHPUB svc.b inbox.1 12 14\r\nNATS/1.0\r\n\r\nyo\r\nPING\r\n"u8);
        EmbeddedServer.ReadUntil(c, "PONG\r\n"u8);
        Assert.True(got.TryTake(out var first, 5000));
        Assert.Equal(("svc.a", "", "", "hi"), (first.Subject, first.Reply, first.Headers, first.Body));
        Assert.NotEqual(0UL, first.Origin);
        Assert.True(got.TryTake(out var second, 5000));
        Assert.Equal(("svc.b", "inbox.1", "NATS/1.0\r\n\r\n", "yo"), (second.Subject, second.Reply, second.Headers, second.Body));
    }

    [Fact]
    public async Task Internal_publish_reaches_client_subscriptions_from_any_thread()
    {
        await using var server = new EmbeddedServer();
        using var c = server.Connect();
        c.Send("SUB out.* 9\r\nPING\r\n"u8);
        EmbeddedServer.ReadUntil(c, "PONG\r\n"u8);
        bool matched = await Task.Run(() => server.Server.Router.PublishInternal("out.x"u8, "r.1"u8, "NATS/1.0\r\nA: b\r\n\r\n"u8, "body"u8));
        Assert.True(matched);
        var text = Encoding.ASCII.GetString(EmbeddedServer.ReadUntil(c, "body\r\n"u8));
        Assert.Equal("HMSG out.x 9 r.1 18 22\r\nNATS/1.0\r\nA: b\r\n\r\nbody\r\n", text);
        Assert.False(server.Server.Router.PublishInternal("nobody.here"u8, default, default, "x"u8));
    }

    [Fact]
    public async Task Internal_queue_subscribers_share_messages_with_client_queue_members()
    {
        await using var server = new EmbeddedServer();
        int internalCount = 0;
        server.Server.Router.SubscribeInternal("work", "q", (Subscription _, in InternalMessage m) => Interlocked.Increment(ref internalCount));
        using var member = server.Connect();
        member.Send("SUB work q 1\r\nPING\r\n"u8);
        EmbeddedServer.ReadUntil(member, "PONG\r\n"u8);
        const int n = 400;
        for (int i = 0; i < n; i++) server.Server.Router.PublishInternal("work"u8, default, default, "m"u8);
        member.Send("PING\r\n"u8);
        var text = Encoding.ASCII.GetString(EmbeddedServer.ReadUntil(member, "PONG\r\n"u8));
        int clientCount = (text.Length - text.Replace("MSG work 1 1", "", StringComparison.Ordinal).Length) / "MSG work 1 1".Length;
        // Each message goes to exactly one member of the group; both members get some.
        Assert.Equal(n, clientCount + Volatile.Read(ref internalCount));
        Assert.InRange(clientCount, 1, n - 1);
    }

    [Fact]
    public async Task A_throwing_callback_does_not_break_the_publisher_or_other_subscribers()
    {
        await using var server = new EmbeddedServer();
        server.Server.Router.SubscribeInternal("boom", null, (Subscription _, in InternalMessage m) => throw new InvalidOperationException("test fault"));
        using var c = server.Connect();
        c.Send("SUB boom 1\r\nPUB boom 1\r\nx\r\nPING\r\n"u8);
        var text = Encoding.ASCII.GetString(EmbeddedServer.ReadUntil(c, "PONG\r\n"u8));
        Assert.Contains("MSG boom 1 1\r\nx\r\n", text, StringComparison.Ordinal);
    }

    [Fact]
    public async Task A_subscription_loop_of_internal_publishers_is_cut_at_the_nesting_limit()
    {
        await using var server = new EmbeddedServer();
        var router = server.Server.Router;
        int calls = 0;
        // Each delivery publishes again to the same subject: without a limit this would overflow the stack.
        router.SubscribeInternal("loop", null, (Subscription _, in InternalMessage m) =>
        {
            Interlocked.Increment(ref calls);
            router.PublishInternal("loop"u8, default, default, "again"u8);
        });
        router.PublishInternal("loop"u8, default, default, "start"u8);
        Assert.Equal(Router.MaxNesting, calls);
        Assert.Equal(1, router.DroppedNested);
    }

    [Fact]
    public async Task Unsubscribed_internal_subscription_gets_nothing()
    {
        await using var server = new EmbeddedServer();
        int count = 0;
        var sub = server.Server.Router.SubscribeInternal("gone", null, (Subscription _, in InternalMessage m) => Interlocked.Increment(ref count));
        server.Server.Router.PublishInternal("gone"u8, default, default, "1"u8);
        server.Server.Router.Unsubscribe(sub);
        Assert.False(server.Server.Router.PublishInternal("gone"u8, default, default, "2"u8));
        Assert.Equal(1, count);
    }
}
