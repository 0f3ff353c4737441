using NatsBroker.Configuration;

namespace NatsBroker.Tests.Configuration;

public class CommandLineTests
{
    private static ServerOptions Opts(params string[] args)
    {
        var r = CommandLine.Parse(args);
        Assert.Equal(CommandLineAction.Run, r.Action);
        return r.Options;
    }

    private static CommandLineException Bad(params string[] args) =>
        Assert.Throws<CommandLineException>(() => CommandLine.Parse(args));

    [Fact]
    public void No_args_runs_with_defaults()
    {
        var o = Opts();
        Assert.Equal(4222, o.Port);
        Assert.Equal("0.0.0.0", o.Host);
        Assert.True(o.Logtime);
    }

    [Theory]
    [InlineData("-p", "4333")]
    [InlineData("--p", "4333")]
    [InlineData("-port", "4333")]
    [InlineData("--port", "4333")]
    [InlineData("-p=4333")]
    [InlineData("--port=4333")]
    [InlineData("-p", "0x10ED")] // Go's ParseInt(s, 0, 64) accepts base prefixes
    public void Flag_value_forms(params string[] args)
    {
        Assert.Equal(4333, Opts(args).Port);
    }

    [Fact]
    public void Random_ports_stay_minus_one()
    {
        var o = Opts("-p", "-1", "-m", "-1");
        Assert.Equal(-1, o.Port);
        Assert.Equal(-1, o.HttpPort);
        Assert.Equal(-1, Opts("-p=-1").Port);
        Assert.Equal(4222, Opts("-p", "0").Port); // 0 means the default, as in nats-server
    }

    [Fact]
    public void Server_options()
    {
        var o = Opts("-a", "127.0.0.1", "-n", "srv", "--client_advertise", "ex:4222", "-P", "/tmp/p.pid",
            "--ports_file_dir", "/tmp", "-m", "8222", "--unix_socket", "/run/nats.sock", "--user", "u", "--pass", "pw");
        Assert.Equal("127.0.0.1", o.Host);
        Assert.Equal("127.0.0.1", o.HttpHost);
        Assert.Equal("srv", o.ServerName);
        Assert.Equal("ex:4222", o.ClientAdvertise);
        Assert.Equal("/tmp/p.pid", o.PidFile);
        Assert.Equal("/tmp", o.PortsFileDir);
        Assert.Equal(8222, o.HttpPort);
        Assert.Equal("/run/nats.sock", o.UnixSocketPath);
        Assert.Equal("u", o.Username);
        Assert.Equal("pw", o.Password);
        Assert.Equal("tok", Opts("--auth", "tok").Authorization);
        Assert.Equal("x", Opts("--server_name=x").ServerName);
        Assert.Equal("h", Opts("--net", "h").Host);
        Assert.Equal("h", Opts("--addr=h").Host);
    }

    [Fact]
    public void Logging_flags()
    {
        var o = Opts("-l", "/tmp/n.log", "-D", "-s", "-T=false", "--log_size_limit", "1024", "--max_traced_msg_len", "50");
        Assert.Equal("/tmp/n.log", o.LogFile);
        Assert.True(o.Debug);
        Assert.False(o.Trace);
        Assert.True(o.Syslog);
        Assert.False(o.Logtime);
        Assert.Equal(1024, o.LogSizeLimit);
        Assert.Equal(50, o.MaxTracedMsgLen);
        Assert.True(Opts("--trace").Trace);
        Assert.False(Opts("--logtime=0").Logtime);
    }

    [Theory]
    [InlineData("-DV", true, true, false)]
    [InlineData("-VV", false, true, true)]
    [InlineData("-DVV", true, true, true)]
    [InlineData("-V", false, true, false)]
    [InlineData("-D", true, false, false)]
    public void Debug_trace_combos(string flag, bool debug, bool trace, bool verbose)
    {
        var o = Opts(flag);
        Assert.Equal(debug, o.Debug);
        Assert.Equal(trace, o.Trace);
        Assert.Equal(verbose, o.TraceVerbose);
    }

    [Fact]
    public void DV_false_turns_off_debug_and_trace_even_after_D()
    {
        var o = Opts("-DV=false", "-D");
        Assert.False(o.Debug); // -DV is applied after the plain flags, as Go's fs.Visit does
        Assert.False(o.Trace);
    }

