namespace NatsBroker.Configuration;

/// <summary>What the process should do after parsing its command line.</summary>
public enum CommandLineAction
{
    /// <summary>Start the server with <see cref="CommandLineResult.Options"/>.</summary>
    Run,
    /// <summary>-v / --version / "version": print <see cref="CommandLine.VersionText"/>, exit 0.</summary>
    ShowVersion,
    /// <summary>-h / --help / "help": print <see cref="CommandLine.UsageText"/>, exit 0.</summary>
    ShowHelp,
    /// <summary>-t: the config file loaded without errors or warnings; print
    /// "nats-server: configuration file X is valid" to stderr and exit 0.</summary>
    TestConfig,
    /// <summary>--signal: send <see cref="CommandLineResult.Signal"/> to a running server and exit.</summary>
    Signal,
}

/// <summary>
/// A bad command line (unknown flag, bad value, unrecognized command...). Go's flag package prints the
/// message and the usage; nats-server 2.9.10 then exits 0 because its usage function calls os.Exit(0).
/// We exit with <see cref="ExitCode"/> (2, Go's flag.ExitOnError code) so scripts notice.
/// </summary>
public sealed class CommandLineException(string message, bool showUsage, int exitCode = 2) : Exception(message)
{
    /// <summary>True for flag syntax errors, after which Go prints the usage text.</summary>
    public bool ShowUsage { get; } = showUsage;
    public int ExitCode { get; } = exitCode;
}

/// <summary>The outcome of <see cref="CommandLine.Parse"/>.</summary>
public sealed class CommandLineResult
{
    private readonly IReadOnlyList<(CommandLine.Flag Flag, string Value)> _overrides;

    internal CommandLineResult(CommandLineAction action, ServerOptions options, string? configFile,
        IReadOnlyList<(CommandLine.Flag, string)> overrides, SignalRequest? signal, IReadOnlyList<ConfigError> warnings)
    {
        Action = action;
        Options = options;
        ConfigFile = configFile;
        _overrides = overrides;
        Signal = signal;
        ConfigWarnings = warnings;
    }

    public CommandLineAction Action { get; }

    /// <summary>Defaults, then the config file (-c), then the command-line flags.</summary>
    public ServerOptions Options { get; }

    /// <summary>The -c / --config path, as given.</summary>
    public string? ConfigFile { get; }

    /// <summary>For <see cref="CommandLineAction.Signal"/>.</summary>
    public SignalRequest? Signal { get; }

    /// <summary>Warnings from the config file (for Run the server should log them, as nats-server prints them).</summary>
    public IReadOnlyList<ConfigError> ConfigWarnings { get; }

    /// <summary>The flags that were given, in order, as "-name=value" (for logging).</summary>
    public IEnumerable<string> FlagOverrides => _overrides.Select(o => $"-{o.Flag.Names[0]}={o.Value}");

    /// <summary>
    /// Re-reads the config file and returns fresh options with the same command-line overrides applied
    /// (SIGHUP / --signal reload). Throws <see cref="ConfigException"/> if the file is now invalid.
    /// </summary>
    public ServerOptions Reload() => Reload(out _);

    public ServerOptions Reload(out IReadOnlyList<ConfigError> warnings) =>
        CommandLine.BuildOptions(ConfigFile, _overrides, out warnings);
}

/// <summary>
/// nats-server's command line (main.go usage, server/opts.go ConfigureOptions), parsed with Go flag package
/// rules: <c>-flag value</c>, <c>-flag=value</c>, <c>--flag value</c>, <c>--flag=value</c>; booleans take no
/// separate value but accept <c>-flag=false</c>; parsing stops at the first non-flag argument or <c>--</c>,
/// and a remaining argument must be "version" or "help". Flags override the config file.
/// </summary>
public static partial class CommandLine
{
    /// <summary>The nats-server version whose flags and config format this broker follows.</summary>
    public const string CompatibleVersion = "2.14.5";

    public static string VersionText => $"nats-server: v{CompatibleVersion}";

    internal enum Kind { Bool, String, Int }

    internal sealed record Flag(string[] Names, Kind Kind, Action<ServerOptions, string>? Apply, string? Unsupported = null);

