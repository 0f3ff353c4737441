using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Protocol;

/// <summary>Shared plumbing: a per-class server pool, the prerequisite check, and connection helpers.</summary>
public abstract class ProtocolTestBase(ITestOutputHelper output, ServerPool pool) : IClassFixture<ServerPool>
{
    protected const string Quiet = """{"verbose":false,"pedantic":false}""";
    protected const string QuietHeaders = """{"verbose":false,"pedantic":false,"headers":true}""";

    protected ITestOutputHelper Output { get; } = output;

    /// <summary>A shared server for this class (skips or, under CI=true, fails the test when <paramref name="kind"/> is missing).</summary>
    protected async Task<ServerProcess> SharedAsync(ServerKind kind, string? config = null)
    {
        Prerequisites.RequireServer(kind, Output);
        var s = await pool.GetAsync(kind, config);
        Output.WriteLine($"using {s}");
        return s;
    }

    /// <summary>A dedicated server for one test (skips or fails as <see cref="SharedAsync"/>). Dispose it.</summary>
    protected async Task<ServerProcess> OwnAsync(ServerKind kind, string? config = null)
    {
        Prerequisites.RequireServer(kind, Output);
        return await ServerProcess.StartAsync(kind, new ServerStartOptions { Config = config }, Output);
    }

    protected static Task<RawClient> Connected(ServerProcess s, string connect = Quiet) => RawClient.ConnectAndHandshakeAsync(s, connect);

    /// <summary>Opens a connection, reads INFO, sends <paramref name="connect"/> (no PING).</summary>
    protected static async Task<RawClient> Raw(ServerProcess s, string? connect = null)
    {
        var c = await RawClient.ConnectAsync(s);
        await c.ReadInfoAsync();
        if (connect is not null)
        {
            await c.SendLineAsync("CONNECT " + connect);
        }

        return c;
    }
}
