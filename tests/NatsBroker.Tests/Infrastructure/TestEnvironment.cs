using System.Diagnostics;
using System.Runtime.InteropServices;

namespace NatsBroker.Tests.Infrastructure;

/// <summary>
/// Locates the repository, the server binaries and node/npm, and reads the test switches.
/// <para>
/// Environment switches:
/// <list type="bullet">
/// <item><c>NATSBROKER_TEST_SERVER=go</c>: tests that target <see cref="ServerKind.Ours"/> run against Go nats-server instead
/// (validates the suites against the reference). Default (unset or <c>ours</c>): our broker.</item>
/// <item><c>NATS_SERVER_BIN=/path/nats-server</c>: the Go reference binary (default: <c>nats-server</c> on PATH, then /usr/sbin, /usr/local/bin, /usr/bin).</item>
/// <item><c>NATS_SERVER_214=/path/nats-server</c>: nats-server 2.14.5, the reference for behaviour newer than Debian's 2.9
/// (default: <c>../shared/oracle/nats-server-2.14.5</c> next to the repository root).</item>
/// <item><c>NATSBROKER_DLL=/path/NatsBroker.dll</c>: our broker's entry assembly (default: next to the test assembly, then core/bin/Release|Debug/net10.0).</item>
/// <item><c>NATSBROKER_FUZZ_SECONDS=N</c>: time budget of the randomized robustness test per server (default 8).</item>
/// </list>
/// </para>
/// </summary>
public static class TestEnvironment
{
    public const string ServerSwitch = "NATSBROKER_TEST_SERVER";

    private static readonly Lazy<string> s_repoRoot = new(FindRepoRoot);
    private static readonly Lazy<string?> s_goServer = new(FindGoServer);
    private static readonly Lazy<string?> s_oracle214 = new(FindOracle214);
    private static readonly Lazy<string?> s_natsCli = new(FindNatsCli);
    private static readonly Lazy<string?> s_node = new(() => FindOnPath("node"));
    private static readonly Lazy<string?> s_npm = new(() => FindOnPath("npm"));

    /// <summary>Directory that contains NatsBroker.slnx.</summary>
    public static string RepoRoot => s_repoRoot.Value;

    /// <summary>tests/js: the nats.js scenario scripts.</summary>
    public static string JsDir => Path.Combine(RepoRoot, "tests", "js");

    /// <summary>Full path of Go nats-server, or null when it is not installed.</summary>
    public static string? GoServerPath => s_goServer.Value;

    /// <summary>Full path of nats-server 2.14.5 (<c>NATS_SERVER_214</c>, else <c>../shared/oracle/nats-server-2.14.5</c>), or null.</summary>
    public static string? Oracle214Path => s_oracle214.Value;

    /// <summary>The standard <c>nats</c> CLI (<c>NATS_CLI</c>, else <c>../shared/tools/nats</c>, else on PATH), or null.</summary>
    public static string? NatsCliPath => s_natsCli.Value;

    public static string? NodePath => s_node.Value;

    public static string? NpmPath => s_npm.Value;

    /// <summary>True when NATSBROKER_TEST_SERVER=go: "ours" tests are redirected to nats-server.</summary>
    public static bool OursRedirectedToGo =>
        string.Equals(Environment.GetEnvironmentVariable(ServerSwitch), "go", StringComparison.OrdinalIgnoreCase);

    /// <summary>The binary kind that will really run for a requested kind (after the switch).</summary>
    public static ServerKind Resolve(ServerKind requested) =>
        requested == ServerKind.Ours && OursRedirectedToGo ? ServerKind.Go : requested;

    /// <summary>Why <paramref name="kind"/> cannot run here, or null when it can.</summary>
    public static string? UnavailableReason(ServerKind kind)
    {
        var actual = Resolve(kind);
        if (actual == ServerKind.Go && GoServerPath is null)
        {
            return kind == ServerKind.Ours
                ? $"{ServerSwitch}=go but nats-server was not found (PATH, /usr/sbin, /usr/local/bin, /usr/bin; or set NATS_SERVER_BIN)"
                : "Go nats-server was not found (PATH, /usr/sbin, /usr/local/bin, /usr/bin; or set NATS_SERVER_BIN); install it (apt-get install nats-server) to run the reference side";
        }

        // Ours is never "unavailable": if the broker cannot start the test must fail, not skip.
        return null;
    }

    /// <summary>Locates our broker's entry assembly.</summary>
    public static string OursDllPath()
    {
        var env = Environment.GetEnvironmentVariable("NATSBROKER_DLL");
        if (!string.IsNullOrEmpty(env))
        {
            return env;
        }

        var candidates = new[]
        {
            Path.Combine(AppContext.BaseDirectory, "NatsBroker.dll"),
            Path.Combine(RepoRoot, "core", "bin", "Release", "net10.0", "NatsBroker.dll"),
            Path.Combine(RepoRoot, "core", "bin", "Debug", "net10.0", "NatsBroker.dll"),
        };
        return candidates.FirstOrDefault(File.Exists)
            ?? throw new FileNotFoundException("NatsBroker.dll not found; looked in: " + string.Join(", ", candidates));
    }