    private static readonly Flag Help = new(["h", "help"], Kind.Bool, null);
    private static readonly Flag Version = new(["v", "version"], Kind.Bool, null);
    private static readonly Flag Config = new(["c", "config"], Kind.String, null);
    private static readonly Flag Test = new(["t"], Kind.Bool, null);
    private static readonly Flag SignalFlag = new(["sl", "signal"], Kind.String, null);
    // -DV, -VV and -DVV are applied after the others, in this order (Go's fs.Visit is lexicographic).
    private static readonly Flag DebugTrace = new(["DV"], Kind.Bool, (o, v) => o.Debug = o.Trace = Bool(v));
    private static readonly Flag DebugVerboseTrace = new(["DVV"], Kind.Bool, (o, v) => o.Debug = o.Trace = o.TraceVerbose = Bool(v));
    private static readonly Flag VerboseTrace = new(["VV"], Kind.Bool, (o, v) => o.Trace = o.TraceVerbose = Bool(v));
    // Recorded in order with the others, acted on by SettleClusterFlags once all are applied (CommandLine.Cluster.cs).
    private static readonly Flag RoutesFlag = new(["routes"], Kind.String, static (_, _) => { });
    private static readonly Flag ClusterListenFlag = new(["cluster", "cluster_listen"], Kind.String, static (_, _) => { });

    private static readonly Flag[] Flags =
    [
        Help, Version, Config, Test, SignalFlag, DebugTrace, DebugVerboseTrace, VerboseTrace,
        new(["p", "port"], Kind.Int, (o, v) => o.Port = Port(v)),
        new(["a", "addr", "net"], Kind.String, (o, v) => o.Host = v),
        new(["n", "name", "server_name"], Kind.String, (o, v) => o.ServerName = v.Length == 0 ? null : v),
        new(["client_advertise"], Kind.String, (o, v) => o.ClientAdvertise = v.Length == 0 ? null : v),
        new(["D", "debug"], Kind.Bool, (o, v) => o.Debug = Bool(v)),
        new(["V", "trace"], Kind.Bool, (o, v) => o.Trace = Bool(v)),
        new(["T", "logtime"], Kind.Bool, (o, v) => o.Logtime = Bool(v)),
        new(["user"], Kind.String, (o, v) => o.Username = v.Length == 0 ? null : v),
        new(["pass"], Kind.String, (o, v) => o.Password = v.Length == 0 ? null : v),
        new(["auth"], Kind.String, (o, v) => o.Authorization = v.Length == 0 ? null : v),
        new(["m", "http_port"], Kind.Int, (o, v) => o.HttpPort = Port(v)),
        new(["P", "pid"], Kind.String, (o, v) => o.PidFile = v.Length == 0 ? null : v),
        new(["ports_file_dir"], Kind.String, (o, v) => o.PortsFileDir = v.Length == 0 ? null : v),
        new(["l", "log"], Kind.String, (o, v) => o.LogFile = v.Length == 0 ? null : v),
        new(["log_size_limit"], Kind.Int, (o, v) => o.LogSizeLimit = Int(v)),
        new(["s", "syslog"], Kind.Bool, (o, v) => o.Syslog = Bool(v)),
        new(["max_traced_msg_len"], Kind.Int, (o, v) => o.MaxTracedMsgLen = checked((int)Int(v))),
        new(["js", "jetstream"], Kind.Bool, (o, v) => o.JetStream = Bool(v)),
        new(["sd", "store_dir"], Kind.String, (o, v) => o.StoreDir = v.Length == 0 ? null : v),
        // Our extension: a Unix domain socket listener for clients.
        new(["unix_socket"], Kind.String, (o, v) => o.UnixSocketPath = v.Length == 0 ? null : v),
        // Cluster flags (CommandLine.Cluster.cs): -cluster and -routes are settled after the others, as
        // ConfigureOptions does in its second fs.Visit.
        RoutesFlag, ClusterListenFlag,
        new(["cluster_advertise"], Kind.String, (o, v) => ClusterBlock(o).Advertise = v.Length == 0 ? null : v),
        new(["cluster_name"], Kind.String, (o, v) => ClusterBlock(o).Name = v.Length == 0 ? null : v),
        new(["no_advertise"], Kind.Bool, (o, v) => ClusterBlock(o).NoAdvertise = Bool(v)),
        new(["connect_retries"], Kind.Int, (o, v) => ClusterBlock(o).ConnectRetries = (int)Math.Clamp(Int(v), int.MinValue, int.MaxValue)),

        // nats-server flags for features this broker does not have yet: accepted by the parser (so the
        // syntax is the same), then rejected with a clear message.
        new(["r", "remote_syslog"], Kind.String, null, "remote syslog"),
        new(["ms", "https_port"], Kind.Int, null, "HTTPS monitoring"),
        new(["profile"], Kind.Int, null, "profiling"),
        new(["tls"], Kind.Bool, null, "TLS"),
        new(["tlsverify"], Kind.Bool, null, "TLS"),
        new(["tlscert"], Kind.String, null, "TLS"),
        new(["tlskey"], Kind.String, null, "TLS"),
        new(["tlscacert"], Kind.String, null, "TLS"),
        new(["help_tls"], Kind.Bool, null, "TLS"),
    ];

