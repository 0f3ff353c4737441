using System.Diagnostics;
using System.Net;
using System.Net.Sockets;
using System.Text;

namespace NatsBroker.Bench.Scenarios.Gateways;

/// <summary>
/// What the gateway rows need: where our gateway binaries are, a proxy identity for them, a Unix socket path for
/// the core, relay processes started for one run (killed with their process tree when the run ends), and a bounded
/// wait for a port to answer.
/// </summary>
internal static class BenchGateways
{
    private static readonly Lazy<string> s_seed = new(MakeSeed);

    /// <summary>The core's Unix socket for the hop rows (one bench process runs one server at a time).</summary>
    public static string CoreSocket { get; } = BenchTemp.File("hop.sock");

    /// <summary>The tls-terminator: $NATSBROKER_TLS_TERMINATOR (as the core looks it up), else the repository's Release build.</summary>
    public static string Terminator(string repoRoot) =>
        Environment.GetEnvironmentVariable("NATSBROKER_TLS_TERMINATOR") is { Length: > 0 } p ? p
            : Path.Combine(repoRoot, "gateways", "tls-terminator", "bin", "Release", "net10.0", "NatsBroker.TlsTerminator.dll");

    /// <summary>A proxy nkey seed for the relay-only gateway (the core trusts no proxies in these rows, so it is not checked).</summary>
    public static string Seed => s_seed.Value;

    private static string MakeSeed()
    {
        using var kp = NATS.NKeys.KeyPair.CreatePair(NATS.NKeys.PrefixByte.User);
        return kp.GetSeed();
    }

    /// <summary>Starts a relay process; it is killed (with its children) when the returned handle is disposed.</summary>
    public static RelayProcess Start(string fileName, IEnumerable<string> args, IDictionary<string, string>? env = null)
    {
        var psi = new ProcessStartInfo(fileName) { UseShellExecute = false, RedirectStandardError = true, RedirectStandardOutput = true };
        foreach (var a in args) psi.ArgumentList.Add(a);
        foreach (var (k, v) in env ?? new Dictionary<string, string>()) psi.Environment[k] = v;
        Process p;
        try
        {
            p = Process.Start(psi) ?? throw new InvalidOperationException($"{fileName} did not start");
        }
        catch (System.ComponentModel.Win32Exception ex)
        {
            throw new NotSupportedByServerException($"cannot start {fileName}: {ex.Message}", ex);
        }
        var relay = new RelayProcess(p);
        p.OutputDataReceived += (_, e) => relay.Append(e.Data);
        p.ErrorDataReceived += (_, e) => relay.Append(e.Data);
        p.BeginOutputReadLine();
        p.BeginErrorReadLine();
        return relay;
    }

    /// <summary>Waits (bounded) until <paramref name="endpoint"/> accepts a connection and, with <paramref name="expectInfo"/>, sends INFO.</summary>
    public static void WaitReady(IPEndPoint endpoint, TimeSpan timeout, RelayProcess? process = null, bool expectInfo = true)
    {
        var sw = Stopwatch.StartNew();
        Exception? last = null;
        while (sw.Elapsed < timeout)
        {
            if (process is not null && process.HasExited) throw new InvalidOperationException("relay exited at startup: " + process.Log);
            try
            {
                using var s = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
                using (var cts = new CancellationTokenSource(TimeSpan.FromSeconds(1)))
                {
                    s.ConnectAsync(endpoint, cts.Token).AsTask().GetAwaiter().GetResult();
                }
                if (!expectInfo) return;
                s.ReceiveTimeout = 2000;
                var buf = new byte[4];
                if (s.Receive(buf) == 4 && Encoding.ASCII.GetString(buf) == "INFO") return;
                last = new InvalidDataException("no INFO");
            }
            catch (Exception ex) when (ex is SocketException or OperationCanceledException or IOException)
            {
                last = ex;
            }
            Thread.Sleep(20);
        }
        throw new TimeoutException($"{endpoint} not ready after {timeout.TotalSeconds:0} s ({last?.Message}) {process?.Log}");
    }

    /// <summary>
    /// Waits (bounded) until a WebSocket client gets all the way through on <paramref name="endpoint"/>: the upgrade,
    /// INFO, CONNECT and a PONG. Ours serves ws:// from a gateway the core supervises, whose port can accept before
    /// its link to the core is up; an accepted TCP connection alone is not "ready".
    /// </summary>
    public static void WaitWebSocketReady(IPEndPoint endpoint, TimeSpan timeout)
    {
        var sw = Stopwatch.StartNew();
        Exception? last = null;
        while (sw.Elapsed < timeout)
        {
            try
            {
                using var probe = Raw.RawConnection.Connect(endpoint, "ready-probe", TimeSpan.FromSeconds(2), webSocket: true);
                return;
            }
            catch (Exception ex) when (ex is SocketException or IOException or InvalidDataException or InvalidOperationException)
            {
                last = ex;
            }
            Thread.Sleep(20);
        }
        throw new TimeoutException($"WebSocket port {endpoint} not ready after {timeout.TotalSeconds:0} s ({last?.Message})");
    }
}

/// <summary>A relay process for one run; disposing kills it and its children.</summary>
internal sealed class RelayProcess(Process process) : IDisposable
{
    private readonly StringBuilder _log = new();

    public bool HasExited => process.HasExited;

    public int Pid => process.Id;

    public string Log
    {
        get
        {
            lock (_log) return _log.ToString();
        }
    }

    public void Append(string? line)
    {
        if (line is null) return;
        lock (_log)
        {
            if (_log.Length < 16 * 1024) _log.AppendLine(line);
        }
    }

    public void Dispose()
    {
        try
        {
            if (!process.HasExited) process.Kill(entireProcessTree: true);
            process.WaitForExit(5000);
        }
        catch (InvalidOperationException)
        {
        }
        process.Dispose();
    }
}
