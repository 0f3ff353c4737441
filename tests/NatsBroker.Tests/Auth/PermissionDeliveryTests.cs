using System.Text;
using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Auth;

/// <summary>
/// Issue 38 on our broker end to end (no reference server needed): a subscribe deny narrower than an allowed
/// wildcard SUB keeps its subjects out of that SUB's deliveries, plain or queue, and a denied queue member leaves
/// the message to another member (client.go processMsgResults tries the next one when deliverMsg refuses).
/// </summary>
public sealed class PermissionDeliveryTests(ITestOutputHelper output)
{
    private const string Config = """
        authorization { users = [
          {user: d, password: p, permissions: { subscribe: { deny: ["pub.secret.>"] } }}
          {user: a, password: p, permissions: { subscribe: { allow: [">"], deny: ["pub.secret.>"] } }}
          {user: s, password: p}
        ] }
        """;

    private static string Connect(string user) => $$"""CONNECT {"verbose":false,"echo":false,"user":"{{user}}","pass":"p"}""" + "\r\n";

    /// <summary>MSG lines as "sid subject", sorted.</summary>
    private static List<string> Msgs(string text)
    {
        var list = text.Split('\n').Where(l => l.StartsWith("MSG ", StringComparison.Ordinal))
            .Select(l => l.Split(' ')).Select(f => f[2] + " " + f[1]).ToList();
        list.Sort(StringComparer.Ordinal);
        return list;
    }

    [Theory]
    [InlineData("d")]
    [InlineData("a")]
    public async Task Wildcard_subscriptions_do_not_receive_denied_subjects(string user)
    {
        await using var server = await ServerProcess.StartAsync(ServerKind.Ours, Config, output);
        using var sub = new RawClient(server.Port);
        using var pub = new RawClient(server.Port);
        Assert.Equal("", sub.Send(Connect(user) +
            "SUB pub.*.x 1\r\nSUB *.*.x 2\r\nSUB pub.*.*.x 3\r\nSUB pub.*.x g1 4\r\nSUB *.*.x g2 5\r\nSUB pub.*.*.x g3 6\r\nSUB pub.> 7\r\n"));
        // Fully inside the deny: refused with nats-server's text, and the connection stays open.
        Assert.Equal("-ERR 'Permissions Violation for Subscription to \"pub.secret.>\"'\n", sub.Send("SUB pub.secret.> 8\r\n"));
        Assert.Equal("-ERR 'Permissions Violation for Subscription to \"pub.secret.*\" using queue \"g\"'\n", sub.Send("SUB pub.secret.* g 9\r\n"));
        pub.Send(Connect("s") + "PUB pub.secret.x 1\r\nm\r\nPUB pub.secret.deep.x 1\r\nm\r\nPUB pub.open.x 1\r\nm\r\nPUB pub.open.deep.x 1\r\nm\r\n");
        Assert.Equal(
            new List<string> { "1 pub.open.x", "2 pub.open.x", "3 pub.open.deep.x", "4 pub.open.x", "5 pub.open.x", "6 pub.open.deep.x", "7 pub.open.deep.x", "7 pub.open.x" },
            Msgs(sub.Send("")));
        Assert.False(sub.Closed);
    }

    [Fact]
    public async Task A_denied_queue_member_leaves_the_message_to_another_member()
    {
        await using var server = await ServerProcess.StartAsync(ServerKind.Ours, Config, output);
        using var denied = new RawClient(server.Port);
        using var open = new RawClient(server.Port);
        using var pub = new RawClient(server.Port);
        Assert.Equal("", denied.Send(Connect("d") + "SUB pub.*.x g 1\r\n"));
        Assert.Equal("", open.Send(Connect("s") + "SUB pub.*.x g 1\r\n"));
        var batch = new StringBuilder(Connect("s"));
        for (int i = 0; i < 50; i++) batch.Append("PUB pub.secret.x 1\r\nm\r\n");
        pub.Send(batch.ToString());
        Assert.Empty(Msgs(denied.Send("")));
        Assert.Equal(50, Msgs(open.Send("")).Count);
    }
    [Fact]
    public async Task A_reload_that_adds_a_deny_filters_existing_wildcard_subscriptions()
    {
        // client.go processSubsOnConfigReload clears c.mperms and rebuilds it through canSubscribe for the kept SUBs.
        const string before = "authorization { users = [ {user: u, password: p}, {user: s, password: p} ] }";
        const string after = """
            authorization { users = [
              {user: u, password: p, permissions: { subscribe: { deny: ["pub.secret.>", "reload.marker"] } }}
              {user: s, password: p}
            ] }
            """;
        await using var server = await ServerProcess.StartAsync(ServerKind.Ours, before, output);
        using var sub = new RawClient(server.Port);
        using var pub = new RawClient(server.Port);
        Assert.Equal("", sub.Send(Connect("u") + "SUB pub.*.x 1\r\nSUB pub.*.x g 2\r\nSUB reload.marker 3\r\n"));
        Assert.Equal("", pub.Send(Connect("s")));
        server.WriteConfig(after);
        server.Reload();
        // The revoked literal SUB tells that the new permissions are in place.
        var seen = new StringBuilder();
        var deadline = DateTime.UtcNow.AddSeconds(10);
        while (!seen.ToString().Contains("reload.marker", StringComparison.Ordinal) && DateTime.UtcNow < deadline)
        {
            Thread.Sleep(50);
            seen.Append(sub.Send(""));
        }
        Assert.Contains("reload.marker", seen.ToString(), StringComparison.Ordinal);
        pub.Send("PUB pub.secret.x 1\r\nm\r\nPUB pub.open.x 1\r\nm\r\n");
        Assert.Equal(new List<string> { "1 pub.open.x", "2 pub.open.x" }, Msgs(sub.Send("")));
    }
}
