using System.Diagnostics;

namespace NatsBroker.Tests.Auth;

/// <summary>Finds a program on PATH (or at a fixed path) for differential tests.</summary>
internal static class ExternalProgram
{

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
