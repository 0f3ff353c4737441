using System.Collections.Concurrent;
using NATS.Client.Core;
using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;
using static NatsBroker.Tests.Clients.NatsNet.NatsNetKit;

namespace NatsBroker.Tests.Clients.NatsNet;

/// <summary>
/// Authentication and permissions as NATS.Net surfaces them (exceptions on connect, the ServerError event for
/// -ERR permission violations), against our broker and nats-server with the same expectations.
/// </summary>
public sealed class AuthTests(ITestOutputHelper output, ServerPool pool) : IClassFixture<ServerPool>
{
    private const string UserPassConfig = "authorization { user: alice, password: wonderland }\n";
    private const string TokenConfig = "authorization { token: \"s3cr3t-t0ken\" }\n";

    private const string PermissionsConfig = """
        authorization {
          users = [
            { user: limited, password: pw, permissions: {
                publish: { allow: ["ok.>"], deny: ["ok.secret"] },
                subscribe: { allow: ["ok.>", "_INBOX.>"] } } }
            { user: free, password: pw }
          ]
        }
        """;

    private async Task<ServerProcess> ServerAsync(ServerKind kind, string config)
    {
        Prerequisites.RequireServer(kind, output);
        var server = await pool.GetAsync(kind, config);
        output.WriteLine($"using {server}");
        return server;
    }

    private static Func<NatsOpts, NatsOpts> Auth(NatsAuthOpts auth) => o => o with { AuthOpts = auth };

