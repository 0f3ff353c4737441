using System.Diagnostics;
using System.Globalization;
using System.Runtime.InteropServices;

namespace NatsBroker.Configuration;

/// <summary>
/// <c>--signal cmd[=pid]</c> (server/signal.go ProcessSignal): stop → SIGKILL, quit → SIGINT,
/// reopen → SIGUSR1, reload → SIGHUP, ldm → SIGUSR2, term → SIGTERM. The pid may also be the path of a
/// pid file; without a pid the single running server process is looked up with pgrep.
/// </summary>
public sealed partial class SignalRequest
{
    private SignalRequest(string command, string? pid)
    {
        Command = command;
        Pid = pid;
    }

    /// <summary>One of stop, quit, reopen, reload, ldm, term.</summary>
    public string Command { get; }

    /// <summary>The pid (or pid file contents) as given; null = find the running server.</summary>
    public string? Pid { get; }

    /// <summary>Parses "cmd" or "cmd=pid|pidfile" and validates the command.</summary>
    public static SignalRequest Parse(string spec)
    {
        var parts = spec.Split('=');
        if (parts.Length > 2)
            throw new CommandLineException($"invalid signal parameters: [{string.Join(' ', parts[2..])}]", showUsage: false, exitCode: 1);
        string cmd = parts[0];
        if (SignalNumber(cmd) is null)
            throw new CommandLineException($"unknown signal \"{cmd}\"", showUsage: false, exitCode: 1);
        string? pid = null;
        if (parts.Length == 2)
        {
            // maybeReadPidFile: a readable file holds the pid, otherwise the text is the pid.
            pid = parts[1];
            try
            {
                if (File.Exists(pid))
                    pid = File.ReadAllText(pid);
            }
            catch (IOException)
            {
            }
            catch (UnauthorizedAccessException)
            {
            }
        }
        return new SignalRequest(cmd, pid);
    }

    /// <summary>The Unix signal number for a command (Linux numbering; macOS differs for USR1/USR2).</summary>
    public static int? SignalNumber(string command) => command switch
    {
        "stop" => 9,                                   // SIGKILL
        "quit" => 2,                                   // SIGINT
        "reopen" => OperatingSystem.IsMacOS() ? 30 : 10, // SIGUSR1
        "reload" => 1,                                 // SIGHUP
        "ldm" => OperatingSystem.IsMacOS() ? 31 : 12,    // SIGUSR2
        "term" => 15,                                  // SIGTERM
        _ => null,
    };

    /// <summary>
    /// Sends the signal. <paramref name="processName"/> is used with pgrep when no pid was given.
    /// Throws <see cref="CommandLineException"/> with nats-server's messages on failure.
    /// </summary>
    public void Send(string processName)
    {
        int pid = Pid is null ? FindPid(processName) : ParsePid(Pid);
        int sig = SignalNumber(Command)!.Value;
        if (Kill(pid, sig) != 0)
        {
            int errno = Marshal.GetLastPInvokeError();
            string reason = errno switch
            {
                3 => "no such process",
                1 => "operation not permitted",
                _ => string.Create(CultureInfo.InvariantCulture, $"errno {errno}"),
            };
            throw new CommandLineException(reason, showUsage: false, exitCode: 1);
        }
    }

    private static int ParsePid(string text)
    {
        if (!int.TryParse(text.Trim(), NumberStyles.None, CultureInfo.InvariantCulture, out int pid))
            throw new CommandLineException($"invalid pid: {text}", showUsage: false, exitCode: 1);
        return pid;
    }

    private static int FindPid(string processName)
    {
        string output;
        try
        {
            var psi = new ProcessStartInfo("pgrep", ["-x", processName]) { RedirectStandardOutput = true, UseShellExecute = false };
            using var p = Process.Start(psi) ?? throw new InvalidOperationException();
            output = p.StandardOutput.ReadToEnd();
            p.WaitForExit();
        }
        catch (Exception e) when (e is System.ComponentModel.Win32Exception or InvalidOperationException)
        {
            throw new CommandLineException("unable to resolve pid, try providing one", showUsage: false, exitCode: 1);
        }
        int self = Environment.ProcessId;
        var pids = new List<int>();
        foreach (var line in output.Split('\n', StringSplitOptions.RemoveEmptyEntries | StringSplitOptions.TrimEntries))
        {
            if (!int.TryParse(line, NumberStyles.None, CultureInfo.InvariantCulture, out int pid))
                throw new CommandLineException("unable to resolve pid, try providing one", showUsage: false, exitCode: 1);
            if (pid != self)
                pids.Add(pid);
        }
        if (pids.Count == 0)
            throw new CommandLineException($"no {processName} processes running", showUsage: false, exitCode: 1);
        if (pids.Count > 1)
            throw new CommandLineException($"multiple {processName} processes running:\n{string.Join('\n', pids)}", showUsage: false, exitCode: 1);
        return pids[0];
    }

    [LibraryImport("libc", EntryPoint = "kill", SetLastError = true)]
    private static partial int Kill(int pid, int sig);
}