    // Loops rather than LINQ here and in Parse: LINQ over (Flag, string) tuples is generic code ReadyToRun cannot
    // precompile, and it was ~30 methods JIT-compiled on every start.
    private static readonly Dictionary<string, Flag> ByName = IndexByName();

    private static Dictionary<string, Flag> IndexByName()
    {
        var byName = new Dictionary<string, Flag>(StringComparer.Ordinal);
        foreach (var f in Flags)
        {
            foreach (var n in f.Names) byName[n] = f;
        }
        return byName;
    }

    /// <summary>The value of the last occurrence of <paramref name="f"/> on the command line, or null.</summary>
    private static string? LastValue(List<(Flag Flag, string Value)> given, Flag f)
    {
        for (int i = given.Count - 1; i >= 0; i--)
        {
            if (given[i].Flag == f) return given[i].Value;
        }
        return null;
    }

    /// <summary>Usage for -h, in nats-server's layout, listing the flags this broker supports.</summary>
    public static string UsageText { get; } = """

        Usage: nats-server [options]

        Server Options:
            -a, --addr, --net <host>         Bind to host address (default: 0.0.0.0)
            -p, --port <port>                Use port for clients (default: 4222)
            -n, --name
                --server_name <server_name>  Server name (default: auto)
            -P, --pid <file>                 File to store PID
            -m, --http_port <port>           Use port for http monitoring
            -c, --config <file>              Configuration file
            -t                               Test configuration and exit
            -sl,--signal <signal>[=<pid>]    Send signal to nats-server process (ldm, stop, quit, term, reopen, reload)
                                             pid> can be either a PID (e.g. 1) or the path to a PID file (e.g. /var/run/nats-server.pid)
                --client_advertise <string>  Client URL to advertise to other servers
                --ports_file_dir <dir>       Creates a ports file in the specified directory (<executable_name>_<pid>.ports).
                --unix_socket <path>         Also listen for clients on this Unix domain socket (NatsBroker extension)

        Logging Options:
            -l, --log <file>                 File to redirect log output
            -T, --logtime                    Timestamp log entries (default: true)
            -s, --syslog                     Log to syslog or windows event log
            -D, --debug                      Enable debugging output
            -V, --trace                      Trace the raw protocol
            -VV                              Verbose trace (traces system account as well)
            -DV                              Debug and trace
            -DVV                             Debug and verbose trace (traces system account as well)
                --log_size_limit <limit>     Logfile size limit (default: auto)
                --max_traced_msg_len <len>   Maximum printable length for traced messages (default: unlimited)

        Cluster Options:
                --routes <rurl-1, rurl-2>    Routes to solicit and connect
                --cluster <cluster-url>      Cluster URL for solicited routes
                --cluster_name <string>      Cluster Name, if not set one will be dynamically generated
                --no_advertise <bool>        Do not advertise known cluster information to clients
                --cluster_advertise <string> Cluster URL to advertise to other servers
                --connect_retries <number>   For implicit routes, number of connect retries
                --cluster_listen <url>       Cluster url from which members can solicit routes

        JetStream Options:
            -js, --jetstream                 Enable JetStream functionality
            -sd, --store_dir <dir>           Set the storage directory

        Authorization Options:
                --user <user>                User required for connections
                --pass <password>            Password required for connections
                --auth <token>               Authorization token required for connections

        Common Options:
            -h, --help                       Show this message
            -v, --version                    Show version

        """;

