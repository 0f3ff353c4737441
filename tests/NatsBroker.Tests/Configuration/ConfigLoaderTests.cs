using NatsBroker.Configuration;

namespace NatsBroker.Tests.Configuration;

public class ConfigLoaderTests
{
    private static ServerOptions Load(string text, out IReadOnlyList<ConfigError> warnings)
    {
        var opts = new ServerOptions();
        warnings = ConfigLoader.Apply(ConfigParser.Parse(text, "t.conf"), opts);
        return opts;
    }

    private static ServerOptions Load(string text) => Load(text, out _);

    private static string Fail(string text) =>
        Assert.Throws<ConfigException>(() => Load(text)).Message;

    [Fact]
    public void Defaults_when_empty()
    {
        var o = Load("");
        Assert.Equal(4222, o.Port);
        Assert.Equal("0.0.0.0", o.Host);
        Assert.Equal(1024 * 1024, o.MaxPayload);
        Assert.Equal(TimeSpan.FromMinutes(2), o.PingInterval);
        Assert.True(o.Logtime);
    }

    [Fact]
    public void Listener_and_limits()
    {
        var o = Load("""
            host: 127.0.0.1
            PORT: 4333
            server_name: "n1"
            client_advertise: "example.com:4222"
            unix_socket: "/run/nats.sock"
            max_payload: 2MB
            max_control_line: 8KB
            max_pending: 128MB
            max_conn: 100
            max_subs: 1000
            max_sub_tokens: 16
            ping_interval: "30s"
            ping_max: 5
            write_deadline: "1.5s"
            lame_duck_duration: "1m"
            lame_duck_grace_period: "5s"
            no_header_support: true
            disable_sublist_cache: yes
            server_tags: ["az:us-east-1", "ssd"]
            """);
        Assert.Equal("127.0.0.1", o.Host);
        Assert.Equal(4333, o.Port);
        Assert.Equal("n1", o.ServerName);
        Assert.Equal("example.com:4222", o.ClientAdvertise);
        Assert.Equal("/run/nats.sock", o.UnixSocketPath);
        Assert.Equal(2 * 1024 * 1024, o.MaxPayload);
        Assert.Equal(8192, o.MaxControlLine);
        Assert.Equal(128L * 1024 * 1024, o.MaxPending);
        Assert.Equal(100, o.MaxConnections);
        Assert.Equal(1000, o.MaxSubscriptions);
        Assert.Equal(16, o.MaxSubTokens);
        Assert.Equal(TimeSpan.FromSeconds(30), o.PingInterval);
        Assert.Equal(5, o.MaxPingsOut);
        Assert.Equal(TimeSpan.FromSeconds(1.5), o.WriteDeadline);
        Assert.Equal(TimeSpan.FromMinutes(1), o.LameDuckDuration);
        Assert.Equal(TimeSpan.FromSeconds(5), o.LameDuckGracePeriod);
        Assert.True(o.NoHeaderSupport);
        Assert.True(o.DisableSublistCache);
        Assert.Equal(["az:us-east-1", "ssd"], o.ServerTags);
        Assert.Equal("us-east-1", o.Tags["az"]);
        Assert.Equal("127.0.0.1", o.HttpHost); // follows host, as in nats-server
    }

    [Fact]
    public void Aliases()
    {
        var o = Load("net: 10.0.0.1\nmax_connections: 7\nmax_subscriptions: 8\nmonitor_port: 8222\nlog_file: /l\npid_file: /p\nno_sublist_cache: true");
        Assert.Equal("10.0.0.1", o.Host);
        Assert.Equal(7, o.MaxConnections);
        Assert.Equal(8, o.MaxSubscriptions);
        Assert.Equal(8222, o.HttpPort);
        Assert.Equal("/l", o.LogFile);
        Assert.Equal("/p", o.PidFile);
        Assert.True(o.DisableSublistCache);
    }

    [Fact]
    public void Listen_and_http_host_port()
    {
        var o = Load("listen: 127.0.0.1:4333\nhttp: \"localhost:8222\"");
        Assert.Equal("127.0.0.1", o.Host);
        Assert.Equal(4333, o.Port);
        Assert.Equal("localhost", o.HttpHost);
        Assert.Equal(8222, o.HttpPort);
        Assert.Equal(-1, Load("port: -1").Port);
        Assert.Equal(8223, Load("http: 8223").HttpPort);
    }

