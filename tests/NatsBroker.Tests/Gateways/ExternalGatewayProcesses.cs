using System.Diagnostics;
using System.Text;
using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Gateways;

/// <summary>
/// Gateway processes a test starts itself, as systemd would for a core with <c>gateways { managed: external }</c>:
/// each with its config, listen port, proxy seed and the core's socket. Disposing kills those still running and
/// writes their logs to the test output.
/// </summary>
internal sealed class ExternalGatewayProcesses(ITestOutputHelper output) : IDisposable
{
    private readonly List<(Process Process, StringBuilder Log)> _started = [];

    /// <summary>Starts <paramref name="assembly"/> (e.g. NatsBroker.MqttGateway.dll) with debug logging.</summary>
    public (Process Process, StringBuilder Log) Start(string assembly, string config, int port, string seed, string socket, params string[] extra)
    {
        var dll = Path.Combine(AppContext.BaseDirectory, assembly);
        var psi = new ProcessStartInfo(TestEnvironment.DotnetHost())
        {
            UseShellExecute = false,
            RedirectStandardError = true,
            RedirectStandardOutput = true,
            ArgumentList = { dll, "-c", config, "-a", "127.0.0.1", "-p", port.ToString(System.Globalization.CultureInfo.InvariantCulture), "-D" },
        };
        foreach (var a in extra) psi.ArgumentList.Add(a);
        psi.Environment["NATSBROKER_GATEWAY_SEED"] = seed;
        psi.Environment["NATSBROKER_CORE_SOCKET"] = socket;
        var log = new StringBuilder();
        var p = new Process { StartInfo = psi };
        p.OutputDataReceived += (_, e) => { if (e.Data is not null) lock (log) log.AppendLine(e.Data); };
        p.ErrorDataReceived += (_, e) => { if (e.Data is not null) lock (log) log.AppendLine(e.Data); };
        p.Start();
        p.BeginErrorReadLine();
        p.BeginOutputReadLine();
        _started.Add((p, log));
        return (p, log);
    }

    /// <summary>Waits up to 30 s for <paramref name="text"/> in a gateway's log; fails the test with the log if it does not come.</summary>
    public static async Task WaitFor(StringBuilder log, string text)
    {
        var deadline = DateTime.UtcNow.AddSeconds(30);
        while (DateTime.UtcNow < deadline)
        {
            lock (log) if (log.ToString().Contains(text, StringComparison.Ordinal)) return;
            await Task.Delay(50);
        }
        lock (log) Assert.Fail($"\"{text}\" not seen in:\n{log}");
    }

    public void Dispose()
    {
        foreach (var (p, log) in _started)
        {
            if (!p.HasExited) p.Kill(entireProcessTree: true);
            lock (log) output.WriteLine(log.ToString());
            p.Dispose();
        }
    }
}
