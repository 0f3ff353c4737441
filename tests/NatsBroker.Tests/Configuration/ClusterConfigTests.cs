using NatsBroker.Configuration;

namespace NatsBroker.Tests.Configuration;

/// <summary>
/// The <c>cluster {}</c> block (OptionMapper.Cluster.cs), the cluster flags (CommandLine.Cluster.cs), the Go URL rules
/// they share (GoUrl.cs) and the reload checks (ClusterReload.cs), against nats-server 2.14.5's opts.go, reload.go and
/// the texts it prints (ClusterConfigOracleTests runs the same refusals through the real server).
/// </summary>
public class ClusterConfigTests
{
    private static ServerOptions Load(string text, out IReadOnlyList<ConfigError> warnings)
    {
        var opts = new ServerOptions();
        warnings = ConfigLoader.Apply(ConfigParser.Parse(text, "t.conf"), opts);
        return opts;
    }

    private static ServerOptions Load(string text) => Load(text, out _);

    private static ClusterOptions Cluster(string text) => Load(text).Cluster ?? throw new InvalidOperationException("no cluster");

    private static string Fail(string text) => Assert.Throws<ConfigException>(() => Load(text)).Message;

    private static ServerOptions Opts(params string[] args)
    {
        var r = CommandLine.Parse(args);
        Assert.Equal(CommandLineAction.Run, r.Action);
        return r.Options;
    }

    private static CommandLineException Bad(params string[] args) =>
        Assert.Throws<CommandLineException>(() => CommandLine.Parse(args));

    // ---- config keys ----

    [Fact]
    public void No_cluster_block_means_no_cluster()
    {
        Assert.Null(Load("port: 4222").Cluster);
    }

    [Fact]
    public void Block_without_a_port_is_not_a_cluster()
    {
        // setBaselineOptions and Server.Start: routing starts only with a cluster port.
        var o = Load("cluster { name: c1, routes: [\"nats://127.0.0.1:6223\"] }");
        Assert.Null(o.Cluster);
        Assert.Equal("c1", o.ClusterBlock!.Name);
        Assert.Null(Load("cluster { port: 0 }").Cluster);
    }

    [Fact]
    public void Defaults_of_a_configured_cluster()
    {
        var c = Cluster("cluster { port: 6222 }");
        Assert.Null(c.Name);
        Assert.Equal("0.0.0.0", c.Host);
        Assert.Equal(6222, c.Port);
        Assert.Null(c.Advertise);
        Assert.False(c.NoAdvertise);
        Assert.Empty(c.Routes);
        Assert.Equal(0, c.ConnectRetries);
        Assert.False(c.ConnectBackoff);
        Assert.Null(c.User);
        Assert.Null(c.Password);
        Assert.Equal(TimeSpan.FromSeconds(2), c.AuthTimeout);
        Assert.Equal(3, c.PoolSize);
        Assert.Equal("accept", c.Compression);
        Assert.Null(c.PingInterval);
        Assert.Null(c.MaxPingsOut);
        Assert.Null(c.WriteDeadline);
        Assert.Null(c.WriteTimeout);
    }