    [Fact]
    public void Logging()
    {
        var o = Load("debug: true\ntrace_verbose: true\nlogtime: false\nlogtime_utc: true\nsyslog: true\nlogfile: \"/var/log/n.log\"\nlog_size_limit: 1GB\nmax_traced_msg_len: 100");
        Assert.True(o.Debug);
        Assert.True(o.Trace);
        Assert.True(o.TraceVerbose);
        Assert.False(o.Logtime);
        Assert.True(o.LogtimeUtc);
        Assert.True(o.Syslog);
        Assert.Equal("/var/log/n.log", o.LogFile);
        Assert.Equal(1L << 30, o.LogSizeLimit);
        Assert.Equal(100, o.MaxTracedMsgLen);
    }

    [Fact]
    public void Zero_means_default_like_nats_server()
    {
        var o = Load("max_payload: 0\nmax_conn: 0\nping_max: 0\nport: 0");
        Assert.Equal(ServerOptions.DefaultMaxPayload, o.MaxPayload);
        Assert.Equal(ServerOptions.DefaultMaxConnections, o.MaxConnections);
        Assert.Equal(2, o.MaxPingsOut);
    }

    [Fact]
    public void Integer_ping_interval_is_seconds_with_a_warning()
    {
        var o = Load("ping_interval: 30", out var warnings);
        Assert.Equal(TimeSpan.FromSeconds(30), o.PingInterval);
        var w = Assert.Single(warnings);
        Assert.Equal("t.conf:1:1: invalid use of field \"ping_interval\": ping_interval should be converted to a duration", w.ToString());
    }

    [Fact]
    public void Authorization_simple()
    {
        var o = Load("authorization { user: derek, password: s3cr3t, timeout: 0.5 }");
        Assert.Equal("derek", o.Username);
        Assert.Equal("s3cr3t", o.Password);
        Assert.Equal(TimeSpan.FromSeconds(0.5), o.AuthTimeout);
        Assert.True(o.AuthRequired);
        Assert.Equal("tok", Load("authorization { token: tok, timeout: 3 }").Authorization);
        Assert.Equal(TimeSpan.FromSeconds(3), Load("authorization { token: tok, timeout: 3 }").AuthTimeout);
        Assert.Equal(TimeSpan.FromSeconds(5), Load("authorization { timeout: \"5s\" }").AuthTimeout);
    }

    [Fact]
    public void Authorization_users_and_permissions()
    {
        var o = Load("""
            authorization {
              default_permissions: { publish: "public.>", subscribe: ["public.>", "_INBOX.>"] }
              users: [
                { user: a, password: pa, permissions: {
                    publish: { allow: ["foo.>", "bar"], deny: "foo.secret" }
                    subscribe: { deny: ["x.*"] }
                    allow_responses: { max: 5, expires: "1m" }
                } }
                { user: b, password: pb }
                { user: c, permissions: { sub: "q.* workers", allow_responses: true } }
                { username: d, pass: pd, allowed_connection_types: ["standard", "WEBSOCKET"] }
              ]
            }
            no_auth_user: b
            """);
        Assert.Equal(4, o.Users.Count);
        var a = o.Users[0];
        Assert.Equal("pa", a.Password);
        Assert.Equal(["foo.>", "bar"], a.Permissions!.Publish!.Allow!);
        Assert.Equal(["foo.secret"], a.Permissions.Publish.Deny!);
        Assert.Null(a.Permissions.Subscribe!.Allow);
        Assert.Equal(["x.*"], a.Permissions.Subscribe.Deny!);
        Assert.Equal(5, a.Permissions.Response!.MaxMsgs);
        Assert.Equal(TimeSpan.FromMinutes(1), a.Permissions.Response.Expires);
        var b = o.Users[1];
        Assert.Equal(["public.>"], b.Permissions!.Publish!.Allow!); // default permissions
        var c = o.Users[2];
        Assert.Equal(["q.* workers"], c.Permissions!.Subscribe!.Allow!);
        Assert.Equal(ResponsePermission.DefaultMaxMsgs, c.Permissions.Response!.MaxMsgs);
        Assert.Empty(c.Permissions.Publish!.Allow!); // allow_responses turns off the blanket publish allow
        Assert.Equal(["STANDARD", "WEBSOCKET"], o.Users[3].AllowedConnectionTypes!);
        Assert.Equal("b", o.NoAuthUser);
    }

