using System.Diagnostics;
using System.Net.Sockets;
using System.Text;
using System.Text.Json;
using System.Text.RegularExpressions;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Infrastructure;

/// <summary>How to launch a server: config file text, extra flags, optional listeners.</summary>
public sealed record ServerStartOptions
{
    /// <summary>Config file contents (nats-server syntax); written to a temp file and passed with -c.</summary>
    public string? Config { get; init; }

    /// <summary>Extra command-line flags appended after the standard ones.</summary>
    public IReadOnlyList<string> ExtraArgs { get; init; } = [];

    /// <summary>Also listen on a Unix domain socket (our extension, <c>--unix_socket</c>; ignored with a note for Go).</summary>
    public bool UnixSocket { get; init; }

    /// <summary>Enable the HTTP monitoring listener on a random port (<c>-m -1</c>).</summary>
    public bool Monitoring { get; init; }

    /// <summary>Bound on the wait until the server accepts connections.</summary>
    public TimeSpan StartTimeout { get; init; } = TimeSpan.FromSeconds(20);

    /// <summary>Fixed client port; null = random (-p -1).</summary>
    public int? Port { get; init; }

    /// <summary>Start through <c>nohup</c>, so the server inherits SIGHUP ignored (as <c>nohup nats-server ... &amp;</c> does).</summary>
    public bool UnderNohup { get; init; }

    /// <summary>For <see cref="ServerKind.Go"/>: this nats-server binary instead of <see cref="TestEnvironment.GoServerPath"/> (e.g. <see cref="TestEnvironment.Oracle214Path"/>).</summary>
    public string? GoBinary { get; init; }

    /// <summary>
    /// Environment variables set for the server process on top of the test's own (e.g. an operator switch such as
    /// <c>NATSBROKER_CLIENT_POLLING=0</c>); a supervised gateway inherits them from the core.
    /// </summary>
    public IReadOnlyDictionary<string, string> Environment { get; init; } = new Dictionary<string, string>();
}

/// <summary>
/// A server process (our broker or Go nats-server) on 127.0.0.1 with a random port, found through
/// <c>--ports_file_dir</c>. Captures stdout/stderr for diagnostics. Dispose stops it (SIGINT, then kill).
/// </summary>
public sealed partial class ServerProcess : IAsyncDisposable
{
    private const int MaxCapturedChars = 256 * 1024;
    private readonly StringBuilder _output = new();
    /// <summary>How long the ports file is waited for before the "listening" log line (and a probe) is trusted instead.</summary>
    private static readonly TimeSpan PortsFileGrace = TimeSpan.FromSeconds(5);
    private readonly ITestOutputHelper? _log;
    private readonly string _workDir;
    private Process? _process;
    private bool _disposed;

    private ServerProcess(ServerKind requested, ServerStartOptions options, ITestOutputHelper? log)
    {
        RequestedKind = requested;
        Kind = TestEnvironment.Resolve(requested);
        Options = options;
        _log = log;
        _workDir = Path.Combine(Path.GetTempPath(), "natsbroker-tests", $"{Kind.ToString().ToLowerInvariant()}-{Guid.NewGuid():N}");
        Directory.CreateDirectory(PortsDir);
        if (options.Config is not null)
        {
            File.WriteAllText(ConfigPath, options.Config);
        }

        if (options.UnixSocket)
        {
            // sun_path is limited to ~108 bytes: keep it short.
            UnixSocketPath = Path.Combine(Path.GetTempPath(), $"nb-{Guid.NewGuid():N}"[..12] + ".sock");
        }
    }

    /// <summary>The kind the test asked for.</summary>
    public ServerKind RequestedKind { get; }

    /// <summary>The kind actually running (Go when NATSBROKER_TEST_SERVER=go redirected an "ours" request).</summary>
    public ServerKind Kind { get; }

    public ServerStartOptions Options { get; }

    public string Host => "127.0.0.1";

    public int Port { get; private set; }

    public string Url => $"nats://{Host}:{Port}";

    public int? MonitorPort { get; private set; }

    public string? UnixSocketPath { get; }

    public int Pid => _process?.Id ?? -1;

    public string ConfigPath => Path.Combine(_workDir, "server.conf");