    [Fact]
    public void Every_stage_one_key()
    {
        var c = Cluster("""
            cluster {
              name: "east"
              host: 127.0.0.2
              port: 6300
              advertise: "east.example.com:6300"
              no_advertise: true
              connect_retries: 5
              connect_backoff: true
              authorization { user: ruser, password: "s3cret", timeout: 1.5 }
              routes: ["nats-route://ruser:s3cret@127.0.0.1:6301", "nats://[::1]:6302"]
              pool_size: -1
              compression: off
              ping_interval: "20s"
              ping_max: 4
              write_deadline: "3s"
              write_timeout: close
            }
            """);
        Assert.Equal("east", c.Name);
        Assert.Equal("127.0.0.2", c.Host);
        Assert.Equal(6300, c.Port);
        Assert.Equal("east.example.com:6300", c.Advertise);
        Assert.True(c.NoAdvertise);
        Assert.Equal(5, c.ConnectRetries);
        Assert.True(c.ConnectBackoff);
        Assert.Equal("ruser", c.User);
        Assert.Equal("s3cret", c.Password);
        Assert.Equal(TimeSpan.FromSeconds(1.5), c.AuthTimeout);
        Assert.Equal(2, c.Routes.Count);
        Assert.Equal("127.0.0.1", c.Routes[0].Host);
        Assert.Equal(6301, c.Routes[0].Port);
        Assert.Equal(("ruser", "s3cret"), GoUrl.Credentials(c.Routes[0]));
        Assert.Equal(6302, c.Routes[1].Port);
        Assert.Equal(-1, c.PoolSize);
        Assert.Equal("off", c.Compression);
        Assert.Equal(TimeSpan.FromSeconds(20), c.PingInterval);
        Assert.Equal(4, c.MaxPingsOut);
        Assert.Equal(TimeSpan.FromSeconds(3), c.WriteDeadline);
        Assert.Equal("close", c.WriteTimeout);
    }

    [Fact]
    public void Aliases_listen_net_and_cluster_advertise()
    {
        var c = Cluster("cluster { listen: \"127.0.0.3:6400\", cluster_advertise: \"h:1\" }");
        Assert.Equal(("127.0.0.3", 6400), (c.Host, c.Port));
        Assert.Equal("h:1", c.Advertise);
        Assert.Equal(-1, Cluster("cluster { listen: -1 }").Port);
        Assert.Equal("10.0.0.1", Cluster("cluster { net: 10.0.0.1, port: 1 }").Host);
        Assert.Equal("0.0.0.0", Cluster("cluster { listen: 6222 }").Host);
    }

    [Fact]
    public void Route_credentials_are_unescaped_as_go_does()
    {
        var c = Cluster("cluster { port: 1, routes: [\"nats-route://us%40er:p%3Ass@h:2\"] }");
        Assert.Equal(("us@er", "p:ss"), GoUrl.Credentials(c.Routes[0]));
        Assert.Equal("us%40er:p%3Ass", c.Routes[0].UserInfo);
    }

    [Fact]
    public void Duplicate_route_is_dropped_with_nats_servers_warning()
    {
        var o = Load("cluster { port: 1, routes: [\"nats://h:1\", \"nats://h:1\"] }", out var warnings);
        Assert.Single(o.Cluster!.Routes);
        var w = Assert.Single(warnings);
        Assert.Equal("invalid use of field \"nats://h:1\": Duplicate route entry detected", w.Message);
    }

