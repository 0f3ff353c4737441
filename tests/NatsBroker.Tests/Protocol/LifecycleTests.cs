using System.Diagnostics;
using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Protocol;

/// <summary>Signals as nats-server handles them: SIGUSR2 lame duck mode, SIGTERM graceful shutdown.</summary>
[Collection(NatsBroker.Tests.Server.AllocationCollection.Name)]
public sealed class LifecycleTests(ITestOutputHelper output, ServerPool pool) : ProtocolTestBase(output, pool)
{
    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Lame_duck_mode_sends_ldm_info_then_closes_clients_and_exits(ServerKind kind)
    {
        await using var s = await OwnAsync(kind, "lame_duck_duration: \"30s\"\nlame_duck_grace_period: \"1s\"\n");
        // lame_duck_duration has a 30 s minimum; with one client nats-server closes it right after the grace period.
        // Async INFO goes to clients that said protocol 1 (as every current client library does).
        await using var c = await Connected(s, """{"verbose":false,"pedantic":false,"protocol":1}""");
        Assert.Empty(await c.PingAsync());

        var sw = Stopwatch.StartNew();
        s.Signal("USR2");
        var info = await c.ReadLineAsync(TimeSpan.FromSeconds(5));
        Assert.NotNull(info);
        Assert.StartsWith("INFO {", info, StringComparison.Ordinal);
        Assert.Contains("\"ldm\":true", info, StringComparison.Ordinal);

        // New clients are no longer accepted while in lame duck mode.
        await Assert.ThrowsAnyAsync<Exception>(async () =>
        {
            await using var late = await RawClient.ConnectAsync(s);
            await late.ReadInfoAsync();
        });

        var rest = await c.ExpectClosedAsync(TimeSpan.FromSeconds(10));
        Assert.All(rest, l => Assert.Equal("PING", l));
        Output.WriteLine($"client closed {sw.ElapsedMilliseconds} ms after SIGUSR2");
        var exitDeadline = Stopwatch.StartNew();
        while (!s.HasExited && exitDeadline.Elapsed < TimeSpan.FromSeconds(10)) await Task.Delay(50);
        Assert.True(s.HasExited, "server did not exit after lame duck mode");
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Sigterm_flushes_and_closes_clients_then_exits(ServerKind kind)
    {
        await using var s = await OwnAsync(kind);
        await using var sub = await Connected(s);
        await sub.SendAsync("SUB t.x 1\r\n");
        Assert.Empty(await sub.PingAsync());
        await using var pub = await Connected(s);
        await pub.SendAsync("PUB t.x 5\r\nhello\r\n");
        Assert.Empty(await pub.PingAsync());
        var m = await sub.ExpectMessageAsync(TimeSpan.FromSeconds(5));
        Assert.Equal("hello", System.Text.Encoding.ASCII.GetString(m.Payload));

        s.Signal("TERM");
        var rest = await sub.ExpectClosedAsync(TimeSpan.FromSeconds(10));
        Assert.All(rest, l => Assert.Equal("PING", l));
        var deadline = Stopwatch.StartNew();
        while (!s.HasExited && deadline.Elapsed < TimeSpan.FromSeconds(10)) await Task.Delay(50);
        Assert.True(s.HasExited, "server did not exit on SIGTERM");
    }
}