    /// <summary>
    /// Parses <paramref name="args"/> (without the program name). Throws <see cref="CommandLineException"/>
    /// for a bad command line and <see cref="ConfigException"/> when the config file is invalid (with -t,
    /// warnings count as failures too, as in nats-server).
    /// </summary>
    public static CommandLineResult Parse(string[] args)
    {
        ArgumentNullException.ThrowIfNull(args);
        var given = new List<(Flag Flag, string Value)>();
        var positional = new List<string>();
        Tokenize(args, given, positional);

        bool BoolOf(Flag f) => LastValue(given, f) is { } value && Bool(value);
        string? StringOf(Flag f) => LastValue(given, f);

        var none = Array.Empty<(Flag, string)>();
        if (BoolOf(Version))
            return new(CommandLineAction.ShowVersion, new ServerOptions(), null, none, null, []);
        if (BoolOf(Help))
            return new(CommandLineAction.ShowHelp, new ServerOptions(), null, none, null, []);
        if (positional.Count > 0)
        {
            switch (positional[0].ToLowerInvariant())
            {
                case "version":
                    return new(CommandLineAction.ShowVersion, new ServerOptions(), null, none, null, []);
                case "help":
                    return new(CommandLineAction.ShowHelp, new ServerOptions(), null, none, null, []);
                default:
                    throw new CommandLineException($"unrecognized command: \"{positional[0]}\"", showUsage: false, exitCode: 1);
            }
        }

        foreach (var (flag, value) in given)
        {
            if (flag.Unsupported is null)
                continue;
            // An explicitly empty or false value asks for nothing.
            if (value.Length == 0 || (flag.Kind == Kind.Bool && !Bool(value)))
                continue;
            throw new CommandLineException($"flag -{flag.Names[^1]}: {flag.Unsupported} is not supported by this server yet", showUsage: false, exitCode: 1);
        }

        if (StringOf(SignalFlag) is { Length: > 0 } signal)
        {
            var req = SignalRequest.Parse(signal);
            return new(CommandLineAction.Signal, new ServerOptions(), null, none, req, []);
        }

        string? configFile = StringOf(Config) is { Length: > 0 } c ? c : null;
        bool test = BoolOf(Test);
        if (test && configFile is null)
            throw new CommandLineException("must specify [-c, --config] option to check configuration file syntax", showUsage: false, exitCode: 1);

        // Flags that set options, in command-line order, then -DV, -DVV, -VV (see ConfigureOptions).
        var overrides = new List<(Flag Flag, string Value)>(given.Count);
        foreach (var g in given)
        {
            if (g.Flag.Apply is not null && g.Flag != DebugTrace && g.Flag != DebugVerboseTrace && g.Flag != VerboseTrace) overrides.Add(g);
        }
        foreach (var last in (ReadOnlySpan<Flag>)[DebugTrace, DebugVerboseTrace, VerboseTrace])
        {
            foreach (var g in given)
            {
                if (g.Flag == last) overrides.Add(g);
            }
        }

        var opts = BuildOptions(configFile, overrides, out var warnings);
        if (test && warnings.Count > 0)
            throw new ConfigException([], warnings);
        return new(test ? CommandLineAction.TestConfig : CommandLineAction.Run, opts, configFile, overrides, null, warnings);
    }

    /// <summary>Defaults, then the config file, then the flags; then nats-server's baseline adjustments.</summary>
    internal static ServerOptions BuildOptions(string? configFile, IReadOnlyList<(Flag Flag, string Value)> overrides,
        out IReadOnlyList<ConfigError> warnings)
    {
        var opts = new ServerOptions();
        warnings = configFile is null ? [] : ConfigLoader.LoadInto(configFile, opts);
        foreach (var (flag, value) in overrides)
            flag.Apply!(opts, value);
        SettleClusterFlags(opts, overrides);
        // setBaselineOptions: port 0 means the default port (-1 stays: the server picks a random port).
        if (opts.Port == 0)
            opts.Port = ServerOptions.DefaultPort;
        return opts;
    }