    [Theory]
    [InlineData("cluster { name: \"a b\", port: 1 }", "t.conf:1:11: cluster name cannot contain spaces")]
    [InlineData("cluster { port: 1, authorization { users: [ {user: a, password: b} ] } }", "t.conf:1:20: Cluster authorization does not allow multiple users")]
    [InlineData("cluster { port: 1, authorization { token: abc } }", "t.conf:1:20: Cluster authorization does not support tokens")]
    [InlineData("cluster { port: 1, authorization { auth_callout { issuer: x } } }", "t.conf:1:20: Cluster authorization does not support callouts")]
    [InlineData("cluster { port: 1, foo: 1 }", "t.conf:1:20: unknown field \"foo\"")]
    [InlineData("cluster { port: 1, authorization { bar: 1 } }", "t.conf:1:36: unknown field \"bar\"")]
    [InlineData("cluster { port: 1, routes: [\"::bad\"] }", "t.conf:1:29: error parsing route url [\"::bad\"]")]
    [InlineData("cluster { port: 1, permissions: { import: \"foo\", allow_responses: true } }", "t.conf:1:20: Cluster permissions do not support dynamic responses")]
    [InlineData("cluster { port: 1, compression: bogus }", "t.conf:1:20: unsupported compression mode \"bogus\"")]
    [InlineData("cluster { port: 1, compression: s2_uncompressed }", "t.conf:1:20: unsupported compression mode \"s2_uncompressed\"")]
    [InlineData("cluster { port: 1, compression: { mode: \"x\" } }", "t.conf:1:20: unsupported compression mode \"x\"")]
    [InlineData("cluster { port: 1, compression: { mode: accept, rtt_thresholds: [\"bad\"] } }", "t.conf:1:49: time: invalid duration \"bad\"")]
    [InlineData("cluster { port: 1, compression: 5 }", "t.conf:1:20: field \"compression\" should be a boolean or a structure, got integer 5")]
    [InlineData("cluster { port: 1, write_timeout: never }", "t.conf:1:20: write_timeout must be 'default', 'close' or 'retry'")]
    [InlineData("cluster { port: 1, advertise: \"a:b:c\" }", "t.conf:1:20: Error setting route INFO with Cluster.Advertise value of a:b:c, err=address a:b:c: too many colons in address")]
    [InlineData("cluster { port: 1, advertise: \"h:x\" }", "t.conf:1:20: Error setting route INFO with Cluster.Advertise value of h:x, err=strconv.Atoi: parsing \"x\": invalid syntax")]
    [InlineData("cluster { port: 1, ping_interval: \"2x\" }", "t.conf:1:20: error parsing ping_interval: time: unknown unit \"x\" in duration \"2x\"")]
    public void Refusals_in_nats_servers_words(string text, string expected)
    {
        Assert.Equal(expected, Fail(text));
    }

    [Theory]
    [InlineData("cluster { port: 1, tls { cert_file: x } }", "missing 'key_file' in TLS configuration")]
    [InlineData("cluster { port: 1, tls { ca_file: x } }", "cluster tls requires 'cert_file' and 'key_file'")]
    [InlineData("cluster { port: 1, accounts: [A] }", "\"accounts\" in cluster (pinned accounts) is not supported by this server yet")]
    [InlineData("cluster { port: 1, compression: s2_fast }", "compression mode \"s2_fast\" is not supported by this server yet")]
    [InlineData("cluster { port: 1, compression: on }", "compression mode \"s2_fast\" is not supported by this server yet")]
    [InlineData("cluster { port: 1, compression: true }", "compression mode \"s2_fast\" is not supported by this server yet")]
    [InlineData("cluster { port: 1, compression: auto }", "compression mode \"s2_auto\" is not supported by this server yet")]
    [InlineData("cluster { port: 1, compression: { mode: s2_best, rtt_thresholds: [\"10ms\"] } }", "compression mode \"s2_best\" is not supported by this server yet")]
    [InlineData("cluster { port: 1, routes: [\"localhost:6222\"] }", "route url \"localhost:6222\" has no host:port to connect to")]
    [InlineData("cluster { port: 1, routes: [\"nats://h\"] }", "route url \"nats://h\" has no host:port to connect to")]
    [InlineData("cluster { port: 1, routes: \"nats://h:1\" }", "expected an array of route URLs")]
    [InlineData("cluster: 5", "invalid value for \"cluster\": expected a map, got integer 5")]
    public void What_stage_one_does_not_build_is_refused_clearly(string text, string expected)
    {
        Assert.Contains(expected, Fail(text), StringComparison.Ordinal);
    }

    [Fact]
    public void Permissions_map_import_to_publish_and_export_to_subscribe()
    {
        var c = Cluster("cluster { port: 1, permissions: { import: [\"in.>\"], export: { allow: [\"out.>\"], deny: [\"out.secret\"] } } }");
        Assert.Equal(["in.>"], c.Permissions!.Publish!.Allow);
        Assert.Equal(["out.>"], c.Permissions.Subscribe!.Allow);
        Assert.Equal(["out.secret"], c.Permissions.Subscribe.Deny);
    }

