using System.Diagnostics;
using System.Text;
using System.Text.RegularExpressions;

namespace NatsBroker.Tests.Clients.NatsCli;

/// <summary>
/// The standard <c>nats</c> CLI pointed at one server as one user, run in a working directory of its own; a command's
/// exit code and output (stdout and stderr as the user sees them), and commands left running (sub, reply) until
/// they print their ready line.
/// </summary>
public sealed partial class NatsCli(string exe, string url, string user, string password, string workDir)
{
    private static readonly TimeSpan CommandTimeout = TimeSpan.FromSeconds(30);

    public string WorkDir => workDir;

    public async Task<(int Code, string Output)> RunAsync(params string[] args)
    {
        using var p = Start(args);
        var output = new StringBuilder();
        var done = Collect(p, output);
        using var timeout = new CancellationTokenSource(CommandTimeout);
        try
        {
            await p.WaitForExitAsync(timeout.Token);
        }
        catch (OperationCanceledException)
        {
            p.Kill(entireProcessTree: true);
            Assert.Fail($"nats {string.Join(' ', args)} did not finish in {CommandTimeout.TotalSeconds} s; output: {output}");
        }
        await done;
        lock (output) return (p.ExitCode, output.ToString());
    }

    /// <summary>Starts a long-running command and returns once a line containing <paramref name="ready"/> was printed.</summary>
    public async Task<Background> StartAsync(string ready, params string[] args)
    {
        var p = Start(args);
        var output = new StringBuilder();
        var done = Collect(p, output);
        var deadline = DateTime.UtcNow + CommandTimeout;
        while (true)
        {
            lock (output)
            {
                if (output.ToString().Contains(ready, StringComparison.Ordinal)) break;
            }
            if (p.HasExited || DateTime.UtcNow > deadline)
            {
                lock (output) Assert.Fail($"nats {string.Join(' ', args)} never printed '{ready}'; output: {output}");
            }
            await Task.Delay(20);
        }
        return new Background(p, output, done);
    }

    private Process Start(string[] args)
    {
        // Through sh with stderr on stdout: one pipe keeps the order the user sees (the CLI writes headers to one
        // stream and bodies to the other).
        var psi = new ProcessStartInfo("/bin/sh")
        {
            RedirectStandardOutput = true,
            RedirectStandardError = true,
            UseShellExecute = false,
            WorkingDirectory = workDir,
        };
        // No context file or colour: the same plain output on every machine.
        psi.Environment["NO_COLOR"] = "1";
        psi.Environment["HOME"] = workDir;
        psi.Environment["XDG_CONFIG_HOME"] = Path.Combine(workDir, ".config");
        foreach (var a in (string[])["-c", "exec \"$0\" \"$@\" 2>&1", exe, "-s", url, "--user", user, "--password", password]) psi.ArgumentList.Add(a);
        foreach (var a in args) psi.ArgumentList.Add(a);
        return Process.Start(psi)!;
    }

    private static Task Collect(Process p, StringBuilder output)
    {
        async Task Pump(StreamReader reader)
        {
            while (await reader.ReadLineAsync() is { } line)
            {
                lock (output) output.Append(line).Append('\n');
            }
        }
        return Task.WhenAll(Pump(p.StandardOutput), Pump(p.StandardError));
    }

    /// <summary>A command started by <see cref="StartAsync"/>; <see cref="WaitAsync"/> waits for it to end by itself.</summary>
    public sealed class Background(Process process, StringBuilder output, Task pumps) : IDisposable
    {
        public async Task<(int Code, string Output)> WaitAsync()
        {
            using var timeout = new CancellationTokenSource(CommandTimeout);
            await process.WaitForExitAsync(timeout.Token);
            await pumps;
            lock (output) return (process.ExitCode, output.ToString());
        }

        public void Dispose()
        {
            if (!process.HasExited) process.Kill(entireProcessTree: true);
            process.Dispose();
        }
    }

    /// <summary>
    /// What differs between two runs of the same commands and says nothing about the server's behaviour: clock times,
    /// dates, durations and round trips, server IDs, ports, the working directory and generated names.
    /// </summary>
    public static string Normalize(string text, string workDir)
    {
        text = text.Replace(workDir, "<dir>", StringComparison.Ordinal);
        text = ServerId().Replace(text, "<server-id>");
        text = DateAndTime().Replace(text, "<date>");
        text = Clock().Replace(text, "<time>");
        text = Duration().Replace(text, "<duration>");
        text = Port().Replace(text, ":<port>");
        text = Inbox().Replace(text, "_INBOX.<inbox>");
        return text;
    }

    [GeneratedRegex(@"\bN[A-Z2-7]{55}\b")]
    private static partial Regex ServerId();

    [GeneratedRegex(@"\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:?\d\d)?( UTC)?")]
    private static partial Regex DateAndTime();

    [GeneratedRegex(@"\b\d\d:\d\d:\d\d(\.\d+)?\b")]
    private static partial Regex Clock();

    [GeneratedRegex(@"\b\d+(\.\d+)?(ns|µs|us|ms|s|m|h)(\d+(\.\d+)?(ms|s|m))*\b")]
    private static partial Regex Duration();

    [GeneratedRegex(@":\d{4,5}\b")]
    private static partial Regex Port();

    [GeneratedRegex(@"_INBOX\.[A-Za-z0-9.]+")]
    private static partial Regex Inbox();
}
