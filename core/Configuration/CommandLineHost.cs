namespace NatsBroker.Configuration;

/// <summary>
/// Glue for Program.Main: parses the command line and performs everything that is not "run the server"
/// (help, version, -t, --signal, errors), printing what nats-server prints (main.go).
/// </summary>
public static class CommandLineHost
{
    /// <summary>
    /// Returns null with <paramref name="result"/> set when the server should run; otherwise the process
    /// exit code after printing. Config warnings of a normal run are printed to stderr, as nats-server does.
    /// </summary>
    /// <param name="checkGateways">For -t: the supervised gateways' own checks of their blocks (Hosting/GatewaySupervisor.Checks.cs);
    /// returns the refusal or null.</param>
    public static int? Handle(string[] args, TextWriter stdout, TextWriter stderr, out CommandLineResult? result,
        string processName = "nats-server", Func<ServerOptions, string?>? checkGateways = null)
    {
        ArgumentNullException.ThrowIfNull(stdout);
        ArgumentNullException.ThrowIfNull(stderr);
        result = null;
        CommandLineResult r;
        try
        {
            r = CommandLine.Parse(args);
        }
        catch (CommandLineException e)
        {
            if (e.ShowUsage)
            {
                // Go's flag package: the error on stderr, then the usage on stdout.
                stderr.WriteLine(e.Message);
                stdout.WriteLine(CommandLine.UsageText);
            }
            else
                stderr.WriteLine($"nats-server: {e.Message}");
            return e.ExitCode;
        }
        catch (ConfigException e)
        {
            stderr.WriteLine($"nats-server: {e.Message}");
            return 1;
        }

        switch (r.Action)
        {
            case CommandLineAction.ShowHelp:
                stdout.WriteLine(CommandLine.UsageText);
                return 0;
            case CommandLineAction.ShowVersion:
                stdout.WriteLine(CommandLine.VersionText);
                return 0;
            case CommandLineAction.TestConfig:
                if (checkGateways?.Invoke(r.Options) is { } refused)
                {
                    stderr.WriteLine($"nats-server: {refused}");
                    return 1;
                }
                stderr.WriteLine($"nats-server: configuration file {r.ConfigFile} is valid");
                return 0;
            case CommandLineAction.Signal:
                try
                {
                    r.Signal!.Send(processName);
                    return 0;
                }
                catch (CommandLineException e)
                {
                    stderr.WriteLine($"nats-server: {e.Message}");
                    return e.ExitCode;
                }
        }
        foreach (var w in r.ConfigWarnings)
            stderr.WriteLine(w.ToString());
        result = r;
        return null;
    }
}