    private string PortsDir => Path.Combine(_workDir, "ports");

    public bool HasExited => _process is null || _process.HasExited;

    /// <summary>Captured stdout + stderr so far (tail, at most 256 KiB).</summary>
    public string Output
    {
        get
        {
            lock (_output)
            {
                return _output.ToString();
            }
        }
    }

    /// <summary>Starts a server and waits until it accepts TCP connections.</summary>
    public static async Task<ServerProcess> StartAsync(ServerKind kind, ServerStartOptions? options = null, ITestOutputHelper? log = null)
    {
        var reason = kind == ServerKind.Go && options?.GoBinary is { } binary
            ? (File.Exists(binary) ? null : $"{binary} does not exist")
            : TestEnvironment.UnavailableReason(kind);
        if (reason is not null)
        {
            throw new InvalidOperationException($"{kind} server unavailable: {reason}");
        }

        var server = new ServerProcess(kind, options ?? new ServerStartOptions(), log);
        try
        {
            await server.LaunchAsync(server.Options.Port ?? -1).ConfigureAwait(false);
            return server;
        }
        catch
        {
            await server.DisposeAsync().ConfigureAwait(false);
            throw;
        }
    }

    /// <summary>Starts with a config file text.</summary>
    public static Task<ServerProcess> StartAsync(ServerKind kind, string config, ITestOutputHelper? log = null) =>
        StartAsync(kind, new ServerStartOptions { Config = config }, log);

    /// <summary>Rewrites the config file (e.g. before <see cref="Reload"/>).</summary>
    public void WriteConfig(string config) => File.WriteAllText(ConfigPath, config);

    /// <summary>SIGHUP: config reload.</summary>
    public void Reload() => Signal("HUP");

    /// <summary>Sends a signal by name ("INT", "HUP", "KILL", "TERM", "USR1", "USR2") with kill(1).</summary>
    public void Signal(string name)
    {
        if (HasExited)
        {
            throw new InvalidOperationException("server is not running:\n" + OutputTail());
        }

        using var kill = Process.Start(new ProcessStartInfo("kill", ["-" + name, Pid.ToString(System.Globalization.CultureInfo.InvariantCulture)])
        {
            UseShellExecute = false,
        })!;
        kill.WaitForExit(5000);
    }

    /// <summary>Graceful stop: SIGINT, then a hard kill if it has not exited within <paramref name="grace"/>.</summary>
    public async Task StopAsync(TimeSpan? grace = null)
    {
        if (HasExited)
        {
            return;
        }

        try
        {
            Signal("INT");
        }
        catch (InvalidOperationException)
        {
            return;
        }

        using var cts = new CancellationTokenSource(grace ?? TimeSpan.FromSeconds(5));
        try
        {
            await _process!.WaitForExitAsync(cts.Token).ConfigureAwait(false);
        }
        catch (OperationCanceledException)
        {
            Kill();
        }
    }

    /// <summary>Hard kill (SIGKILL), waits for exit.</summary>
    public void Kill()
    {
        if (HasExited)
        {
            return;
        }

        try
        {
            _process!.Kill(entireProcessTree: true);
            _process.WaitForExit(5000);
        }
        catch (InvalidOperationException)
        {
        }
    }

    /// <summary>Stops (SIGINT, or SIGKILL when <paramref name="hard"/>) and starts again on the same port and config.</summary>
    public async Task RestartAsync(bool hard = false)
    {
        if (hard)
        {
            Kill();
        }
        else
        {
            await StopAsync().ConfigureAwait(false);
        }

        // The old listener may linger for a moment: retry a few times when the new process exits early.
        for (var attempt = 1; ; attempt++)
        {
            try
            {
                await LaunchAsync(Port).ConfigureAwait(false);
                return;
            }
            catch (InvalidOperationException) when (attempt < 4)
            {
                await Task.Delay(500).ConfigureAwait(false);
            }
        }
    }