    /// <summary>Go flag package parsing (flag.FlagSet.parseOne).</summary>
    private static void Tokenize(string[] args, List<(Flag, string)> given, List<string> positional)
    {
        int i = 0;
        while (i < args.Length)
        {
            string arg = args[i];
            if (arg.Length < 2 || arg[0] != '-')
                break; // first non-flag argument ("-" alone included) ends the flags
            int dashes = 1;
            if (arg[1] == '-')
            {
                dashes = 2;
                if (arg.Length == 2)
                {
                    i++; // "--" terminates the flags
                    break;
                }
            }
            string name = arg[dashes..];
            if (name.Length == 0 || name[0] == '-' || name[0] == '=')
                throw new CommandLineException($"bad flag syntax: {arg}", showUsage: true);
            i++;
            string? value = null;
            int eq = name.IndexOf('=', StringComparison.Ordinal);
            if (eq >= 0)
            {
                value = name[(eq + 1)..];
                name = name[..eq];
            }
            if (!ByName.TryGetValue(name, out var flag))
                throw new CommandLineException($"flag provided but not defined: -{name}", showUsage: true);
            if (flag.Kind == Kind.Bool)
            {
                if (value is null)
                    value = "true";
                else if (!TryBool(value, out _))
                    throw new CommandLineException($"invalid boolean value \"{value}\" for -{name}: parse error", showUsage: true);
            }
            else
            {
                if (value is null)
                {
                    if (i >= args.Length)
                        throw new CommandLineException($"flag needs an argument: -{name}", showUsage: true);
                    value = args[i++];
                }
                if (flag.Kind == Kind.Int)
                {
                    var err = TryGoInt(value, out long n);
                    if (err is null && flag.Apply is not null && IsPortFlag(flag) && (n < -1 || n > 65535))
                        err = "port out of range";
                    if (err is not null)
                        throw new CommandLineException($"invalid value \"{value}\" for flag -{name}: {err}", showUsage: true);
                }
            }
            given.Add((flag, value));
        }
        for (; i < args.Length; i++)
            positional.Add(args[i]);
    }

    private static bool IsPortFlag(Flag f) => f.Names[0] is "p" or "m";

    /// <summary>strconv.ParseBool.</summary>
    private static bool TryBool(string s, out bool b)
    {
        switch (s)
        {
            case "1" or "t" or "T" or "TRUE" or "true" or "True":
                b = true;
                return true;
            case "0" or "f" or "F" or "FALSE" or "false" or "False":
                b = false;
                return true;
        }
        b = false;
        return false;
    }

    private static bool Bool(string s) => TryBool(s, out bool b) && b;

    private static long Int(string s) => TryGoInt(s, out long n) is null ? n : 0;

    private static int Port(string s) => (int)Int(s);

    /// <summary>strconv.ParseInt(s, 0, 64): optional sign, 0x/0o/0b prefixes, leading-0 octal, '_' separators.</summary>
    private static string? TryGoInt(string s, out long value)
    {
        value = 0;
        if (s.Length == 0)
            return "parse error";
        bool neg = false;
        int i = 0;
        if (s[0] is '+' or '-')
        {
            neg = s[0] == '-';
            i++;
        }
        int radix = 10;
        bool prefixed = false;
        if (s.Length - i > 1 && s[i] == '0')
        {
            char p = char.ToLowerInvariant(s[i + 1]);
            (radix, prefixed, i) = p switch
            {
                'x' => (16, true, i + 2),
                'o' => (8, true, i + 2),
                'b' => (2, true, i + 2),
                _ => (8, true, i + 1),
            };
        }
        string digits = prefixed ? s[i..].Replace("_", "", StringComparison.Ordinal) : s[i..];
        if (digits.Length == 0 && !(radix == 8 && s.Length - i == 0 && prefixed && s[^1] == '0'))
            return "parse error";
        System.Numerics.BigInteger acc = 0;
        foreach (char ch in digits)
        {
            int d = ch switch
            {
                >= '0' and <= '9' => ch - '0',
                >= 'a' and <= 'z' => ch - 'a' + 10,
                >= 'A' and <= 'Z' => ch - 'A' + 10,
                _ => 99,
            };
            if (d >= radix)
                return "parse error";
            acc = acc * radix + d;
        }
        if (neg)
            acc = -acc;
        if (acc > long.MaxValue || acc < long.MinValue)
            return "value out of range";
        value = (long)acc;
        return null;
    }
}
