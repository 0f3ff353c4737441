using Xunit.Abstractions;

namespace NatsBroker.Tests.Infrastructure;

/// <summary>
/// nats-server 2.14.5 (Go 1.25), the reference for behaviour newer than Debian's 2.9.10: <c>../shared/oracle/nats-server-2.14.5</c>
/// from the repository root (../shared/oracle/README.md). Start it with <c>ServerStartOptions.GoBinary</c> and
/// <see cref="ServerKind.Go"/>.
/// </summary>
public static class Oracle214
{
    /// <summary>Full path of the 2.14.5 binary, or null when it is not there.</summary>
    public static string? Path { get; } = Find();

    /// <summary>The binary's path; otherwise skips the test (fails it under CI=true) through <see cref="Prerequisites"/>.</summary>
    public static string Require(ITestOutputHelper? output = null)
    {
        if (Path is null)
        {
            Prerequisites.Missing("nats-server 2.14.5 was not found at ../shared/oracle/nats-server-2.14.5 (from the repository root)", output);
        }

        return Path!;
    }

    private static string? Find()
    {
        var path = System.IO.Path.GetFullPath(System.IO.Path.Combine(TestEnvironment.RepoRoot, "..", "shared", "oracle", "nats-server-2.14.5"));
        return File.Exists(path) ? path : null;
    }
}
