using System.Diagnostics;

namespace NatsBroker.Tests.Auth;

/// <summary>Finds a program on PATH (or at a fixed path) for differential tests.</summary>
internal static class ExternalProgram
{
    /// <summary>CI=true: a missing prerequisite fails the run instead of skipping.</summary>
    public static bool IsCi => string.Equals(Environment.GetEnvironmentVariable("CI"), "true", StringComparison.OrdinalIgnoreCase);

    public static string? Find(string name, params string[] fallbacks)
    {
        foreach (var f in fallbacks)
        {
            if (File.Exists(f)) return f;
        }
        var path = Environment.GetEnvironmentVariable("PATH") ?? "";
        foreach (var dir in path.Split(Path.PathSeparator, StringSplitOptions.RemoveEmptyEntries))
        {
            var candidate = Path.Combine(dir, name);
            if (File.Exists(candidate)) return candidate;
        }
        return null;
    }

    /// <summary>Runs a program and returns its standard output (trimmed), failing the test on a non-zero exit.</summary>
    public static string Run(string program, params string[] args)
    {
        var psi = new ProcessStartInfo(program) { RedirectStandardOutput = true, RedirectStandardError = true, UseShellExecute = false };
        foreach (var a in args) psi.ArgumentList.Add(a);
        using var p = Process.Start(psi)!;
        string stdout = p.StandardOutput.ReadToEnd();
        string stderr = p.StandardError.ReadToEnd();
        p.WaitForExit();
        Assert.True(p.ExitCode == 0, $"{program} exited {p.ExitCode}: {stderr}");
        return stdout.Trim();
    }
}

/// <summary>
/// A fact that is reported as skipped (with the reason) when a program is not installed, except under
/// <c>CI=true</c>: there it runs, and fails where it needs the program, because CI must have every oracle.
/// </summary>
public sealed class RequiresProgramFactAttribute : FactAttribute
{
    public RequiresProgramFactAttribute(string program, string fallbackPath = "")
    {
        if (ExternalProgram.Find(program, fallbackPath.Length > 0 ? [fallbackPath] : []) is null && !ExternalProgram.IsCi)
            Skip = $"{program} not found on PATH: differential check skipped";
    }
}