    private async Task LaunchAsync(int port)
    {
        foreach (var f in Directory.GetFiles(PortsDir))
        {
            File.Delete(f);
        }

        var (file, args) = BuildCommand(port);
        if (Options.UnderNohup)
        {
            // nohup sets SIGHUP to ignored and execs the server in the same process (the pid stays the server's).
            args.Insert(0, file);
            file = "nohup";
        }
        var psi = new ProcessStartInfo(file)
        {
            UseShellExecute = false,
            RedirectStandardOutput = true,
            RedirectStandardError = true,
            RedirectStandardInput = false,
            WorkingDirectory = _workDir,
        };
        foreach (var a in args)
        {
            psi.ArgumentList.Add(a);
        }

        // Keep the broker quiet about telemetry/first-run; make it deterministic.
        psi.Environment["DOTNET_CLI_TELEMETRY_OPTOUT"] = "1";
        psi.Environment["DOTNET_NOLOGO"] = "1";
        foreach (var (name, value) in Options.Environment)
        {
            psi.Environment[name] = value;
        }

        var commandLine = file + " " + string.Join(' ', args);
        AppendOutput($"$ {commandLine}\n");
        var process = new Process { StartInfo = psi, EnableRaisingEvents = true };
        process.OutputDataReceived += (_, e) => { if (e.Data is not null) AppendOutput(e.Data + "\n"); };
        process.ErrorDataReceived += (_, e) => { if (e.Data is not null) AppendOutput(e.Data + "\n"); };
        if (!process.Start())
        {
            throw new InvalidOperationException("could not start " + commandLine);
        }

        _process = process;
        process.BeginOutputReadLine();
        process.BeginErrorReadLine();

        var deadline = Stopwatch.StartNew();
        var timeout = Options.StartTimeout;
        while (true)
        {
            if (process.HasExited)
            {
                // Give the async readers a moment to drain the last lines.
                await Task.Delay(100).ConfigureAwait(false);
                throw new InvalidOperationException(
                    $"{Kind} server exited with code {process.ExitCode} before accepting connections.\n{OutputTail()}");
            }

            // The ports file is written once every listener (monitoring included) accepts; the log line comes
            // before the monitoring listener starts, so a test that asked for monitoring waits for the file.
            var fromPortsFile = TryReadPorts(out var clientPort, out var monitorPort);
            // The log line (then checked with a probe connection) only when the ports file is late: a probe's close can
            // still be in flight when the test's first connections arrive, and with max_connections it takes a slot.
            var listening = fromPortsFile
                ? !Options.Monitoring || monitorPort is not null
                : !Options.Monitoring && deadline.Elapsed > PortsFileGrace && TryParseListenLine(out clientPort);
            if (listening)
            {
                // Both servers write the ports file only once they accept, so no probe connection is made then: a
                // probe's close can still be in flight when the test connects, and with max_connections it would
                // take a slot. Except with tls {}: our client port is then the supervised TLS terminator's, which
                // may still be starting when the core writes the file. A `tls` key, not any text containing "tls":
                // websocket's `no_tls: true` made a probe whose close took the only slot of a max_connections: 1 test.
                var probe = !fromPortsFile || (Kind == ServerKind.Ours && Options.Config is { } config && TlsKey().IsMatch(config));
                if (!probe || await CanConnectAsync(clientPort).ConfigureAwait(false))
                {
                    Port = clientPort;
                    MonitorPort = monitorPort;
                    _log?.WriteLine($"[{Kind}{(RequestedKind != Kind ? " (requested " + RequestedKind + ")" : "")}] pid {process.Id} listening on {Url}");
                    return;
                }
            }

            if (deadline.Elapsed > timeout)
            {
                Kill();
                throw new TimeoutException($"{Kind} server did not accept connections within {timeout.TotalSeconds:0.#}s.\n{OutputTail()}");
            }

            await Task.Delay(25).ConfigureAwait(false);
        }
    }

    private (string File, List<string> Args) BuildCommand(int port)
    {
        var args = new List<string>();
        string file;
        if (Kind == ServerKind.Go)
        {
            file = Options.GoBinary ?? TestEnvironment.GoServerPath!;
        }
        else
        {
            (file, var prefix) = TestEnvironment.OursCommand();
            args.AddRange(prefix);
        }

        if (Options.Config is not null)
        {
            args.AddRange(["-c", ConfigPath]);
        }

        args.AddRange(["-a", Host, "-p", port.ToString(System.Globalization.CultureInfo.InvariantCulture), "--ports_file_dir", PortsDir]);
        if (Options.Monitoring)
        {
            args.AddRange(["-m", MonitorPort?.ToString(System.Globalization.CultureInfo.InvariantCulture) ?? "-1"]);
        }

        if (UnixSocketPath is not null)
        {
            if (Kind == ServerKind.Ours)
            {
                args.AddRange(["--unix_socket", UnixSocketPath]);
            }
            else
            {
                _log?.WriteLine("note: Go nats-server has no Unix socket listener; --unix_socket not passed");
            }
        }

        args.AddRange(Options.ExtraArgs);
        return (file, args);
    }

