using System.Diagnostics;
using System.Runtime.InteropServices;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using NatsBroker.Configuration;
using NatsBroker.Server;

namespace NatsBroker.Hosting;

/// <summary>
/// Supervised start of gateway processes (gateways/README.md): when the core runs a config with a <c>tls {}</c>
/// block and no <c>gateways { managed: external }</c>, it starts the tls-terminator itself, so one command still
/// runs a whole nats-server config. The child gets the same config file, the core's Unix socket and a proxy nkey
/// seed made for this run (in its environment, readable only by our uid), whose public key the core trusts.
/// A crashed child is restarted with a growing back-off (1 s doubling to 30 s, reset after a minute up);
/// SIGHUP is passed on (certificate reload); on shutdown the child gets SIGTERM to drain, then is killed.
/// Registered after <see cref="BrokerService"/>, so it starts after the core listens and stops before it.
/// </summary>
public sealed partial class GatewaySupervisor : IHostedService
{
    /// <summary>Environment variables a supervised gateway reads (gateways/link GatewayEnvironment).</summary>
    public const string SeedVariable = "NATSBROKER_GATEWAY_SEED", SocketVariable = "NATSBROKER_CORE_SOCKET";
    /// <summary>Overrides where the tls-terminator is found (a published binary or a .dll run with dotnet).</summary>
    public const string TerminatorPathVariable = "NATSBROKER_TLS_TERMINATOR";
    private const string TerminatorAssembly = "NatsBroker.TlsTerminator";
    private const int SigTerm = 15, SigHup = 1;

    private readonly ServerOptions _options;
    private readonly ILogger _log;
    private readonly string? _seed;
    private readonly CancellationTokenSource _stopping = new();
    private readonly Lock _lock = new();
    private Process? _child;
    private Task? _loop;
    private PosixSignalRegistration? _hup;

    public GatewaySupervisor(ServerOptions options, ILoggerFactory loggers)
    {
        ArgumentNullException.ThrowIfNull(options);
        ArgumentNullException.ThrowIfNull(loggers);
        _options = options;
        _log = loggers.CreateLogger("nats");
        if (!Enabled) return;
        // Constructed before any hosted service starts: the socket path and the trusted key must be in place
        // before the core binds its listeners.
        if (string.IsNullOrEmpty(options.UnixSocketPath))
            options.UnixSocketPath = Path.Combine(Path.GetTempPath(), $"natsbroker-{Environment.ProcessId}.sock");
        using var kp = NATS.NKeys.KeyPair.CreatePair(NATS.NKeys.PrefixByte.User);
        _seed = kp.GetSeed();
        TrustedProxyKeys.Add(kp.GetPublicKey());
    }

    private bool Enabled => _options.TlsConfigured && !_options.GatewaysManagedExternally;

    public Task StartAsync(CancellationToken cancellationToken)
    {
        if (!Enabled) return Task.CompletedTask;
        if (_options.ConfigFile is null)
            throw new ConfigException(null, "tls requires a configuration file (the tls-terminator reads it)");
        var start = FindTerminator() ?? throw new ConfigException(null,
            $"tls: the tls-terminator gateway was not found (build gateways/tls-terminator or set {TerminatorPathVariable})");
        _hup = PosixSignalRegistration.Create(PosixSignal.SIGHUP, _ => Signal(SigHup));
        _loop = Task.Run(() => SuperviseAsync(start));
        return Task.CompletedTask;
    }

    public async Task StopAsync(CancellationToken cancellationToken)
    {
        if (_loop is null) return;
        await _stopping.CancelAsync().ConfigureAwait(false);
        _hup?.Dispose();
        await _loop.ConfigureAwait(false);
    }

    private async Task SuperviseAsync(ProcessStartInfo start)
    {
        var backoff = TimeSpan.FromSeconds(1);
        while (!_stopping.IsCancellationRequested)
        {
            Process child;
            try
            {
                child = Process.Start(start) ?? throw new InvalidOperationException("no process");
            }
            catch (Exception ex) when (ex is System.ComponentModel.Win32Exception or InvalidOperationException)
            {
                _log.LogError("Could not start the tls-terminator: {Error}", ex.Message);
                if (!await DelayAsync(backoff).ConfigureAwait(false)) return;
                backoff = Next(backoff);
                continue;
            }
            lock (_lock) _child = child;
            _log.LogInformation("Started the tls-terminator gateway (pid {Pid})", child.Id);
            var started = Stopwatch.StartNew();
            try
            {
                await child.WaitForExitAsync(_stopping.Token).ConfigureAwait(false);
            }
            catch (OperationCanceledException)
            {
                await StopChildAsync(child).ConfigureAwait(false);
                return;
            }
            finally
            {
                lock (_lock) _child = null;
            }
            _log.LogError("The tls-terminator gateway exited with code {Code}; restarting in {Delay}", child.ExitCode, backoff);
            child.Dispose();
            if (started.Elapsed > TimeSpan.FromMinutes(1)) backoff = TimeSpan.FromSeconds(1);
            if (!await DelayAsync(backoff).ConfigureAwait(false)) return;
            backoff = Next(backoff);
        }
    }