    /// <summary>The exception and its inner exceptions as one text, for asserting on what the server said.</summary>
    private static string Chain(Exception e)
    {
        var parts = new List<string>();
        for (Exception? x = e; x is not null; x = x.InnerException)
        {
            parts.Add($"{x.GetType().Name}: {x.Message}");
        }

        return string.Join(" <- ", parts);
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task User_password_accepted(ServerKind kind)
    {
        var server = await ServerAsync(kind, UserPassConfig);
        await using var c = await ConnectAsync(server, "alice", Auth(new NatsAuthOpts { Username = "alice", Password = "wonderland" }));
        await using var s = await c.SubscribeCoreAsync<string>("auth.ok");
        await c.PingAsync();
        await c.PublishAsync("auth.ok", "in");
        Assert.Equal("in", (await NextAsync(s, "auth.ok")).Data);
    }

    [SkippableTheory]
    [InlineData(ServerKind.Ours, "alice", "wrong")]
    [InlineData(ServerKind.Go, "alice", "wrong")]
    [InlineData(ServerKind.Ours, "mallory", "wonderland")]
    [InlineData(ServerKind.Go, "mallory", "wonderland")]
    [InlineData(ServerKind.Ours, null, null)]
    [InlineData(ServerKind.Go, null, null)]
    public async Task User_password_rejected(ServerKind kind, string? user, string? password)
    {
        var server = await ServerAsync(kind, UserPassConfig);
        var e = await Assert.ThrowsAnyAsync<NatsException>(() => ConnectAsync(server, "bad",
            Auth(new NatsAuthOpts { Username = user, Password = password })));
        output.WriteLine(Chain(e));
        Assert.Contains("Authorization Violation", Chain(e), StringComparison.OrdinalIgnoreCase);
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Token_accepted_and_wrong_token_rejected(ServerKind kind)
    {
        var server = await ServerAsync(kind, TokenConfig);
        await using (var c = await ConnectAsync(server, "token", Auth(new NatsAuthOpts { Token = "s3cr3t-t0ken" })))
        {
            await c.PingAsync();
            Assert.Equal(NatsConnectionState.Open, c.ConnectionState);
        }

        var e = await Assert.ThrowsAnyAsync<NatsException>(() => ConnectAsync(server, "bad-token", Auth(new NatsAuthOpts { Token = "nope" })));
        output.WriteLine(Chain(e));
        Assert.Contains("Authorization Violation", Chain(e), StringComparison.OrdinalIgnoreCase);
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Publish_violation_is_reported_as_a_server_error_and_the_connection_stays_open(ServerKind kind)
    {
        var server = await ServerAsync(kind, PermissionsConfig);
        await using var free = await ConnectAsync(server, "free", Auth(new NatsAuthOpts { Username = "free", Password = "pw" }));
        await using var watcher = await free.SubscribeCoreAsync<string>(">");
        await free.PingAsync();

        await using var limited = await ConnectAsync(server, "limited", Auth(new NatsAuthOpts { Username = "limited", Password = "pw" }));
        var errors = new ConcurrentQueue<NatsServerErrorEventArgs>();
        limited.ServerError += (_, args) =>
        {
            errors.Enqueue(args);
            return default;
        };

        await limited.PublishAsync("other", "denied by allow list");
        await limited.PublishAsync("ok.secret", "denied by deny list");
        await limited.PublishAsync("ok.fine", "allowed");
        await BarrierAsync(limited, free);

        Assert.Equal(["ok.fine"], Drain(watcher).Where(m => !m.Subject.StartsWith("_INBOX.", StringComparison.Ordinal)).Select(m => m.Subject));
        // NATS.Net raises ServerError off its read loop: the -ERRs arrived before the barrier's PONG, their events may
        // still be on their way (a fresh-clone CI run saw none 14 ms in).
        for (var deadline = DateTime.UtcNow.AddSeconds(5); errors.Count < 2 && DateTime.UtcNow < deadline;) await Task.Delay(20);
        var seen = errors.Select(e => (e.Kind, e.Error)).ToList();
        output.WriteLine(string.Join("\n", seen));
        Assert.Equal(
        [
            (NatsServerErrorKind.PermissionsViolation, "Permissions Violation for Publish to \"other\""),
            (NatsServerErrorKind.PermissionsViolation, "Permissions Violation for Publish to \"ok.secret\""),
        ], seen);
        Assert.Equal(NatsConnectionState.Open, limited.ConnectionState);
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Subscribe_violation_is_reported_and_allowed_subscriptions_keep_working(ServerKind kind)
    {
        var server = await ServerAsync(kind, PermissionsConfig);
        await using var limited = await ConnectAsync(server, "limited", Auth(new NatsAuthOpts { Username = "limited", Password = "pw" }));
        var errors = new ConcurrentQueue<NatsServerErrorEventArgs>();
        limited.ServerError += (_, args) =>
        {
            errors.Enqueue(args);
            return default;
        };

        await using var denied = await limited.SubscribeCoreAsync<string>("forbidden.x");
        await using var allowed = await limited.SubscribeCoreAsync<string>("ok.sub");
        await limited.PingAsync();

        await using var free = await ConnectAsync(server, "free", Auth(new NatsAuthOpts { Username = "free", Password = "pw" }));
        await free.PublishAsync("forbidden.x", "never delivered");
        await free.PublishAsync("ok.sub", "delivered");
        await BarrierAsync(free, limited);

        Assert.Equal(["delivered"], Drain(allowed).Select(m => m.Data));
        Assert.Empty(Drain(denied));
        var seen = errors.Select(e => (e.Kind, e.Error)).ToList();
        output.WriteLine(string.Join("\n", seen));
        Assert.Equal([(NatsServerErrorKind.PermissionsViolation, "Permissions Violation for Subscription to \"forbidden.x\"")], seen);
        Assert.Equal(NatsConnectionState.Open, limited.ConnectionState);

        // Request/reply through the allowed inbox still works for the limited user.
        await using var service = await free.SubscribeCoreAsync<string>("ok.svc");
        await free.PingAsync();
        var responder = Task.Run(async () =>
        {
            var m = await NextAsync(service, "ok.svc request");
            await m.ReplyAsync("pong:" + m.Data);
        });
        var reply = await limited.RequestAsync<string, string>("ok.svc", "ping");
        Assert.Equal("pong:ping", reply.Data);
        await responder;
    }
}