    [Fact]
    public void Permissions_in_cluster_authorization_are_deprecated_and_yield_to_the_blocks_own()
    {
        var o = Load("cluster { port: 1, permissions: { import: \"a\" }, authorization { user: u, password: p, permissions: { import: \"b\" } } }", out var warnings);
        Assert.Equal(["a"], o.Cluster!.Permissions!.Publish!.Allow);
        Assert.Contains(warnings, w => w.Message.Contains("setting \"permissions\" within cluster authorization block is deprecated", StringComparison.Ordinal));
        var only = Cluster("cluster { port: 1, authorization { user: u, password: p, permissions: { export: \"x\" } } }");
        Assert.Equal(["x"], only.Permissions!.Subscribe!.Allow);
    }

    [Theory]
    [InlineData("off", "off")]
    [InlineData("disabled", "off")]
    [InlineData("false", "off")]
    [InlineData("Accept", "accept")]
    [InlineData("\"not supported\"", "not supported")]
    [InlineData("not_supported", "not supported")]
    [InlineData("{ rtt_thresholds: [\"1ms\"] }", "accept")]
    [InlineData("{ mode: \"off\" }", "off")]
    public void Compression_modes_without_s2_are_normalized(string value, string expected)
    {
        Assert.Equal(expected, Cluster($"cluster {{ port: 1, compression: {value} }}").Compression);
    }

    [Fact]
    public void Compression_false_is_off()
    {
        Assert.Equal("off", Cluster("cluster { port: 1, compression: false }").Compression);
    }

    [Fact]
    public void Pool_size_other_than_minus_one_is_kept_with_a_warning()
    {
        var o = Load("cluster { port: 1, pool_size: 5 }", out var warnings);
        Assert.Equal(5, o.Cluster!.PoolSize);
        Assert.Contains("route pools are not built yet", Assert.Single(warnings).Message, StringComparison.Ordinal);
        Load("cluster { port: 1, pool_size: -1 }", out warnings);
        Assert.Empty(warnings);
    }

    [Fact]
    public void Long_ping_interval_warns_as_nats_server()
    {
        var o = Load("cluster { port: 1, ping_interval: \"40s\" }", out var warnings);
        Assert.Equal(TimeSpan.FromSeconds(40), o.Cluster!.PingInterval);
        Assert.Equal("t.conf:1:20: Cluster 'ping_interval' will reset to 30s which is the max for routes", Assert.Single(warnings).ToString());
    }

    [Fact]
    public void Integer_durations_are_seconds_with_a_warning()
    {
        var o = Load("cluster { port: 1, write_deadline: 4 }", out var warnings);
        Assert.Equal(TimeSpan.FromSeconds(4), o.Cluster!.WriteDeadline);
        Assert.Equal("invalid use of field \"write_deadline\": write_deadline should be converted to a duration", Assert.Single(warnings).Message);
    }

    [Fact]
    public void Zero_overrides_mean_the_servers_values()
    {
        var c = Cluster("cluster { port: 1, ping_interval: \"0s\", ping_max: 0, write_deadline: \"0s\", authorization { timeout: 0 } }");
        Assert.Null(c.PingInterval);
        Assert.Null(c.MaxPingsOut);
        Assert.Null(c.WriteDeadline);
        Assert.Equal(TimeSpan.FromSeconds(2), c.AuthTimeout);
    }

    [Fact]
    public void Unused_variable_in_block_is_not_unknown()
    {
        Assert.Equal(7, Cluster("cluster { P = 7, port: $P }").Port);
    }

    // ---- flags ----

    [Fact]
    public void Cluster_flag_sets_the_listener()
    {
        var c = Opts("-cluster", "nats://127.0.0.1:6222").Cluster!;
        Assert.Equal(("127.0.0.1", 6222), (c.Host, c.Port));
        c = Opts("--cluster_listen=nats://:6223").Cluster!;
        Assert.Equal(("0.0.0.0", 6223), (c.Host, c.Port));
        Assert.Equal(-1, Opts("-cluster", "nats://127.0.0.1:-1").Cluster!.Port);
        c = Opts("-cluster", "nats://[::1]:-1").Cluster!;
        Assert.Equal(("::1", -1), (c.Host, c.Port));
    }