    private static TimeSpan Next(TimeSpan t) => t * 2 > TimeSpan.FromSeconds(30) ? TimeSpan.FromSeconds(30) : t * 2;

    private async Task<bool> DelayAsync(TimeSpan delay)
    {
        try
        {
            await Task.Delay(delay, _stopping.Token).ConfigureAwait(false);
            return true;
        }
        catch (OperationCanceledException)
        {
            return false;
        }
    }

    /// <summary>SIGTERM lets the gateway drain its clients; kill if it has not exited within the grace period.</summary>
    private async Task StopChildAsync(Process child)
    {
        if (!child.HasExited) _ = kill(child.Id, SigTerm);
        using var grace = new CancellationTokenSource(TimeSpan.FromSeconds(10));
        try
        {
            await child.WaitForExitAsync(grace.Token).ConfigureAwait(false);
        }
        catch (OperationCanceledException)
        {
            _log.LogWarning("The tls-terminator did not stop in time; killing it");
            child.Kill(entireProcessTree: true);
        }
        child.Dispose();
    }

    private void Signal(int signal)
    {
        lock (_lock)
        {
            if (_child is { HasExited: false } c) _ = kill(c.Id, signal);
        }
    }

    /// <summary>
    /// The terminator: <see cref="TerminatorPathVariable"/>, else next to the core (a published layout), else the
    /// repository's build output for the same configuration (dotnet run / the tests).
    /// </summary>
    private ProcessStartInfo? FindTerminator()
    {
        string? path = Environment.GetEnvironmentVariable(TerminatorPathVariable);
        if (string.IsNullOrEmpty(path))
        {
            var here = AppContext.BaseDirectory;
            path = Candidates(here).FirstOrDefault(File.Exists);
        }
        if (path is null || !File.Exists(path)) return null;
        var psi = path.EndsWith(".dll", StringComparison.OrdinalIgnoreCase)
            ? new ProcessStartInfo(DotnetHost()) { ArgumentList = { path } }
            : new ProcessStartInfo(path);
        psi.ArgumentList.Add("-c");
        psi.ArgumentList.Add(Path.GetFullPath(_options.ConfigFile!));
        // The core's effective listen address (command-line flags override the file, as in nats-server).
        psi.ArgumentList.Add("-a");
        psi.ArgumentList.Add(_options.Host);
        psi.ArgumentList.Add("-p");
        psi.ArgumentList.Add(_options.Port.ToString(System.Globalization.CultureInfo.InvariantCulture));
        if (_options.Debug || _options.Trace) psi.ArgumentList.Add("-D");
        psi.UseShellExecute = false;
        psi.Environment[SeedVariable] = _seed;
        psi.Environment[SocketVariable] = _options.UnixSocketPath;
        return psi;
    }

    private static IEnumerable<string> Candidates(string baseDir)
    {
        yield return Path.Combine(baseDir, TerminatorAssembly + ".dll");
        // <repo>/core/bin/<Configuration>/<tfm>/ → <repo>/gateways/tls-terminator/bin/<Configuration>/<tfm>/
        var tfm = new DirectoryInfo(baseDir.TrimEnd(Path.DirectorySeparatorChar));
        var config = tfm.Parent;
        var repo = config?.Parent?.Parent?.Parent;
        if (repo is not null && config is not null)
            yield return Path.Combine(repo.FullName, "gateways", "tls-terminator", "bin", config.Name, tfm.Name, TerminatorAssembly + ".dll");
    }

    private static string DotnetHost()
    {
        var self = Environment.ProcessPath;
        if (self is not null && Path.GetFileNameWithoutExtension(self) == "dotnet") return self;
        return Environment.GetEnvironmentVariable("DOTNET_HOST_PATH") is { Length: > 0 } h ? h : "dotnet";
    }

    [LibraryImport("libc", SetLastError = true)]
    private static partial int kill(int pid, int sig);
}