    [Fact]
    public void Account_JetStream_forms()
    {
        var o = Load("""
            accounts {
              A { jetstream: enabled }
              B { jetstream: true }
              C { jetstream: disabled }
              D { jetstream { max_mem: 1G, max_file: 10GB, max_streams: 10, consumers: 100, max_ack_pending: 5, max_bytes_required: true, mem_max_stream_bytes: 1M, disk_max_stream_bytes: 2M } }
              E { }
            }
            """);
        var a = o.Accounts.ToDictionary(x => x.Name);
        Assert.Equal(JetStreamAccountLimits.Dynamic, a["A"].JetStream);
        Assert.Equal(JetStreamAccountLimits.Dynamic, a["B"].JetStream);
        Assert.Null(a["C"].JetStream);
        Assert.Null(a["E"].JetStream);
        var d = a["D"].JetStream!;
        Assert.Equal(1_000_000_000L, d.MaxMemory);
        Assert.Equal(10L << 30, d.MaxStore);
        Assert.Equal(10, d.MaxStreams);
        Assert.Equal(100, d.MaxConsumers);
        Assert.Equal(5, d.MaxAckPending);
        Assert.True(d.MaxBytesRequired);
        Assert.Equal(1_000_000L, d.MemoryMaxStreamBytes);
        Assert.Equal(2_000_000L, d.StoreMaxStreamBytes);
        Assert.Contains("Expected 'enabled' or 'disabled'", Fail("accounts { A { jetstream: maybe } }"));
        Assert.Contains("unknown field \"max_things\"", Fail("accounts { A { jetstream { max_things: 1 } } }"));
    }

    [Fact]
    public void JetStream_forms()
    {
        Assert.True(Load("jetstream: true").JetStream);
        Assert.True(Load("jetstream: enabled").JetStream);
        Assert.False(Load("jetstream: disabled").JetStream);
        var o = Load("jetstream { store_dir: \"/data/js\", max_memory_store: 1GB, max_file_store: \"10G\", store_engine: \"lsm\" }");
        Assert.True(o.JetStream);
        Assert.Equal("/data/js", o.StoreDir);
        Assert.Equal(1L << 30, o.JetStreamMaxMemory);
        Assert.Equal(10L << 30, o.JetStreamMaxStore);
        Assert.Equal("lsm", o.StorageEngine);
        Assert.False(Load("jetstream { enabled: false }").JetStream);
        Assert.Equal("/x", Load("store_dir: /x\njetstream: true").StoreDir);
    }

