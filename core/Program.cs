using Microsoft.Extensions.Logging;
using NatsBroker.Configuration;
using NatsBroker.Transport.Runtime;
using NatsBroker.Hosting;

namespace NatsBroker;

public static class Program
{
    private const string InlineCompletionsVariable = "DOTNET_SYSTEM_NET_SOCKETS_INLINE_COMPLETIONS";

    public static int Main(string[] args)
    {
        // Run socket completions on the socket engine's thread instead of hopping to the thread pool: the read
        // loops never block, and the hop dominated request/reply and many-connection loads (bench A/B on this
        // 2-core VM: fan-out 1.63x, 4x4 1.28x, 10-client request/reply 1.14x, 150-requester request/reply
        // 1.13-1.26x; single-client request/reply 0.70x). Must be set before the first socket is created; an
        // operator's own setting wins.
        if (Environment.GetEnvironmentVariable(InlineCompletionsVariable) is null)
        {
            Environment.SetEnvironmentVariable(InlineCompletionsVariable, "1");
        }

        // -h, -v, -t, --signal and bad flags/config are answered here, exactly as nats-server answers them.
        // -t also runs the supervised gateways' checks of their blocks (GatewaySupervisor.Checks.cs).
        if (CommandLineHost.Handle(args, Console.Out, Console.Error, out var cli, checkGateways: GatewaySupervisor.Check) is int exitCode) return exitCode;

        var options = cli!.Options;
        if (ManagedHandover.IsNeeded(options))
        {
            Console.Error.WriteLine(ManagedHandover.Exec(args));
            return 1;
        }
        var level = options.Trace ? LogLevel.Trace : options.Debug ? LogLevel.Debug : LogLevel.Information;
        using var logProvider = new NatsLoggerProvider(level, options.Logtime, options.LogtimeUtc, options.LogFile);
        var log = logProvider.CreateLogger("nats");
        foreach (var warning in cli.ConfigWarnings) log.LogWarning("{Warning}", warning.ToString());

        // No generic host: the broker owns its signals (BrokerService), so the host's DI container, configuration
        // and console lifetime were start-up cost only (measured in ProcessLifetime's remarks).
        using var loggers = new NatsLoggerFactory(logProvider);
        using var lifetime = new ProcessLifetime();
        GatewaySupervisor.ResolveRandomClientPort(options);
        // Gateways (tls-terminator, websocket, mqtt) started as supervised children when the config asks for them.
        var gateways = GatewaySupervisor.IsNeeded(options) ? new GatewaySupervisor(options, loggers) : null;
        // Their config checks before anything binds, as nats-server validates its whole config before it listens
        // (GatewaySupervisor.Checks.cs); refused in nats-server's words, as CommandLineHost refuses the core's own.
        if (gateways?.CheckGateways() is { } refused)
        {
            Console.Error.WriteLine($"nats-server: {refused}");
            return 1;
        }
        var service = new BrokerService(options, () => cli.Reload(), loggers, lifetime);
        try
        {
            service.ReadyAfterGateways = gateways is not null;
            service.StartAsync(CancellationToken.None).GetAwaiter().GetResult();
            if (gateways is not null)
            {
                gateways.StartAsync(CancellationToken.None).GetAwaiter().GetResult();
                // Tools that start `nats-server -c file` connect as soon as the ports file exists or "Server is
                // ready" is logged: with gateways those clients reach the gateways' ports, so both wait until they accept.
                if (gateways.WaitForGatewaysAsync(TimeSpan.FromSeconds(10)).GetAwaiter().GetResult() is { } failure)
                {
                    log.LogCritical("{Error}", failure);
                    gateways.StopAsync(CancellationToken.None).GetAwaiter().GetResult();
                    service.StopAsync(CancellationToken.None).GetAwaiter().GetResult();
                    return 1;
                }
                service.AnnounceReady();
            }
        }
        catch (Exception ex) when (ex is System.Net.Sockets.SocketException or IOException or UnauthorizedAccessException or ConfigException)
        {
            // Start-up failures (port in use, unreadable file) end the process with the reason, never silently.
            log.LogCritical("{Error}", ex.Message);
            return 1;
        }
        // No warm-up session: scripting one on a throwaway server cost ~42 ms of CPU and ~3 MB per start, and
        // neither the first client's PONG nor the cold bench rows were faster with it (A/B on the 2-core VM).
        lifetime.NotifyStarted();
        // Memory a burst (a connect storm) left committed goes back to the OS once the burst is over. Safe here
        // because client read buffers are pinned (ReadBufferPool): a compaction never copies them.
        using var trimmer = HeapTrimmer.Start(t => log.LogDebug("heap trimmed: {Trim}", t));
        lifetime.WaitForStopRequest();
        gateways?.StopAsync(CancellationToken.None).GetAwaiter().GetResult();
        service.StopAsync(CancellationToken.None).GetAwaiter().GetResult();
        lifetime.NotifyStopped();
        return 0;
    }
}
