using System.Diagnostics;
using System.Globalization;
using System.Text.RegularExpressions;
using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Hosting;

/// <summary>
/// README.md "Quick start", run as written against the core's build output: the config block is the core's config,
/// the `dotnet run` line's arguments after `--` are the core's, and each later shell block runs in bash (the nats
/// CLI and the mosquitto clients as a user has them) and must exit 0 and print what its `# prints:` comments say.
/// What differs from a user's terminal, so the test can run beside others: the ports (4222, 1883, 8080) are free
/// ones (NATS_URL for the nats CLI, `-p` for mosquitto), and the JetStream store is a fresh temporary folder.
/// </summary>
[Collection("Gateways")]
public sealed partial class ReadmeQuickStartTests(ITestOutputHelper output)
{
    private const string RunCommand = "dotnet run -c Release --project core -- ";

    private static List<(string Lang, string Body)> QuickStartBlocks()
    {
        var readme = File.ReadAllText(Path.Combine(TestEnvironment.RepoRoot, "README.md")).ReplaceLineEndings("\n");
        int start = readme.IndexOf("\n## Quick start\n", StringComparison.Ordinal);
        Assert.True(start >= 0, "README.md has no '## Quick start' section");
        int end = readme.IndexOf("\n## ", start + 1, StringComparison.Ordinal);
        var section = readme[start..(end < 0 ? readme.Length : end)];
        return Fence().Matches(section).Select(m => (m.Groups[1].Value, m.Groups[2].Value)).ToList();
    }

    [Fact]
    public void The_quick_start_has_a_config_a_run_command_and_client_blocks()
    {
        var blocks = QuickStartBlocks();
        Assert.True(blocks.Count >= 3, "expected a conf block, the run command and at least one client block");
        Assert.Equal("conf", blocks[0].Lang);
        Assert.Equal("sh", blocks[1].Lang);
        Assert.StartsWith(RunCommand, blocks[1].Body.Trim(), StringComparison.Ordinal);
        Assert.All(blocks.Skip(2), b => Assert.Equal("sh", b.Lang));
    }

    [SkippableFact]
    public async Task The_quick_start_runs_as_written()
    {
        var cli = Prerequisites.RequireNatsCli(output);
        Prerequisites.RequireProgram("mosquitto_pub", output);
        Prerequisites.RequireProgram("mosquitto_sub", output);
        var exe = TestEnvironment.OursExecutablePath();
        if (exe is null) Prerequisites.Missing("core/bin/Release/net10.0/NatsBroker is not built (or NATSBROKER_DLL names another build)", output);

        var blocks = QuickStartBlocks();
        var dir = Directory.CreateTempSubdirectory("natsbroker-quickstart-").FullName;
        try
        {
            int client = TestPorts.Next(), mqtt = TestPorts.Next(), ws = TestPorts.Next();
            string Ports(string text) => text
                .Replace("port: 1883", "port: " + mqtt.ToString(CultureInfo.InvariantCulture), StringComparison.Ordinal)
                .Replace("-p 1883", "-p " + mqtt.ToString(CultureInfo.InvariantCulture), StringComparison.Ordinal)
                .Replace("port: 8080", "port: " + ws.ToString(CultureInfo.InvariantCulture), StringComparison.Ordinal);

            var config = Ports(blocks[0].Body).Replace("/tmp/natsbroker-quickstart", Path.Combine(dir, "js"), StringComparison.Ordinal);
            Assert.NotEqual(blocks[0].Body, config);
            File.WriteAllText(Path.Combine(dir, "quickstart.conf"), config);

            var psi = new ProcessStartInfo(exe!) { WorkingDirectory = dir };
            foreach (var a in blocks[1].Body.Trim()[RunCommand.Length..].Split(' ', StringSplitOptions.RemoveEmptyEntries)) psi.ArgumentList.Add(a);
            foreach (var a in new[] { "-a", "127.0.0.1", "-p", client.ToString(CultureInfo.InvariantCulture) }) psi.ArgumentList.Add(a);
            using var core = CoreRun.Start(psi, output);
            await core.WaitReadyAsync();

            foreach (var (_, body) in blocks.Skip(2))
            {
                var script = Ports(body);
                var (code, printed) = await RunShellAsync(script, dir, cli, client);
                output.WriteLine($"$ {script}\n{printed}(exit {code})");
                Assert.True(code == 0, $"the block exited with {code}:\n{script}\n{printed}");
                foreach (Match m in Prints().Matches(body))
                    Assert.Contains(m.Groups[1].Value.Trim(), printed, StringComparison.Ordinal);
            }
        }
        finally
        {
            Directory.Delete(dir, recursive: true);
        }
    }

    /// <summary>Runs one block in bash -e (stdout and stderr in one pipe, as a terminal shows them), bounded by 60 s.</summary>
    private static async Task<(int Code, string Output)> RunShellAsync(string script, string dir, string cli, int clientPort)
    {
        var psi = new ProcessStartInfo("/bin/bash") { ArgumentList = { "-e", "-c", "exec 2>&1\n" + script + "\nwait" }, WorkingDirectory = dir };
        psi.RedirectStandardOutput = true;
        psi.UseShellExecute = false;
        psi.Environment["PATH"] = Path.GetDirectoryName(cli) + ":" + Environment.GetEnvironmentVariable("PATH");
        psi.Environment["NATS_URL"] = "nats://127.0.0.1:" + clientPort.ToString(CultureInfo.InvariantCulture);
        // No nats CLI context of the machine's user: a fresh home, as on a fresh machine.
        psi.Environment["HOME"] = dir;
        psi.Environment["XDG_CONFIG_HOME"] = Path.Combine(dir, ".config");
        psi.Environment["NO_COLOR"] = "1";
        using var p = Process.Start(psi)!;
        var read = p.StandardOutput.ReadToEndAsync();
        using var cts = new CancellationTokenSource(TimeSpan.FromSeconds(60));
        try
        {
            await p.WaitForExitAsync(cts.Token);
        }
        catch (OperationCanceledException)
        {
            p.Kill(entireProcessTree: true);
            return (-1, await read + "\n(killed after 60 s)");
        }
        return (p.ExitCode, await read);
    }

    [GeneratedRegex(@"```(\w+)\n(.*?)```", RegexOptions.Singleline)]
    private static partial Regex Fence();

    [GeneratedRegex(@"# prints: (.*)$", RegexOptions.Multiline)]
    private static partial Regex Prints();
}
