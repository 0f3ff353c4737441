using Xunit.Abstractions;

namespace NatsBroker.Tests.Infrastructure;

/// <summary>The harness itself: start, connect, restart on the same port, signals, split sends.</summary>
public sealed class InfrastructureSelfTests(ITestOutputHelper output)
{
    [Fact]
    public void Repo_root_and_binaries_are_located()
    {
        Assert.True(File.Exists(Path.Combine(TestEnvironment.RepoRoot, "NatsBroker.slnx")));
        Assert.True(File.Exists(TestEnvironment.OursDllPath()), TestEnvironment.OursDllPath());
        output.WriteLine($"repo: {TestEnvironment.RepoRoot}");
        output.WriteLine($"ours: {TestEnvironment.OursExecutablePath() ?? TestEnvironment.OursDllPath()} (native: {TestEnvironment.OursExecutableIsNative}; redirected to Go: {TestEnvironment.OursRedirectedToGo})");
        output.WriteLine($"go:   {TestEnvironment.GoServerPath ?? "(not found)"}");
        output.WriteLine($"node: {TestEnvironment.NodePath ?? "(not found)"}; npm: {TestEnvironment.NpmPath ?? "(not found)"}");
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Starts_accepts_restarts_on_the_same_port_and_stops(ServerKind kind)
    {
        Prerequisites.RequireServer(kind, output);

        await using var server = await ServerProcess.StartAsync(kind, log: output);
        Assert.True(server.Port > 0);
        Assert.True(server.Pid > 0);
        await using (var c = await RawClient.ConnectAndHandshakeAsync(server))
        {
            Assert.Equal(server.Port, c.Info!.Value.GetProperty("port").GetInt32());
        }

        var port = server.Port;
        await using var victim = await RawClient.ConnectAndHandshakeAsync(server);
        await server.RestartAsync(hard: true);
        Assert.Equal(port, server.Port);
        await victim.ExpectClosedAsync();
        await using (var c = await RawClient.ConnectAndHandshakeAsync(server))
        {
            Assert.Empty(await c.PingAsync());
        }

        await server.StopAsync();
        Assert.True(server.HasExited);
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Split_sends_reassemble(ServerKind kind)
    {
        Prerequisites.RequireServer(kind, output);

        await using var server = await ServerProcess.StartAsync(kind, log: output);
        await using var c = await RawClient.ConnectAndHandshakeAsync(server);
        var bytes = "SUB foo 1\r\nPUB foo 5\r\nhello\r\n"u8.ToArray();
        await c.SendChunkedAsync(bytes, 1, TimeSpan.FromMilliseconds(1));
        var m = await c.ExpectMessageAsync();
        Assert.Equal("hello", m.PayloadText);
        Assert.Equal("foo", m.Subject);
        Assert.Equal("1", m.Sid);
    }

    [Fact]
    public void Go_switch_redirects_only_ours_cases()
    {
        // NATSBROKER_TEST_SERVER=go runs "ours" cases against nats-server; Go cases always stay on nats-server.
        output.WriteLine($"{TestEnvironment.ServerSwitch}={Environment.GetEnvironmentVariable(TestEnvironment.ServerSwitch) ?? "(unset)"}: Ours -> {TestEnvironment.Resolve(ServerKind.Ours)}");
        Assert.Equal(TestEnvironment.OursRedirectedToGo ? ServerKind.Go : ServerKind.Ours, TestEnvironment.Resolve(ServerKind.Ours));
        Assert.Equal(ServerKind.Go, TestEnvironment.Resolve(ServerKind.Go));
    }
}
