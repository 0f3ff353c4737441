using Xunit.Abstractions;

namespace NatsBroker.Tests.Infrastructure;

/// <summary>
/// The one place that decides what a missing prerequisite (nats-server, node/npm, perl) does to a test:
/// <list type="bullet">
/// <item>by default the test is reported <b>Skipped</b> with the reason (never Passed): it must be a
/// <c>[SkippableFact]</c>/<c>[SkippableTheory]</c> (Xunit.SkippableFact), which turns the <see cref="SkipException"/>
/// thrown here into a skip;</item>
/// <item>with <c>CI=true</c> the test <b>fails</b>: CI installs every prerequisite, so a missing one is a broken run,
/// not a reason to report green.</item>
/// </list>
/// </summary>
public static class Prerequisites
{
    /// <summary>True when the environment says this is a CI run (<c>CI=true</c>, as CI services set it).</summary>
    public static bool IsCi => string.Equals(Environment.GetEnvironmentVariable("CI"), "true", StringComparison.OrdinalIgnoreCase);

    /// <summary>Skips (or, under CI=true, fails) the running test because <paramref name="reason"/>.</summary>
    public static void Missing(string reason, ITestOutputHelper? output = null)
    {
        output?.WriteLine("prerequisite missing: " + reason);
        if (IsCi)
        {
            Assert.Fail("CI=true and a prerequisite is missing (CI must install it): " + reason);
        }

        throw new SkipException(reason);
    }

    /// <summary>Returns when <paramref name="kind"/> can run here; otherwise skips or fails the test.</summary>
    public static void RequireServer(ServerKind kind, ITestOutputHelper? output = null)
    {
        var reason = TestEnvironment.UnavailableReason(kind);
        if (reason is not null)
        {
            Missing($"{kind}: {reason}", output);
        }

        if (output is not null && TestEnvironment.Resolve(kind) != kind)
        {
            output.WriteLine($"note: {TestEnvironment.ServerSwitch}=go: the '{kind}' case runs against Go nats-server");
        }
    }

    /// <summary>Returns the full path of Go nats-server; otherwise skips or fails the test.</summary>
    public static string RequireGoServer(ITestOutputHelper? output = null)
    {
        RequireServer(ServerKind.Go, output);
        return TestEnvironment.GoServerPath!;
    }

    /// <summary>Returns the full path of nats-server 2.14.5 (<see cref="TestEnvironment.Oracle214Path"/>); otherwise skips or fails the test.</summary>
    public static string RequireOracle214(ITestOutputHelper? output = null)
    {
        if (TestEnvironment.Oracle214Path is null)
        {
            Missing("nats-server 2.14.5 was not found (../shared/oracle/nats-server-2.14.5 beside the repository root; or set NATS_SERVER_214)", output);
        }

        return TestEnvironment.Oracle214Path!;
    }

    /// <summary>Returns the full path of the nats CLI (<see cref="TestEnvironment.NatsCliPath"/>); otherwise skips or fails the test.</summary>
    public static string RequireNatsCli(ITestOutputHelper? output = null)
    {
        if (TestEnvironment.NatsCliPath is null)
        {
            Missing("the nats CLI was not found (../shared/tools/nats beside the repository root, NATS_CLI, or nats on PATH)", output);
        }

        return TestEnvironment.NatsCliPath!;
    }

    /// <summary>Returns when node (and npm or an installed tests/js/node_modules) is there; otherwise skips or fails.</summary>
    public static void RequireNode(ITestOutputHelper? output = null)
    {
        var reason = NodeClient.UnavailableReason();
        if (reason is not null)
        {
            Missing("nats.js: " + reason, output);
        }
    }

    /// <summary>Returns the path of <paramref name="program"/> on PATH; otherwise skips or fails the test.</summary>
    public static string RequireProgram(string program, ITestOutputHelper? output = null)
    {
        var path = TestEnvironment.FindOnPath(program);
        if (path is null)
        {
            Missing($"{program} was not found on PATH", output);
        }

        return path!;
    }

    /// <summary>Our broker's Unix socket listener needs a Unix and our broker (nats-server has no such listener).</summary>
    /// <summary>Our executable is the Native AOT image (Directory.Build.targets; it needs a C toolchain to compile).</summary>
    public static void RequireNativeExecutable(ITestOutputHelper? output = null)
    {
        if (!TestEnvironment.OursExecutableIsNative)
            Missing("core/bin/Release/net10.0/NatsBroker is not the Native AOT image (the Release build compiles it with gcc or clang and zlib; its message says why it did not)", output);
    }

    public static void RequireOursUnixSocket(ITestOutputHelper? output = null)
    {
        if (TestEnvironment.OursRedirectedToGo)
        {
            // Not a missing install: the switch asks for a server that lacks the feature. Skip even on CI.
            output?.WriteLine("prerequisite missing: nats-server has no Unix socket listener");
            throw new SkipException($"{TestEnvironment.ServerSwitch}=go and nats-server has no Unix socket listener (our extension)");
        }

        if (!TestEnvironment.IsUnix)
        {
            throw new SkipException("Unix domain sockets need Linux or macOS");
        }
    }
}