    [Theory]
    [InlineData("foo: 1", "t.conf:1:1: unknown field \"foo\"")]
    [InlineData("port: 1\n  bar: 2", "t.conf:2:3: unknown field \"bar\"")]
    [InlineData("X = 1\nport: 4222", "t.conf:1:1: unknown field \"X\"")]
    [InlineData("authorization {\n  user: a\n  foo: 1\n}", "t.conf:3:3: unknown field \"foo\"")]
    [InlineData("jetstream { foo: 1 }", "t.conf:1:13: unknown field \"foo\"")]
    [InlineData("port: \"abc\"", "t.conf:1:1: invalid value for \"port\": expected an integer, got string \"abc\"")]
    [InlineData("port: 70000", "t.conf:1:1: port value is too big")]
    [InlineData("debug: 1", "t.conf:1:1: invalid value for \"debug\": expected a boolean (true/false, yes/no, on/off), got integer 1")]
    [InlineData("max_payload: -1", "t.conf:1:1: max_payload value can not be negative")]
    [InlineData("max_payload: 2GB", "t.conf:1:1: max_payload value is too big")]
    [InlineData("max_pending: -5", "t.conf:1:1: max_pending value can not be negative")]
    [InlineData("max_sub_tokens: 300", "t.conf:1:1: max_sub_tokens value is too big")]
    [InlineData("max_sub_tokens: 0", "t.conf:1:1: max_sub_tokens value can not be negative")]
    [InlineData("ping_interval: \"2x\"", "t.conf:1:1: error parsing ping_interval: time: unknown unit \"x\" in duration \"2x\"")]
    [InlineData("write_deadline: \"10\"", "t.conf:1:1: error parsing write_deadline: time: missing unit in duration \"10\"")]
    [InlineData("lame_duck_duration: \"1s\"", "t.conf:1:1: invalid lame_duck_duration of 1s, minimum is 30 seconds")]
    [InlineData("lame_duck_duration: 30", "t.conf:1:1: invalid value for \"lame_duck_duration\": expected a duration string such as \"10s\" or \"2m\", got integer 30")]
    [InlineData("lame_duck_grace_period: \"-1s\"", "t.conf:1:1: invalid lame_duck_grace_period, needs to be positive")]
    [InlineData("jetstream: 5", "t.conf:1:1: Expected map, bool or string to define JetStream, got integer 5")]
    [InlineData("jetstream { max_mem: \"1X\" }", "t.conf:1:13: max_mem_store sizes defined as strings must end in K, M, G, T")]
    [InlineData("store_dir: /a\njetstream { store_dir: /b }", "t.conf:2:13: Duplicate 'store_dir' configuration")]
    [InlineData("authorization { user: a, token: x }", "t.conf:1:1: Cannot have a user/pass and token")]
    [InlineData("authorization { token: x, users: [ {user: a} ] }", "t.conf:1:1: Can not have a token and a users array")]
    [InlineData("authorization { users: [ {user: a}, {user: a} ] }", "t.conf:1:1: Duplicate user \"a\" detected")]
    [InlineData("authorization { users: [ {password: b} ] }", "t.conf:1:26: User entry requires a user")]
    [InlineData("authorization { timeout: true }", "t.conf:1:17: error parsing authorization config, 'timeout' wrong type: boolean true")]
    [InlineData("authorization { users: [ {user: a, permissions: { pubx: \"foo\" } } ] }", "t.conf:1:51: Unknown field \"pubx\" parsing permissions")]
    [InlineData("authorization { users: [ {user: a, permissions: { publish: { allowx: \"f\" } } } ] }", "t.conf:1:62: Unknown field name \"allowx\" parsing subject permissions, only 'allow' or 'deny' are permitted")]
    [InlineData("authorization { users: [ {user: a, permissions: { publish: \"foo..bar\" } } ] }", "t.conf:1:51: subject \"foo..bar\" is not a valid subject")]
    [InlineData("authorization { users: [ {user: a, permissions: { publish: 5 } } ] }", "t.conf:1:51: Expected subject permissions to be a subject, or array of subjects, got integer 5")]
    [InlineData("authorization { users: [ {user: a, permissions: { allow_responses: { expires: 5 } } } ] }", "t.conf:1:70: error parsing expires, not a duration string")]
    [InlineData("server_name: \"a b\"", "t.conf:1:1: server name cannot contain spaces")]
    [InlineData("listen: \"nonsense\"", "t.conf:1:1: could not parse address string \"nonsense\"")]
    public void Bad_values_report_position_and_reason(string text, string expected)
    {
        Assert.Equal(expected, Fail(text));
    }

    [Theory]
    [InlineData("leafnodes { port: 7422 }")]
    [InlineData("gateway { name: x }")]
    [InlineData("ocsp { mode: always }")]
    [InlineData("trusted_keys: x")]
    public void Known_but_unsupported_keys_fail_clearly(string text)
    {
        string key = text.Split(' ', ':')[0];
        Assert.Equal($"t.conf:1:1: \"{key}\" is not supported by this server yet", Fail(text));
    }

    [Fact]
    public void Unsupported_jetstream_and_user_keys()
    {
        Assert.Equal("t.conf:1:13: \"cipher\" in jetstream is not supported by this server yet", Fail("jetstream { cipher: aes }"));
        Assert.Contains("Not a valid public nkey for a user", Fail("authorization { users: [ { nkey: UABC } ] }"), StringComparison.Ordinal);
    }

    [Fact]
    public void Jetstream_domain_and_sync_interval()
    {
        var o = Load("jetstream { domain: hub, sync_interval: \"30s\", max_file_store: 1G, store_dir: \"/tmp/x\" }");
        Assert.Equal("hub", o.JetStreamDomain);
        Assert.Equal(TimeSpan.FromSeconds(30), o.JetStreamSyncInterval);
        Assert.False(o.JetStreamSyncAlways);
        Assert.Equal(1_000_000_000L, o.JetStreamMaxStore); // "1G" is decimal in nats-server config, "1GB" binary
        Assert.True(Load("jetstream { sync_interval: always }").JetStreamSyncAlways);
        Assert.Contains("sync_interval", Fail("jetstream { sync_interval: \"soon\" }"), StringComparison.Ordinal);
    }

