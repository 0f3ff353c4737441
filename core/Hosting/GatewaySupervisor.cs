using System.Diagnostics;
using System.Runtime.InteropServices;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using NatsBroker.Configuration;
using NatsBroker.Transport.Runtime;
using NatsBroker.Server;

namespace NatsBroker.Hosting;

/// <summary>
/// Supervised start of gateway processes (gateways/README.md): when the core runs a config with a <c>tls {}</c>
/// block (the tls-terminator), a <c>websocket {}</c> block (the websocket gateway) or an <c>mqtt {}</c> block
/// (the MQTT gateway) and no
/// <c>gateways { managed: external }</c>, it starts those gateways itself, so one command still runs a whole
/// nats-server config. The child gets the same config file, the core's Unix socket and a proxy nkey
/// seed made for this run (in its environment, readable only by our uid), whose public key the core trusts.
/// The core says it is ready once every gateway accepts; a gateway that exits before that ends the core's start with
/// its reason (GatewaySupervisor.Readiness.cs). A child that crashes later is restarted with a growing back-off
/// (1 s doubling to 30 s, reset after a minute up);
/// SIGHUP is passed on (certificate reload); on shutdown the child gets SIGTERM to drain, then is killed.
/// Registered after <see cref="BrokerService"/>, so it starts after the core listens and stops before it.
/// </summary>
public sealed partial class GatewaySupervisor : IHostedService
{
    /// <summary>Environment variables a supervised gateway reads (gateways/link GatewayEnvironment).</summary>
    public const string SeedVariable = "NATSBROKER_GATEWAY_SEED", SocketVariable = "NATSBROKER_CORE_SOCKET";
    /// <summary>The core's pid, for the child to notice it is gone (gateways/link SupervisorWatch.PidVariable).</summary>
    public const string SupervisorPidVariable = "NATSBROKER_SUPERVISOR_PID";
    /// <summary>Overrides where the tls-terminator is found (a published binary or a .dll run with dotnet).</summary>
    public const string TerminatorPathVariable = "NATSBROKER_TLS_TERMINATOR";
    /// <summary>Overrides where the websocket gateway is found.</summary>
    public const string WebSocketPathVariable = "NATSBROKER_WEBSOCKET_GATEWAY";
    /// <summary>Overrides where the MQTT gateway is found.</summary>
    public const string MqttPathVariable = "NATSBROKER_MQTT_GATEWAY";

    /// <summary>A gateway kind: its name in logs, assembly, override variable, folder, whether it takes the core's -a/-p,
    /// and the name the gateway prefixes its own errors with (gateways/*/Program.cs).</summary>
    private sealed record GatewayKind(string Name, string Assembly, string PathVariable, string Folder, bool TakesClientAddress, string DisplayName);

    private static readonly GatewayKind Terminator = new("tls-terminator", "NatsBroker.TlsTerminator", TerminatorPathVariable, "tls-terminator", true, "tls-terminator");
    private static readonly GatewayKind WebSocket = new("websocket", "NatsBroker.WebSocketGateway", WebSocketPathVariable, "websocket", false, "websocket gateway");
    private static readonly GatewayKind Mqtt = new("mqtt", "NatsBroker.MqttGateway", MqttPathVariable, "mqtt", false, "mqtt gateway");
    private const int SigTerm = 15, SigHup = 1;

    private readonly ServerOptions _options;
    private readonly ILogger _log;
    private readonly string? _seed;
    private readonly CancellationTokenSource _stopping = new();
    private readonly Lock _lock = new();
    private readonly Dictionary<string, Process> _children = [];
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

    private bool Enabled => IsNeeded(_options);

    /// <summary>Whether the configuration asks for supervised gateways. <see cref="Program"/> constructs a supervisor
    /// only then, so a plain broker does not load System.Diagnostics.Process at start-up.</summary>
    public static bool IsNeeded(ServerOptions options) =>
        (options.TlsConfigured || options.WebSocketConfigured || options.MqttConfigured) && !options.GatewaysManagedExternally;