    /// <summary>
    /// The core's executable, what `dotnet run --project core` and a deployment start: the Native AOT image the
    /// Release build puts next to NatsBroker.dll (Directory.Build.targets), else the framework-dependent apphost.
    /// <c>NATSBROKER_DLL</c> set means that assembly is what the tests run (through the dotnet host): null then.
    /// </summary>
    public static string? OursExecutablePath()
    {
        if (!string.IsNullOrEmpty(Environment.GetEnvironmentVariable("NATSBROKER_DLL"))) return null;
        var exe = Path.Combine(RepoRoot, "core", "bin", "Release", "net10.0", "NatsBroker");
        return File.Exists(exe) ? exe : null;
    }

    /// <summary>
    /// True when <see cref="OursExecutablePath"/> is the Native AOT image: the apphost is ~80 KB and the native image
    /// ~13 MB (the runtime compiled in), so a size well between the two tells them apart.
    /// </summary>
    public static bool OursExecutableIsNative =>
        OursExecutablePath() is { } exe && new FileInfo(exe).Length > 4 * 1024 * 1024;

    /// <summary>A start of our broker as users start it: the executable when built, else the dotnet host and the dll.</summary>
    public static ProcessStartInfo OursStartInfo(params string[] args)
    {
        var (file, prefix) = OursCommand();
        var psi = new ProcessStartInfo(file);
        foreach (var a in prefix.Concat(args)) psi.ArgumentList.Add(a);
        return psi;
    }

    /// <summary>The program that starts our broker and the arguments before its own flags (the dll for the dotnet host).</summary>
    public static (string File, string[] PrefixArgs) OursCommand() =>
        OursExecutablePath() is { } exe ? (exe, []) : (DotnetHost(), [OursDllPath()]);

    /// <summary>The dotnet host that runs the tests (DOTNET_HOST_PATH when set by the CLI), else "dotnet" on PATH.</summary>
    public static string DotnetHost()
    {
        var host = Environment.GetEnvironmentVariable("DOTNET_HOST_PATH");
        if (!string.IsNullOrEmpty(host) && File.Exists(host))
        {
            return host;
        }

        return FindOnPath("dotnet") ?? "dotnet";
    }

    public static string? FindOnPath(string name)
    {
        var path = Environment.GetEnvironmentVariable("PATH") ?? "";
        foreach (var dir in path.Split(Path.PathSeparator, StringSplitOptions.RemoveEmptyEntries))
        {
            var full = Path.Combine(dir, name);
            if (File.Exists(full))
            {
                return full;
            }
        }

        return null;
    }

    private static string? FindGoServer()
    {
        var env = Environment.GetEnvironmentVariable("NATS_SERVER_BIN");
        if (!string.IsNullOrEmpty(env))
        {
            return File.Exists(env) ? env : null;
        }

        return FindOnPath("nats-server")
            ?? new[] { "/usr/sbin/nats-server", "/usr/local/bin/nats-server", "/usr/bin/nats-server" }.FirstOrDefault(File.Exists);
    }

    private static string? FindOracle214()
    {
        var env = Environment.GetEnvironmentVariable("NATS_SERVER_214");
        if (!string.IsNullOrEmpty(env))
        {
            return File.Exists(env) ? env : null;
        }

        var path = Path.GetFullPath(Path.Combine(RepoRoot, "..", "shared", "oracle", "nats-server-2.14.5"));
        return File.Exists(path) ? path : null;
    }

    private static string? FindNatsCli()
    {
        var env = Environment.GetEnvironmentVariable("NATS_CLI");
        if (!string.IsNullOrEmpty(env))
        {
            return File.Exists(env) ? env : null;
        }

        var path = Path.GetFullPath(Path.Combine(RepoRoot, "..", "shared", "tools", "nats"));
        return File.Exists(path) ? path : FindOnPath("nats");
    }

    private static string FindRepoRoot()
    {
        foreach (var start in new[] { AppContext.BaseDirectory, Directory.GetCurrentDirectory() })
        {
            for (var dir = new DirectoryInfo(start); dir is not null; dir = dir.Parent)
            {
                if (File.Exists(Path.Combine(dir.FullName, "NatsBroker.slnx")))
                {
                    return dir.FullName;
                }
            }
        }

        throw new DirectoryNotFoundException("NatsBroker.slnx not found above " + AppContext.BaseDirectory);
    }

    public static bool IsUnix => RuntimeInformation.IsOSPlatform(OSPlatform.Linux) || RuntimeInformation.IsOSPlatform(OSPlatform.OSX);
}
