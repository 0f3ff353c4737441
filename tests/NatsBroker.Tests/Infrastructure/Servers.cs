using Xunit.Abstractions;

namespace NatsBroker.Tests.Infrastructure;

/// <summary>
/// Theory data and the visible-skip gate for tests that run against both servers:
/// <code>
/// [Theory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
/// public async Task X(ServerKind kind) { if (Servers.Unavailable(kind, output)) return; ... }
/// </code>
/// </summary>
public static class Servers
{
    public static TheoryData<ServerKind> Both => new() { ServerKind.Ours, ServerKind.Go };

    /// <summary>
    /// True (and a clear "NOT RUN" line in the test output and on stderr) when <paramref name="kind"/> cannot run here,
    /// e.g. Go nats-server is not installed. The test should then return: it is reported as passed, with the note.
    /// </summary>
    public static bool Unavailable(ServerKind kind, ITestOutputHelper output)
    {
        var reason = TestEnvironment.UnavailableReason(kind);
        if (reason is null)
        {
            if (TestEnvironment.Resolve(kind) != kind)
            {
                output.WriteLine($"note: {TestEnvironment.ServerSwitch}=go: the '{kind}' case runs against Go nats-server");
            }

            return false;
        }

        var message = $"NOT RUN against {kind}: {reason}";
        output.WriteLine(message);
        Console.Error.WriteLine("[NatsBroker.Tests] " + message);
        return true;
    }
}