    private IEnumerable<GatewayKind> Configured()
    {
        if (_options.TlsConfigured) yield return Terminator;
        if (_options.WebSocketConfigured) yield return WebSocket;
        if (_options.MqttConfigured) yield return Mqtt;
    }

    public Task StartAsync(CancellationToken cancellationToken)
    {
        if (!Enabled) return Task.CompletedTask;
        var loops = new List<Task>();
        foreach (var kind in Configured())
        {
            if (_options.ConfigFile is null)
                throw new ConfigException(null, $"{kind.Name}: a configuration file is required (the gateway reads it)");
            var start = FindGateway(kind) ?? throw new ConfigException(null,
                $"{kind.Name}: the gateway was not found (build gateways/{kind.Folder} or set {kind.PathVariable})");
            loops.Add(Task.Run(() => SuperviseAsync(kind, start)));
        }
        _hup = Signals.Register(PosixSignal.SIGHUP, _ => Signal(SigHup));
        _loop = Task.WhenAll(loops);
        return Task.CompletedTask;
    }

    /// <summary>
    /// With tls {} and `port: -1` (random, as client test harnesses configure) the terminator owns the client port,
    /// so the core picks the free port before starting it: the ports file and INFO can then name the real port.
    /// </summary>
    public static void ResolveRandomClientPort(ServerOptions options)
    {
        if (!IsNeeded(options) || !options.TlsConfigured || options.Port >= 0) return;
        var address = options.Host is "" or "0.0.0.0" or "*" ? System.Net.IPAddress.Any
            : System.Net.IPAddress.TryParse(options.Host, out var ip) ? ip : System.Net.IPAddress.Loopback;
        using var probe = new System.Net.Sockets.Socket(address.AddressFamily, System.Net.Sockets.SocketType.Stream, System.Net.Sockets.ProtocolType.Tcp);
        probe.Bind(new System.Net.IPEndPoint(address, 0));
        options.Port = ((System.Net.IPEndPoint)probe.LocalEndPoint!).Port;
    }

    public async Task StopAsync(CancellationToken cancellationToken)
    {
        if (_loop is null) return;
        await _stopping.CancelAsync().ConfigureAwait(false);
        _hup?.Dispose();
        await _loop.ConfigureAwait(false);
    }

