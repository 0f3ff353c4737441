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
        CommandLineResult cli;
        try
        {
            cli = CommandLine.Parse(args);
        }
        catch (ConfigException ex)
        {
            Console.Error.WriteLine($"nats-server: {ex.Message}");
            return 1;
        }
        catch (CommandLineException ex)
        {
            Console.Error.WriteLine(ex.Message);
            Console.Error.WriteLine(CommandLine.UsageText);
            return 2;
        }

        switch (cli.Action)
        {
            case CommandLineAction.ShowVersion:
                Console.WriteLine($"nats-server: v{Server.NatsServer.CompatibleVersion} ({Server.NatsServer.ImplementationName} {Server.NatsServer.ImplementationVersion})");
                return 0;
            case CommandLineAction.ShowHelp:
                Console.WriteLine(CommandLine.UsageText);
                return 0;
            case CommandLineAction.TestConfig:
                Console.WriteLine($"nats-server: configuration file {cli.Options.ConfigFile} test is successful");
                return 0;
            case CommandLineAction.Signal:
                return CommandLine.SendSignal(cli);
        }

        var options = cli.Options;
        var level = options.Trace ? LogLevel.Trace : options.Debug ? LogLevel.Debug : LogLevel.Information;
        using var logProvider = new NatsLoggerProvider(level, options.Logtime, options.LogtimeUtc, options.LogFile);
        var builder = Host.CreateEmptyApplicationBuilder(new HostApplicationBuilderSettings { DisableDefaults = true });
        builder.Logging.ClearProviders();
        builder.Logging.SetMinimumLevel(level);
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
            logProvider.CreateLogger("nats").LogCritical("{Error}", ex.Message);
            return 1;
        }
    }
}