    [Fact]
    public void Cluster_flag_credentials()
    {
        var c = Opts("-cluster", "nats://ru:rp@127.0.0.1:6222").Cluster!;
        Assert.Equal(("ru", "rp"), (c.User, c.Password));
        Assert.Equal("", Opts("-cluster", "nats://ru:@127.0.0.1:6222").Cluster!.Password);
        Assert.Equal("expected cluster password to be set", Bad("-cluster", "nats://ru@127.0.0.1:6222").Message);
    }

    [Theory]
    [InlineData("parse \"127.0.0.1:6222\": first path segment in URL cannot contain colon", "-cluster", "127.0.0.1:6222")]
    [InlineData("missing port in address", "-cluster", "localhost:6222")]
    [InlineData("address 127.0.0.1: missing port in address", "-cluster", "nats://127.0.0.1")]
    [InlineData("parse \"nats://127.0.0.1:abc\": invalid port \":abc\" after host", "-cluster", "nats://127.0.0.1:abc")]
    [InlineData("parse \"nats://a b:6222\": invalid character \" \" in host name", "-cluster", "nats://a b:6222")]
    [InlineData("parse \"::\": missing protocol scheme", "-cluster", "::")]
    [InlineData("EOF", "-cluster", "nats://127.0.0.1:")]
    [InlineData("solicited routes require cluster capabilities, e.g. --cluster", "-routes", "nats://127.0.0.1:6223")]
    [InlineData("cluster name cannot contain spaces", "-cluster", "nats://127.0.0.1:6222", "-cluster_name", "a b")]
    [InlineData("Error setting route INFO with Cluster.Advertise value of a:b:c, err=address a:b:c: too many colons in address", "-cluster", "nats://127.0.0.1:6222", "-cluster_advertise", "a:b:c")]
    [InlineData("error parsing route url [\"::bad\"]", "-cluster", "nats://127.0.0.1:6222", "-routes", "::bad")]
    public void Bad_cluster_flags_in_nats_servers_words(string message, params string[] args)
    {
        var e = Bad(args);
        Assert.Equal(message, e.Message);
        Assert.Equal(1, e.ExitCode);
    }

    [Fact]
    public void Other_cluster_flags()
    {
        var c = Opts("-cluster", "nats://127.0.0.1:6222", "-cluster_name", "west", "-cluster_advertise", "w:1",
            "-no_advertise", "-connect_retries", "7", "-routes", " nats://127.0.0.1:6223 ,nats-route://u:p@127.0.0.1:6224").Cluster!;
        Assert.Equal("west", c.Name);
        Assert.Equal("w:1", c.Advertise);
        Assert.True(c.NoAdvertise);
        Assert.Equal(7, c.ConnectRetries);
        Assert.Equal(new[] { 6223, 6224 }, c.Routes.Select(r => r.Port));
        Assert.Equal(("u", "p"), GoUrl.Credentials(c.Routes[1]));
    }

    [Fact]
    public void Flags_override_the_file()
    {
        using var d = new TempDir();
        string conf = d.Write("c.conf", """
            cluster {
              name: filename
              port: 6222
              advertise: "f:1"
              no_advertise: true
              connect_retries: 2
              authorization { user: fu, password: fp }
              routes: ["nats://127.0.0.1:7001", "nats://127.0.0.1:7002"]
            }
            """);
        var c = Opts("-c", conf, "-cluster", "nats://127.0.0.1:-1", "-cluster_name", "flagname", "-cluster_advertise", "g:2",
            "-no_advertise=false", "-connect_retries", "9", "-routes", "nats://127.0.0.1:7003").Cluster!;
        Assert.Equal(("127.0.0.1", -1), (c.Host, c.Port));
        Assert.Equal("flagname", c.Name);
        Assert.Equal("g:2", c.Advertise);
        Assert.False(c.NoAdvertise);
        Assert.Equal(9, c.ConnectRetries);
        // overrideCluster: no user in -cluster clears the file's route auth.
        Assert.Null(c.User);
        Assert.Null(c.Password);
        Assert.Equal(new[] { 7003 }, c.Routes.Select(r => r.Port));

        // -routes needs no -cluster when the file has the listener; an empty one clears the file's routes.
        Assert.Empty(Opts("-c", conf, "-routes", "").Cluster!.Routes);
        Assert.Equal(new[] { 7004 }, Opts("-c", conf, "-routes", "nats://127.0.0.1:7004").Cluster!.Routes.Select(r => r.Port));
        // Without -cluster the file's auth stays.
        Assert.Equal("fu", Opts("-c", conf).Cluster!.User);
    }

