namespace NatsBroker.Configuration;

// Interim command line, replaced by the full configuration module on merge.
public enum CommandLineAction { Run, ShowVersion, ShowHelp, TestConfig, Signal }

public sealed class CommandLineException(string message) : Exception(message);

public sealed class ConfigException(string message) : Exception(message);

public sealed class CommandLineResult
{
    public ServerOptions Options { get; init; } = new();
    public CommandLineAction Action { get; init; }
    public ServerOptions? Reload() => null;
}

public static class CommandLine
{
    public const string UsageText = "Usage: nats-server [options]";

    public static int SendSignal(CommandLineResult r) { _ = r; return 1; }

    public static CommandLineResult Parse(string[] args)
    {
        var o = new ServerOptions();
        var action = CommandLineAction.Run;
        for (int i = 0; i < args.Length; i++)
        {
            switch (args[i])
            {
                case "-a" or "--addr" or "--net": o.Host = args[++i]; break;
                case "-p" or "--port": o.Port = int.Parse(args[++i], System.Globalization.CultureInfo.InvariantCulture); break;
                case "--unix_socket": o.UnixSocketPath = args[++i]; break;
                case "--ports_file_dir": o.PortsFileDir = args[++i]; break;
                case "--user": o.Username = args[++i]; break;
                case "--pass": o.Password = args[++i]; break;
                case "--auth": o.Authorization = args[++i]; break;
                case "-D": o.Debug = true; break;
                case "-V": o.Trace = true; break;
                case "-DV": o.Debug = o.Trace = true; break;
                case "-v" or "--version": action = CommandLineAction.ShowVersion; break;
                case "-h" or "--help": action = CommandLineAction.ShowHelp; break;
                default: throw new CommandLineException($"flag provided but not defined: {args[i]}");
            }
        }
        return new CommandLineResult { Options = o, Action = action };
    }
}