    [Fact]
    public void JetStream_flags()
    {
        var o = Opts("-js", "-sd", "/data");
        Assert.True(o.JetStream);
        Assert.Equal("/data", o.StoreDir);
        Assert.True(Opts("--jetstream").JetStream);
        Assert.Equal("/d", Opts("--store_dir=/d").StoreDir);
    }

    [Theory]
    [InlineData("-v")]
    [InlineData("--version")]
    [InlineData("version")]
    [InlineData("-p", "1", "version")]
    public void Version(params string[] args)
    {
        Assert.Equal(CommandLineAction.ShowVersion, CommandLine.Parse(args).Action);
    }

    [Theory]
    [InlineData("-h")]
    [InlineData("--help")]
    [InlineData("help")]
    public void Help(params string[] args)
    {
        Assert.Equal(CommandLineAction.ShowHelp, CommandLine.Parse(args).Action);
        Assert.Contains("Usage: nats-server [options]", CommandLine.UsageText, StringComparison.Ordinal);
        Assert.Contains("--unix_socket <path>", CommandLine.UsageText, StringComparison.Ordinal);
    }

    [Fact]
    public void Unknown_flag_matches_go_message()
    {
        var e = Bad("-x");
        Assert.Equal("flag provided but not defined: -x", e.Message);
        Assert.True(e.ShowUsage);
        Assert.NotEqual(0, e.ExitCode);
        Assert.Equal("flag provided but not defined: -bogus", Bad("--bogus=1").Message);
    }

    [Theory]
    [InlineData("invalid value \"abc\" for flag -p: parse error", "-p", "abc")]
    [InlineData("invalid value \"99999999999999999999\" for flag -p: value out of range", "-p", "99999999999999999999")]
    [InlineData("invalid value \"70000\" for flag -port: port out of range", "-port", "70000")]
    [InlineData("flag needs an argument: -p", "-p")]
    [InlineData("flag needs an argument: -c", "-t", "-c")]
    [InlineData("bad flag syntax: ---p", "---p", "1")]
    [InlineData("invalid boolean value \"maybe\" for -D: parse error", "-D=maybe")]
    [InlineData("unrecognized command: \"true\"", "-D", "true")]
    [InlineData("unrecognized command: \"foo\"", "foo")]
    [InlineData("unrecognized command: \"-p\"", "--", "-p", "1")]
    [InlineData("must specify [-c, --config] option to check configuration file syntax", "-t")]
    [InlineData("invalid signal parameters: [2]", "--signal", "stop=1=2")]
    [InlineData("unknown signal \"bogus\"", "-sl", "bogus")]
    public void Bad_command_lines(string message, params string[] args)
    {
        Assert.Equal(message, Bad(args).Message);
    }

    [Theory]
    [InlineData("-r", "udp://localhost:514")]
    [InlineData("--tls")]
    [InlineData("-ms", "8443")]
    [InlineData("--profile", "6060")]
    public void Unsupported_flags_are_parsed_then_rejected(params string[] args)
    {
        Assert.Contains("is not supported by this server yet", Bad(args).Message, StringComparison.Ordinal);
    }

    [Fact]
    public void Unsupported_flag_with_empty_or_false_value_is_harmless()
    {
        Assert.Equal(CommandLineAction.Run, CommandLine.Parse(["--tls=false", "-r", ""]).Action);
    }

    [Fact]
    public void Signal_with_pid_and_pid_file()
    {
        var r = CommandLine.Parse(["--signal", "reload=1234"]);
        Assert.Equal(CommandLineAction.Signal, r.Action);
        Assert.Equal("reload", r.Signal!.Command);
        Assert.Equal("1234", r.Signal.Pid);
        Assert.Equal(1, SignalRequest.SignalNumber("reload")); // SIGHUP

        using var d = new TempDir();
        string pidFile = d.Write("n.pid", "4321");
        var r2 = CommandLine.Parse(["-sl=ldm=" + pidFile]);
        Assert.Equal("ldm", r2.Signal!.Command);
        Assert.Equal("4321", r2.Signal.Pid);
        Assert.Null(CommandLine.Parse(["-sl", "quit"]).Signal!.Pid);
    }

    [Fact]
    public void Signal_invalid_pid_fails_like_nats_server()
    {
        var r = CommandLine.Parse(["--signal", "stop=notapid"]);
        var e = Assert.Throws<CommandLineException>(() => r.Signal!.Send("nats-server"));
        Assert.Equal("invalid pid: notapid", e.Message);
    }

