using System.Diagnostics.CodeAnalysis;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Console;
using NatsBroker.Configuration;
using NatsBroker.Transport.Runtime;

namespace NatsBroker.Gateways.Link;

/// <summary>
/// The entry point every gateway process shares: <c>-c FILE [-a host] [-p port] [-D] [-t] | --generate-key | -h</c>,
/// reading its part of the same nats-server config file as the core plus where the core is
/// (<see cref="GatewayEnvironment"/>), then running the gateway's hosted service under
/// Microsoft.Extensions.Hosting: a Type=notify service under systemd (UseSystemd), nats-server-style timestamps
/// on stderr (a supervised child shares the core's stderr).
/// </summary>
public static class GatewayProgram
{
    /// <param name="assemblyName">Shown in the usage line.</param>
    /// <param name="displayName">Prefix of error messages ("tls-terminator").</param>
    /// <param name="load">Reads this gateway's options from the parsed config file (throws ConfigException).</param>
    /// <param name="check">What else the gateway checks before it listens (its certificate files) and may refuse;
    /// run by <c>-t</c> too, so the check reports it.</param>
    /// <typeparam name="TService">Constructed by the host through its public constructor (AddHostedService): the
    /// annotation keeps that constructor in a trimmed Native AOT image (the tls-terminator's, Directory.Build.targets).</typeparam>
    public static int Main<TOptions, [DynamicallyAccessedMembers(DynamicallyAccessedMemberTypes.PublicConstructors)] TService>(string[] args, string assemblyName, string displayName, Func<ConfigTree, TOptions> load,
        Action<ConfigTree, TOptions>? check = null)
        where TOptions : class, IGatewayListenOptions
        where TService : class, IHostedService
    {
        ArgumentNullException.ThrowIfNull(args);
        ArgumentNullException.ThrowIfNull(load);
        // ctl SOCKET health|stats|drain: a client of a running gateway's control plane (Control/).
        if (args is ["ctl", var controlSocket, var command])
            return Control.ControlClient.RunCommandAsync(controlSocket, command, Console.Out, Console.Error).GetAwaiter().GetResult();
        SocketCompletions.PreferInline(); // before any socket exists
        string? configFile = null;
        string? controlSocketPath = null;
        string? host = null;
        int? port = null;
        bool debug = false, testOnly = false;
        for (int i = 0; i < args.Length; i++)
        {
            switch (args[i])
            {
                case "-c" or "--config" when i + 1 < args.Length:
                    configFile = args[++i];
                    break;
                // nats-server's flags: the command line wins over the file (the core passes its own -a/-p on).
                case "-a" or "--addr" or "--net" when i + 1 < args.Length:
                    host = args[++i];
                    break;
                case "-p" or "--port" when i + 1 < args.Length && int.TryParse(args[i + 1], System.Globalization.CultureInfo.InvariantCulture, out int p):
                    port = p;
                    i++;
                    break;
                case "--control-socket" when i + 1 < args.Length:
                    controlSocketPath = args[++i];
                    break;
                case "-D" or "--debug":
                    debug = true;
                    break;
                // nats-server's -t: check the config and exit. The core runs each supervised gateway with it before
                // it binds anything, so a block the gateway refuses stops the start with the gateway's reason.
                case "-t":
                    testOnly = true;
                    break;
                case "--generate-key":
                    // A proxy identity for gateways { seed_file } (keep it secret) and its public key for proxies { trusted }.
                    using (var kp = NATS.NKeys.KeyPair.CreatePair(NATS.NKeys.PrefixByte.User))
                    {
                        Console.WriteLine(kp.GetSeed());
                        Console.Error.WriteLine($"public key (for proxies {{ trusted }}): {kp.GetPublicKey()}");
                    }
                    return 0;
                case "-h" or "--help":
                    Console.WriteLine($"Usage: {assemblyName} -c <config file> [-a host] [-p port] [-D] [-t] [--control-socket PATH] | --generate-key | ctl PATH health|stats|drain");
                    return 0;
                default:
                    Console.Error.WriteLine($"{displayName}: unknown argument \"{args[i]}\"");
                    return 2;
            }
        }
        if (configFile is null)
        {
            Console.Error.WriteLine($"{displayName}: a configuration file is required (-c FILE)");
            return 2;
        }
        TOptions options;
        GatewayEnvironment link;
        try
        {
            var tree = ConfigParser.ParseFile(configFile);
            options = load(tree);
            if (host is not null) options.Host = host;
            if (port is not null) options.Port = port.Value;
            link = GatewayEnvironment.Resolve(tree);
            if (testOnly) check?.Invoke(tree, options);
        }
        catch (Exception e) when (e is ConfigException || testOnly && e is IOException or UnauthorizedAccessException
            or System.Security.Cryptography.CryptographicException)
        {
            Console.Error.WriteLine($"{displayName}: {e.Message}");
            return 1;
        }
        if (testOnly)
        {
            Console.Error.WriteLine($"{displayName}: configuration file {configFile} is valid");
            return 0;
        }

        var builder = Host.CreateEmptyApplicationBuilder(new HostApplicationBuilderSettings { DisableDefaults = true });
        builder.Services.AddSystemd();
        builder.Logging.SetMinimumLevel(debug ? LogLevel.Debug : LogLevel.Information);
        builder.Logging.AddFilter("Microsoft.Extensions.Hosting", LogLevel.Warning);
        // The control plane's web host (Control/ControlPlaneHost) logs through this factory: its per-request lines are noise.
        builder.Logging.AddFilter("Microsoft.AspNetCore", LogLevel.Warning);
        builder.Logging.AddFilter("Microsoft.Hosting.Lifetime", LogLevel.Warning);
        builder.Logging.AddSimpleConsole(o =>
        {
            o.SingleLine = true;
            o.TimestampFormat = "yyyy/MM/dd HH:mm:ss.ffffff ";
        });
        builder.Services.Configure<ConsoleLoggerOptions>(o => o.LogToStandardErrorThreshold = LogLevel.Trace);
        builder.Services.Configure<ConsoleLifetimeOptions>(o => o.SuppressStatusMessages = true);
        builder.Services.AddSingleton(options);
        builder.Services.AddSingleton(link);
        // One SessionSet per process: the gateway's service runs its sessions in it, the control plane reads it.
        builder.Services.AddSingleton(sp => new SessionSet(sp.GetRequiredService<ILoggerFactory>().CreateLogger(displayName)));
        builder.Services.AddHostedService<TService>();
        if (SupervisorWatch.SupervisorPid() is int supervisor)
        {
            builder.Services.AddHostedService(sp => new SupervisorWatch(supervisor, sp.GetRequiredService<IHostApplicationLifetime>(),
                sp.GetRequiredService<ILoggerFactory>().CreateLogger(displayName)));
        }
        if (controlSocketPath is not null)
        {
            var identity = new Control.GatewayIdentity(displayName, System.Diagnostics.Stopwatch.GetTimestamp());
            builder.Services.AddHostedService(sp => new Control.ControlPlaneHost(controlSocketPath, identity, sp.GetRequiredService<SessionSet>(),
                sp.GetRequiredService<IHostApplicationLifetime>(), sp.GetRequiredService<ILoggerFactory>()));
        }
        try
        {
            using var app = builder.Build();
            // Memory a burst (a connect storm) left committed goes back to the OS once the burst is over. Safe only
            // because idle sessions hold no large movable buffer (PinnedBuffers; HeapTrimmer says why).
            var trimLog = app.Services.GetRequiredService<ILoggerFactory>().CreateLogger(displayName);
            using var trimmer = HeapTrimmer.Start(t => trimLog.LogDebug("heap trimmed: {Trim}", t));
            app.Run();
            return 0;
        }
        catch (Exception ex) when (ex is System.Net.Sockets.SocketException or IOException or UnauthorizedAccessException
            or System.Security.Cryptography.CryptographicException)
        {
            Console.Error.WriteLine($"{displayName}: {ex.Message}");
            return 1;
        }
    }
}