    private bool TryReadPorts(out int clientPort, out int? monitorPort)
    {
        clientPort = 0;
        monitorPort = null;
        foreach (var f in Directory.GetFiles(PortsDir, "*.ports"))
        {
            try
            {
                using var doc = JsonDocument.Parse(File.ReadAllText(f));
                if (!doc.RootElement.TryGetProperty("nats", out var nats) || nats.GetArrayLength() == 0)
                {
                    continue;
                }

                clientPort = new Uri(nats[0].GetString()!).Port;
                if (doc.RootElement.TryGetProperty("monitoring", out var mon) && mon.ValueKind == JsonValueKind.Array && mon.GetArrayLength() > 0)
                {
                    monitorPort = new Uri(mon[0].GetString()!).Port;
                }

                return clientPort > 0;
            }
            catch (Exception e) when (e is IOException or JsonException or UriFormatException or InvalidOperationException)
            {
                // Partially written: retry on the next poll.
            }
        }

        return false;
    }

    private bool TryParseListenLine(out int port)
    {
        port = 0;
        var m = ListenLine().Match(Output);
        return m.Success && int.TryParse(m.Groups[1].Value, out port);
    }

    [GeneratedRegex(@"(?<![A-Za-z0-9_])tls\s*[{:=]")]
    private static partial Regex TlsKey();

    private async Task<bool> CanConnectAsync(int port)
    {
        using var socket = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
        using var cts = new CancellationTokenSource(TimeSpan.FromSeconds(2));
        try
        {
            await socket.ConnectAsync(Host, port, cts.Token).ConfigureAwait(false);
            return true;
        }
        catch (Exception e) when (e is SocketException or OperationCanceledException)
        {
            return false;
        }
    }

    private void AppendOutput(string s)
    {
        lock (_output)
        {
            _output.Append(s);
            if (_output.Length > MaxCapturedChars)
            {
                _output.Remove(0, _output.Length - MaxCapturedChars);
            }
        }
    }

    /// <summary>Polls the captured output until it contains <paramref name="text"/>; false when <paramref name="limit"/> passed first.</summary>
    public async Task<bool> WaitForOutputAsync(string text, TimeSpan limit)
    {
        var deadline = DateTime.UtcNow + limit;
        while (!Output.Contains(text, StringComparison.Ordinal))
        {
            if (DateTime.UtcNow >= deadline) return false;
            await Task.Delay(50).ConfigureAwait(false);
        }
        return true;
    }

    /// <summary>The last <paramref name="chars"/> characters of the captured output, for failure messages.</summary>
    public string OutputTail(int chars = 4000)
    {
        var o = Output;
        return "---- server output (tail) ----\n" + (o.Length > chars ? "..." + o[^chars..] : o);
    }

    public override string ToString() => $"{Kind} pid {Pid} {Url}";

    public async ValueTask DisposeAsync()
    {
        if (_disposed)
        {
            return;
        }

        _disposed = true;
        await StopAsync(TimeSpan.FromSeconds(3)).ConfigureAwait(false);
        _process?.Dispose();
        if (_log is not null)
        {
            try
            {
                _log.WriteLine(OutputTail(2000));
            }
            catch (InvalidOperationException)
            {
                // Output helper no longer attached to a running test (fixtures).
            }
        }

        try
        {
            Directory.Delete(_workDir, recursive: true);
            if (UnixSocketPath is not null && File.Exists(UnixSocketPath))
            {
                File.Delete(UnixSocketPath);
            }
        }
        catch (IOException)
        {
        }
    }

    [GeneratedRegex(@"Listening for client connections on [^\s:]+:(\d+)")]
    private static partial Regex ListenLine();
}