    [Fact]
    public void Flags_override_config_file_and_reload_keeps_them()
    {
        using var d = new TempDir();
        string conf = d.Write("n.conf", "port: 5000\nhost: 127.0.0.1\ndebug: false\nlogtime: false\nmax_payload: 2MB\n");
        var r = CommandLine.Parse(["-c", conf, "-p", "6000", "-D"]);
        Assert.Equal(CommandLineAction.Run, r.Action);
        Assert.Equal(conf, r.ConfigFile);
        Assert.Equal(6000, r.Options.Port);        // flag wins
        Assert.True(r.Options.Debug);              // flag wins
        Assert.Equal("127.0.0.1", r.Options.Host); // from file
        Assert.False(r.Options.Logtime);           // file value kept: -T was not given
        Assert.Equal(2 * 1024 * 1024, r.Options.MaxPayload);

        File.WriteAllText(conf, "port: 5001\nhost: 10.0.0.1\nmax_payload: 4MB\n");
        var fresh = r.Reload();
        Assert.Equal(6000, fresh.Port);
        Assert.True(fresh.Debug);
        Assert.Equal("10.0.0.1", fresh.Host);
        Assert.Equal(4 * 1024 * 1024, fresh.MaxPayload);
        Assert.True(fresh.Logtime);
        Assert.NotSame(r.Options, fresh);

        File.WriteAllText(conf, "port: 5001\nfoo: 1\n");
        Assert.Throws<ConfigException>(() => r.Reload());
    }

    [Fact]
    public void Test_config_action()
    {
        using var d = new TempDir();
        string good = d.Write("good.conf", "port: 4222\n");
        Assert.Equal(CommandLineAction.TestConfig, CommandLine.Parse(["-t", "-c", good]).Action);
        string bad = d.Write("bad.conf", "port: 4222\nfoo: 1\n");
        var e = Assert.Throws<ConfigException>(() => CommandLine.Parse(["-t", "-c", bad]));
        Assert.Equal($"{bad}:2:1: unknown field \"foo\"", e.Message);
        // Warnings fail -t (nats-server), but only get reported for a normal run.
        string warn = d.Write("warn.conf", "ping_interval: 30\n");
        Assert.Throws<ConfigException>(() => CommandLine.Parse(["-t", "-c", warn]));
        var run = CommandLine.Parse(["-c", warn]);
        Assert.Single(run.ConfigWarnings);
        Assert.Equal(TimeSpan.FromSeconds(30), run.Options.PingInterval);
    }

    [Fact]
    public void Missing_config_file()
    {
        var e = Assert.Throws<ConfigException>(() => CommandLine.Parse(["-c", "/nonexistent.conf"]));
        Assert.Equal("open /nonexistent.conf: no such file or directory", e.Message);
    }
}

public class CommandLineHostTests
{
    private static (int? Code, string Out, string Err) Run(params string[] args)
    {
        using var o = new StringWriter();
        using var e = new StringWriter();
        int? code = CommandLineHost.Handle(args, o, e, out _);
        return (code, o.ToString(), e.ToString());
    }

    [Fact]
    public void Prints_like_nats_server()
    {
        var v = Run("-v");
        Assert.Equal(0, v.Code);
        Assert.Equal($"nats-server: v{CommandLine.CompatibleVersion}\n", v.Out.Replace("\r", "", StringComparison.Ordinal));

        var bad = Run("-x");
        Assert.Equal(2, bad.Code);
        Assert.StartsWith("flag provided but not defined: -x", bad.Err, StringComparison.Ordinal);
        Assert.Contains("Usage: nats-server [options]", bad.Out, StringComparison.Ordinal);

        var t = Run("-t");
        Assert.Equal(1, t.Code);
        Assert.StartsWith("nats-server: must specify [-c, --config]", t.Err, StringComparison.Ordinal);

        Assert.Null(Run("-p", "4333").Code);
    }

    [Fact]
    public void Test_config_reports_valid_file()
    {
        using var d = new TempDir();
        string f = d.Write("ok.conf", "port: 4222\n");
        var r = Run("-t", "-c", f);
        Assert.Equal(0, r.Code);
        Assert.Equal($"nats-server: configuration file {f} is valid", r.Err.Trim());
    }
}