    private async Task SuperviseAsync(GatewayKind kind, ProcessStartInfo start)
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
                _log.LogError("Could not start the {Gateway} gateway: {Error}", kind.Name, ex.Message);
                if (!await DelayAsync(backoff).ConfigureAwait(false)) return;
                backoff = Next(backoff);
                continue;
            }
            lock (_lock) _children[kind.Name] = child;
            _log.LogInformation("Started the {Gateway} gateway (pid {Pid})", kind.Name, child.Id);
            var started = Stopwatch.StartNew();
            try
            {
                await child.WaitForExitAsync(_stopping.Token).ConfigureAwait(false);
            }
            catch (OperationCanceledException)
            {
                await StopChildAsync(kind, child).ConfigureAwait(false);
                return;
            }
            finally
            {
                lock (_lock) _children.Remove(kind.Name);
            }
            if (!_startedUp)
            {
                // Exited before the core announced itself ready: a bad block or a port in use, which a restart
                // would only repeat. WaitForGatewaysAsync hears it and the core exits with the reason.
                FailedToStart(kind, child.ExitCode);
                child.Dispose();
                return;
            }
            _log.LogError("The {Gateway} gateway exited with code {Code}; restarting in {Delay}", kind.Name, child.ExitCode, backoff);
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
    private async Task StopChildAsync(GatewayKind kind, Process child)
    {
        if (!child.HasExited) _ = kill(child.Id, SigTerm);
        using var grace = new CancellationTokenSource(TimeSpan.FromSeconds(10));
        try
        {
            await child.WaitForExitAsync(grace.Token).ConfigureAwait(false);
        }
        catch (OperationCanceledException)
        {
            _log.LogWarning("The {Gateway} gateway did not stop in time; killing it", kind.Name);
            child.Kill(entireProcessTree: true);
        }
        child.Dispose();
    }

    private void Signal(int signal)
    {
        lock (_lock)
        {
            foreach (var c in _children.Values)
            {
                if (!c.HasExited) _ = kill(c.Id, signal);
            }
        }
    }

    /// <summary>
    /// A gateway: its path variable (run as given: a .dll with the dotnet host, anything else directly), else next
    /// to the core (a published layout), else the repository's build output for the same configuration (dotnet run /
    /// the tests). Found by its <c>.dll</c>, a gateway is started through the executable beside it when there is
    /// one: in the build output and a publish that is a Native AOT image (Directory.Build.targets), which starts
    /// without JIT and in less memory (the tls-terminator accepts about 200 ms sooner,
    /// bench/results/session-2026-11-27-gwaot.md); elsewhere (a build with -p:NatsBrokerNativeAot=false, the tests'
    /// output folder) it is the framework-dependent apphost, equivalent to <c>dotnet X.dll</c>.
    /// </summary>
    private ProcessStartInfo? FindGateway(GatewayKind kind)
    {
        string? path = Environment.GetEnvironmentVariable(kind.PathVariable);
        if (string.IsNullOrEmpty(path))
        {
            var here = AppContext.BaseDirectory;
            path = Candidates(here, kind).FirstOrDefault(File.Exists);
            if (path is not null && Path.ChangeExtension(path, null) is var executable && File.Exists(executable))
                path = executable;
        }
        if (path is null || !File.Exists(path)) return null;
        var psi = path.EndsWith(".dll", StringComparison.OrdinalIgnoreCase)
            ? new ProcessStartInfo(DotnetHost()) { ArgumentList = { path } }
            : new ProcessStartInfo(path);
        // A framework-dependent apphost finds the runtime through DOTNET_ROOT or the default install locations; a
        // core run by a dotnet outside those (a per-user install) passes its own on.
        // (/usr/bin/dotnet is a link into the install; DOTNET_ROOT names the install.)
        if (Environment.GetEnvironmentVariable("DOTNET_ROOT") is null or "" && DotnetHost() is var host && Path.IsPathRooted(host) && File.Exists(host))
            psi.Environment["DOTNET_ROOT"] = Path.GetDirectoryName(File.ResolveLinkTarget(host, returnFinalTarget: true)?.FullName ?? host);
        psi.ArgumentList.Add("-c");
        psi.ArgumentList.Add(Path.GetFullPath(_options.ConfigFile!));
        if (kind.TakesClientAddress)
        {
            // The core's effective listen address (command-line flags override the file, as in nats-server).
            psi.ArgumentList.Add("-a");
            psi.ArgumentList.Add(_options.Host);
            psi.ArgumentList.Add("-p");
            psi.ArgumentList.Add(_options.Port.ToString(System.Globalization.CultureInfo.InvariantCulture));
        }
        if (_options.Debug || _options.Trace) psi.ArgumentList.Add("-D");
        psi.UseShellExecute = false;
        psi.Environment[SeedVariable] = _seed;
        psi.Environment[SocketVariable] = _options.UnixSocketPath;
        // The child stops by itself when this process is gone (killed, so unable to SIGTERM it): gateways/link SupervisorWatch.
        psi.Environment[SupervisorPidVariable] = Environment.ProcessId.ToString(System.Globalization.CultureInfo.InvariantCulture);
        return psi;
    }

    private static IEnumerable<string> Candidates(string baseDir, GatewayKind kind)
    {
        yield return Path.Combine(baseDir, kind.Assembly + ".dll");
        // <repo>/core/bin/<Configuration>/<tfm>/ → <repo>/gateways/tls-terminator/bin/<Configuration>/<tfm>/
        var tfm = new DirectoryInfo(baseDir.TrimEnd(Path.DirectorySeparatorChar));
        var config = tfm.Parent;
        var repo = config?.Parent?.Parent?.Parent;
        if (repo is not null && config is not null)
            yield return Path.Combine(repo.FullName, "gateways", kind.Folder, "bin", config.Name, tfm.Name, kind.Assembly + ".dll");
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