    [Fact]
    public void Cluster_flag_gives_a_listener_to_a_file_block_without_one()
    {
        using var d = new TempDir();
        string conf = d.Write("c.conf", "cluster { name: n, routes: [\"nats://127.0.0.1:7001\"] }\n");
        Assert.Null(Opts("-c", conf).Cluster);
        var c = Opts("-c", conf, "-cluster", "nats://127.0.0.1:6222").Cluster!;
        Assert.Equal("n", c.Name);
        Assert.Equal(new[] { 7001 }, c.Routes.Select(r => r.Port));
    }

    [Fact]
    public void Empty_cluster_flag_turns_clustering_off()
    {
        using var d = new TempDir();
        string conf = d.Write("c.conf", "cluster { port: 6222 }\n");
        Assert.NotNull(Opts("-c", conf).Cluster);
        Assert.Null(Opts("-c", conf, "-cluster", "").Cluster);
    }

    [Fact]
    public void Reload_replays_the_cluster_flags()
    {
        using var d = new TempDir();
        string conf = d.Write("c.conf", "cluster { routes: [\"nats://127.0.0.1:7001\"] }\n");
        var r = CommandLine.Parse(["-c", conf, "-cluster", "nats://127.0.0.1:6222"]);
        File.WriteAllText(conf, "cluster { routes: [\"nats://127.0.0.1:7002\"] }\n");
        var next = r.Reload();
        Assert.Equal(6222, next.Cluster!.Port);
        Assert.Equal(new[] { 7002 }, next.Cluster.Routes.Select(u => u.Port));
    }

    [Fact]
    public void Usage_lists_the_cluster_flags()
    {
        Assert.Contains("--routes <rurl-1, rurl-2>    Routes to solicit and connect", CommandLine.UsageText, StringComparison.Ordinal);
        Assert.Contains("--cluster_listen <url>", CommandLine.UsageText, StringComparison.Ordinal);
    }

    // ---- reload ----

    private static ClusterOptions At(string host, int port, string? advertise = null) => new() { Host = host, Port = port, Advertise = advertise };

    [Fact]
    public void Reload_keeps_the_listener_where_it_is()
    {
        Assert.Null(ClusterReload.Validate(null, null));
        Assert.Null(ClusterReload.Validate(At("0.0.0.0", 6222), At("0.0.0.0", 6222)));
        Assert.Equal("config reload not supported for cluster host: old=0.0.0.0, new=127.0.0.1",
            ClusterReload.Validate(At("0.0.0.0", 6222), At("127.0.0.1", 6222)));
        Assert.Equal("config reload not supported for cluster port: old=6222, new=6223",
            ClusterReload.Validate(At("0.0.0.0", 6222), At("0.0.0.0", 6223)));
        // Turning clustering on or off: nats-server's options then have host "" and port 0.
        Assert.Equal("config reload not supported for cluster host: old=, new=0.0.0.0", ClusterReload.Validate(null, At("0.0.0.0", 6222)));
        Assert.Equal("config reload not supported for cluster host: old=0.0.0.0, new=", ClusterReload.Validate(At("0.0.0.0", 6222), null));
        // -1 stands for the port the running listener has.
        Assert.Null(ClusterReload.Validate(At("0.0.0.0", 41234), At("0.0.0.0", -1)));
        Assert.Null(ClusterReload.Validate(At("0.0.0.0", -1), At("0.0.0.0", -1)));
    }

