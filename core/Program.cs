using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using NatsBroker.Configuration;
using NatsBroker.Hosting;

namespace NatsBroker;

public static class Program
{
    public static int Main(string[] args)
    {
        // -h, -v, -t, --signal and bad flags/config are answered here, exactly as nats-server answers them.
        if (CommandLineHost.Handle(args, Console.Out, Console.Error, out var cli) is int exitCode) return exitCode;

        var options = cli!.Options;
        var level = options.Trace ? LogLevel.Trace : options.Debug ? LogLevel.Debug : LogLevel.Information;
        using var logProvider = new NatsLoggerProvider(level, options.Logtime, options.LogtimeUtc, options.LogFile);
        var log = logProvider.CreateLogger("nats");
        foreach (var warning in cli.ConfigWarnings) log.LogWarning("{Warning}", warning.ToString());

        var builder = Host.CreateEmptyApplicationBuilder(new HostApplicationBuilderSettings { DisableDefaults = true });
        builder.Logging.ClearProviders();
        builder.Logging.SetMinimumLevel(level);
        // A start-up failure is reported once, below, as nats-server does; not again with the host's stack trace.
        builder.Logging.AddFilter("Microsoft.Extensions.Hosting", LogLevel.None);
        builder.Logging.AddProvider(logProvider);
        builder.Services.Configure<ConsoleLifetimeOptions>(o => o.SuppressStatusMessages = true);
        builder.Services.AddSingleton(options);
        builder.Services.AddSingleton<Func<ServerOptions?>>(() => cli.Reload());
        builder.Services.AddHostedService<BrokerService>();
        try
        {
            using var host = builder.Build();
            host.Run();
            return 0;
        }
        catch (Exception ex) when (ex is System.Net.Sockets.SocketException or IOException or UnauthorizedAccessException or ConfigException)
        {
            // Start-up failures (port in use, unreadable file) end the process with the reason, never silently.
            log.LogCritical("{Error}", ex.Message);
            return 1;
        }
    }
}
