using System.Diagnostics;
using System.Globalization;
using System.Net;
using System.Net.Sockets;
using System.Text;
using System.Text.RegularExpressions;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Hosting;

/// <summary>
/// A core process started from an executable on disk (the build output or a publish folder), as a user starts it:
/// its log is collected, <see cref="WaitReadyAsync"/> returns at "Server is ready" (logged once the supervised
/// gateways accept, core/Hosting/GatewaySupervisor.Readiness.cs), and the process tree is killed on dispose.
/// </summary>
internal sealed partial class CoreRun : IDisposable
{
    private readonly Process _process;
    private readonly StringBuilder _log = new();
    private readonly TaskCompletionSource _ready = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private readonly ITestOutputHelper _output;

    private CoreRun(ProcessStartInfo psi, ITestOutputHelper output)
    {
        _output = output;
        psi.RedirectStandardError = true;
        psi.RedirectStandardOutput = true;
        psi.UseShellExecute = false;
        _process = Process.Start(psi) ?? throw new InvalidOperationException("the core did not start");
        _process.ErrorDataReceived += (_, e) => OnLine(e.Data);
        _process.OutputDataReceived += (_, e) => OnLine(e.Data);
        _process.BeginErrorReadLine();
        _process.BeginOutputReadLine();
    }

    public static CoreRun Start(ProcessStartInfo psi, ITestOutputHelper output) => new(psi, output);

    public int Pid => _process.Id;

    public string Log
    {
        get
        {
            lock (_log) return _log.ToString();
        }
    }

    private void OnLine(string? line)
    {
        // The end of the process's output: nothing to record.
        if (line is not { } text) return;
        lock (_log) _log.AppendLine(text);
        if (text.Contains("Server is ready", StringComparison.Ordinal)) _ready.TrySetResult();
    }

    /// <summary>Waits for "Server is ready"; fails with the log when the core exits first or takes longer than 60 s.</summary>
    public async Task WaitReadyAsync()
    {
        var exited = _process.WaitForExitAsync();
        var done = await Task.WhenAny(_ready.Task, exited, Task.Delay(TimeSpan.FromSeconds(60)));
        if (done != _ready.Task)
            Assert.Fail((exited.IsCompleted ? $"the core exited ({_process.ExitCode}) before it was ready" : "the core was not ready within 60 s") + ":\n" + Log);
    }

    /// <summary>The pid of each supervised gateway, from the core's "Started the X gateway (pid N)" lines.</summary>
    public Dictionary<string, int> GatewayPids() =>
        StartedLine().Matches(Log).ToDictionary(m => m.Groups[1].Value, m => int.Parse(m.Groups[2].Value, CultureInfo.InvariantCulture));

    /// <summary>The command line of a running process (/proc/PID/cmdline), its arguments joined by spaces.</summary>
    public static string CommandLine(int pid) =>
        File.ReadAllText($"/proc/{pid}/cmdline").TrimEnd('\0').Replace('\0', ' ');

    public static bool Accepts(int port)
    {
        using var s = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
        try
        {
            s.Connect(IPAddress.Loopback, port);
            return true;
        }
        catch (SocketException)
        {
            return false;
        }
    }

    public void Dispose()
    {
        try
        {
            if (!_process.HasExited) _process.Kill(entireProcessTree: true);
            _process.WaitForExit(10_000);
        }
        catch (InvalidOperationException)
        {
            // Already gone.
        }
        _output.WriteLine(Log);
        _process.Dispose();
    }

    [GeneratedRegex(@"Started the (\S+) gateway \(pid (\d+)\)")]
    private static partial Regex StartedLine();
}