    [Fact]
    public void Reload_checks_the_advertise_value()
    {
        Assert.Null(ClusterReload.Validate(At("h", 1), At("h", 1, "example.com")));
        Assert.Equal("invalid Cluster.Advertise value of a:b:c, err=address a:b:c: too many colons in address",
            ClusterReload.Validate(At("h", 1), At("h", 1, "a:b:c")));
    }

    [Fact]
    public void Routes_are_diffed_by_every_part_of_the_url()
    {
        Uri U(string s) => new(s);
        var old = new[] { U("nats://127.0.0.1:7001"), U("nats-route://u:p@127.0.0.1:7002"), U("nats://127.0.0.1:7003") };
        var @new = new[] { U("NATS://127.0.0.1:7001"), U("nats-route://u:q@127.0.0.1:7002"), U("nats://127.0.0.1:7003/"), U("nats://127.0.0.1:7004") };
        var (removed, added) = ClusterReload.DiffRoutes(old, @new);
        // The scheme's case does not count; a password or a trailing '/' does (reflect.DeepEqual of url.URL).
        Assert.Equal(new[] { "nats-route://u:p@127.0.0.1:7002", "nats://127.0.0.1:7003" }, removed.Select(u => u.OriginalString));
        Assert.Equal(new[] { "nats-route://u:q@127.0.0.1:7002", "nats://127.0.0.1:7003/", "nats://127.0.0.1:7004" }, added.Select(u => u.OriginalString));
        var (none, alsoNone) = ClusterReload.DiffRoutes(old, old);
        Assert.Empty(none);
        Assert.Empty(alsoNone);
    }

    // ---- Go URL rules ----

    [Theory]
    [InlineData("nats://h:1", "nats", "h:1", null, null)]
    [InlineData("Nats-Route://a:b@h:2/x", "nats-route", "h:2", "a", "b")]
    [InlineData("nats://a@[::1]:3", "nats", "[::1]:3", "a", null)]
    [InlineData("localhost:6222", "localhost", "", null, null)]
    public void Go_url_parts(string raw, string scheme, string host, string? user, string? password)
    {
        var u = GoUrl.Parse(raw, out string? err);
        Assert.Null(err);
        Assert.Equal((scheme, host, user, password), (u!.Scheme, u.Host, u.User, u.Password));
    }

    [Theory]
    [InlineData("nats://h:1/%zz", "parse \"nats://h:1/%zz\": invalid URL escape \"%zz\"")]
    [InlineData("nats://a%20b:1", "parse \"nats://a%20b:1\": invalid URL escape \"%20\"")]
    [InlineData("nats://a b@h:1", "parse \"nats://a b@h:1\": net/url: invalid userinfo")]
    [InlineData("nats://[::1:1", "parse \"nats://[::1:1\": missing ']' in host")]
    [InlineData("nats://h:1\n", "parse \"nats://h:1\\n\": net/url: invalid control character in URL")]
    public void Go_url_refusals(string raw, string expected)
    {
        Assert.Null(GoUrl.Parse(raw, out string? err));
        Assert.Equal(expected, err);
    }

    [Theory]
    [InlineData("h:1", null)]
    [InlineData("[::1]:1", null)]
    [InlineData("h", "address h: missing port in address")]
    [InlineData("", "missing port in address")]
    [InlineData("a:b:c", "address a:b:c: too many colons in address")]
    [InlineData("[::1", "address [::1: missing ']' in address")]
    [InlineData("[::1]x:1", "address [::1]x:1: missing port in address")]
    [InlineData("a]:1", "address a]:1: unexpected ']' in address")]
    public void Go_split_host_port(string hostport, string? expected)
    {
        Assert.Equal(expected, GoUrl.SplitHostPort(hostport, out _, out _));
    }
}
