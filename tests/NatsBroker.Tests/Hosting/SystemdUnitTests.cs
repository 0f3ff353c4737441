using System.Diagnostics;
using System.Text.RegularExpressions;
using NatsBroker.Tests.Infrastructure;

namespace NatsBroker.Tests.Hosting;

/// <summary>
/// The systemd units in deploy/: each passes <c>systemd-analyze verify</c>, and each has what running the
/// processes apart needs (Type=notify, restart on failure; gateways as template units for several instances, each
/// with its own runtime directory, ordered after the core).
/// </summary>
public sealed partial class SystemdUnitTests
{
    private static string Deploy => Path.Combine(TestEnvironment.RepoRoot, "deploy");

    private static string[] UnitNames() => [.. Directory.GetFiles(Deploy, "*.service").Select(f => Path.GetFileName(f)).Order()];

    public static TheoryData<string> Units() => [.. UnitNames()];

    [Fact]
    public void Every_process_has_a_unit()
    {
        Assert.Equal(
            ["natsbroker-mqtt@.service", "natsbroker-tls-terminator@.service", "natsbroker-websocket@.service", "natsbroker.service"],
            UnitNames());
    }

    [Theory]
    [MemberData(nameof(Units))]
    public async Task Unit_passes_systemd_analyze_verify(string unit)
    {
        string analyze = Prerequisites.RequireProgram("systemd-analyze");
        // verify also checks that ExecStart's program exists, and the units name the installed path
        // (/opt/natsbroker/...): the copy checked here starts /bin/true with the same arguments instead.
        var dir = Directory.CreateTempSubdirectory("nb-units");
        try
        {
            var text = File.ReadAllText(Path.Combine(Deploy, unit));
            var copy = Path.Combine(dir.FullName, unit);
            File.WriteAllText(copy, ExecStartProgram().Replace(text, "ExecStart=/bin/true"));
            var psi = new ProcessStartInfo(analyze) { RedirectStandardError = true, RedirectStandardOutput = true, UseShellExecute = false };
            psi.ArgumentList.Add("verify");
            psi.ArgumentList.Add("--man=no");
            psi.ArgumentList.Add(copy);
            using var p = Process.Start(psi)!;
            using var timeout = new CancellationTokenSource(TimeSpan.FromSeconds(60));
            var stderr = p.StandardError.ReadToEndAsync(timeout.Token);
            var stdout = p.StandardOutput.ReadToEndAsync(timeout.Token);
            await p.WaitForExitAsync(timeout.Token);
            string output = await stdout + await stderr;
            // Only what concerns this unit (verify also loads the units it refers to from the host).
            var mine = output.Split('\n').Where(l => l.Contains(unit.Replace("@.", "@"), StringComparison.Ordinal) || l.Contains(copy, StringComparison.Ordinal)).ToArray();
            Assert.True(p.ExitCode == 0 && mine.Length == 0, $"systemd-analyze verify {unit} (exit {p.ExitCode}):\n{output}");
        }
        finally
        {
            dir.Delete(recursive: true);
        }
    }

    [Theory]
    [MemberData(nameof(Units))]
    public void Unit_runs_the_process_as_a_notify_service_restarted_on_failure(string unit)
    {
        var lines = File.ReadAllLines(Path.Combine(Deploy, unit)).Select(l => l.Trim()).ToArray();
        Assert.Contains("Type=notify", lines);
        Assert.Contains("Restart=on-failure", lines);
        Assert.Contains(lines, l => l.StartsWith("ExecStart=/opt/natsbroker/", StringComparison.Ordinal) && l.EndsWith(" -c /etc/natsbroker/natsbroker.conf", StringComparison.Ordinal));
        if (unit == "natsbroker.service") return;
        // A gateway: instances of a template, each with its own runtime directory, after the core.
        Assert.Contains("@.service", unit, StringComparison.Ordinal);
        Assert.Contains(lines, l => l.StartsWith("RuntimeDirectory=", StringComparison.Ordinal) && l.EndsWith("/%i", StringComparison.Ordinal));
        Assert.Contains(lines, l => l.StartsWith("After=", StringComparison.Ordinal) && l.Contains("natsbroker.service", StringComparison.Ordinal));
    }

    [GeneratedRegex(@"ExecStart=/opt/natsbroker/\S+")]
    private static partial Regex ExecStartProgram();
}
