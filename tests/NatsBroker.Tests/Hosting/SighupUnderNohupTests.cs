using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Hosting;

/// <summary>
/// A server started under <c>nohup</c> (SIGHUP inherited ignored) still reloads its config on SIGHUP, as nats-server
/// does (Go's signal.Notify un-ignores SIGHUP). Ours kept the inherited SIG_IGN before, and every reload test failed
/// when the test run itself was started under nohup.
/// </summary>
public sealed class SighupUnderNohupTests(ITestOutputHelper output)
{
    private const string Before = "authorization { users: [ { user: alice, password: alice-pass } ] }\n";
    private const string After = "authorization { users: [ { user: alice, password: alice-pass }, { user: bob, password: bob-pass } ] }\n";
    private const string BobConnect = "CONNECT {\"verbose\":false,\"pedantic\":false,\"user\":\"bob\",\"pass\":\"bob-pass\"}";

    [SkippableTheory]
    [MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task A_server_started_under_nohup_reloads_on_SIGHUP(ServerKind kind)
    {
        Prerequisites.RequireServer(kind, output);
        await using var s = await ServerProcess.StartAsync(kind, new ServerStartOptions { Config = Before, UnderNohup = true }, output);
        Assert.Equal("-ERR 'Authorization Violation'", await BobConnectsAsync(s));

        s.WriteConfig(After);
        s.Reload();
        // The reload is asynchronous to the signal: bob is let in once it has been applied.
        string? last = null;
        for (var deadline = DateTime.UtcNow.AddSeconds(10); DateTime.UtcNow < deadline;)
        {
            last = await BobConnectsAsync(s);
            if (last == "PONG") break;
            await Task.Delay(100);
        }
        Assert.True(last == "PONG", $"bob after the reload: {last ?? "<closed>"}\n{s.OutputTail()}");
        Assert.False(s.HasExited, s.OutputTail());
    }

    /// <summary>CONNECT as bob and PING: "PONG" when let in, else the server's first line (its -ERR).</summary>
    private static async Task<string?> BobConnectsAsync(ServerProcess s)
    {
        await using var c = await RawClient.ConnectAsync(s);
        await c.ReadLineAsync(TimeSpan.FromSeconds(10)); // INFO
        await c.SendLineAsync(BobConnect + "\r\nPING");
        return await c.ReadLineAsync(TimeSpan.FromSeconds(10));
    }
}