    [Fact]
    public void Jetstream_batch_limits()
    {
        // nats-server 2.12+ opts.go parseJetStreamLimitsBatch.
        var o = Load("jetstream { limits { max_ha_assets: 3, batch { max_inflight_per_stream: 7, max_inflight_total: 70, max_msgs: 100, timeout: \"2s\" } } }");
        Assert.Equal(7, o.JetStreamBatchMaxInflightPerStream);
        Assert.Equal(70, o.JetStreamBatchMaxInflightTotal);
        Assert.Equal(100, o.JetStreamBatchMaxMsgs);
        Assert.Equal(TimeSpan.FromSeconds(2), o.JetStreamBatchTimeout);
        var d = Load("jetstream { limits { batch { max_msgs: 0, timeout: \"0s\" } } }");
        Assert.Equal(0, d.JetStreamBatchMaxMsgs); // 0: nats-server's default (1,000) applies
        Assert.Equal(TimeSpan.FromSeconds(10), d.JetStreamBatchTimeout);
        Assert.Equal("t.conf:1:22: Expected a map to define batch limits, got integer 5", Fail("jetstream { limits { batch: 5 } }"));
        Assert.Equal("t.conf:1:13: Expected a map to define JetStreamLimits, got boolean true", Fail("jetstream { limits: true }"));
        Assert.Equal("t.conf:1:30: unknown field \"max_batch_size\"", Fail("jetstream { limits { batch { max_batch_size: 5 } } }"));
        Assert.Equal("t.conf:1:30: invalid value for \"max_msgs\": expected an integer, got string \"x\"", Fail("jetstream { limits { batch { max_msgs: x } } }"));
        Assert.Equal("t.conf:1:30: error parsing timeout: time: unknown unit \"x\" in duration \"5x\"", Fail("jetstream { limits { batch { timeout: \"5x\" } } }"));
        Assert.Equal("t.conf:1:22: \"max_request_batch\" in jetstream limits is not supported by this server yet", Fail("jetstream { limits { max_request_batch: 5 } }"));
    }

    [Fact]
    public void All_errors_are_collected()
    {
        var e = Assert.Throws<ConfigException>(() => Load("foo: 1\nport: x\nbar: 2"));
        Assert.Equal(3, e.Errors.Count);
        Assert.Equal("t.conf:1:1: unknown field \"foo\"\nt.conf:2:1: invalid value for \"port\": expected an integer, got string \"x\"\nt.conf:3:1: unknown field \"bar\"", e.Message);
    }

    [Fact]
    public void Variables_used_only_as_values_are_not_unknown_fields()
    {
        var o = Load("PW = \"secret\"\nauthorization {\n  U = bob\n  user: $U\n  password: $PW\n}");
        Assert.Equal("bob", o.Username);
        Assert.Equal("secret", o.Password);
    }

    [Fact]
    public void Load_from_file_with_include()
    {
        using var d = new TempDir();
        d.Write("auth.conf", "authorization { user: a, password: b }\n");
        string main = d.Write("main.conf", "port: 4333\ninclude ./auth.conf\n");
        var o = ConfigLoader.Load(main);
        Assert.Equal(4333, o.Port);
        Assert.Equal("a", o.Username);
        Assert.Equal(main, o.ConfigFile);
    }

    [Theory]
    [InlineData("2m", 120_000)]
    [InlineData("10s", 10_000)]
    [InlineData("1h30m", 5_400_000)]
    [InlineData("500ms", 500)]
    [InlineData("1.5s", 1500)]
    [InlineData("-1m", -60_000)]
    [InlineData("0", 0)]
    [InlineData("1m0.5s", 60_500)]
    public void Go_durations(string text, long ms)
    {
        Assert.True(GoDuration.TryParse(text, out var d, out _));
        Assert.Equal(TimeSpan.FromMilliseconds(ms), d);
    }

    [Theory]
    [InlineData("", "time: invalid duration \"\"")]
    [InlineData("10", "time: missing unit in duration \"10\"")]
    [InlineData("2x", "time: unknown unit \"x\" in duration \"2x\"")]
    [InlineData("abc", "time: invalid duration \"abc\"")]
    public void Bad_go_durations(string text, string error)
    {
        Assert.False(GoDuration.TryParse(text, out _, out var e));
        Assert.Equal(error, e);
    }

    [Theory]
    [InlineData(1000, "1s")]
    [InlineData(90_000, "1m30s")]
    [InlineData(5_400_000, "1h30m0s")]
    [InlineData(500, "500ms")]
    [InlineData(1500, "1.5s")]
    public void Go_duration_format(long ms, string expected)
    {
        Assert.Equal(expected, GoDuration.Format(TimeSpan.FromMilliseconds(ms)));
    }
}
