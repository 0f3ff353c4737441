using System.Text.Json;
using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Protocol;

public sealed class InfoAndConnectTests(ITestOutputHelper output, ServerPool pool) : ProtocolTestBase(output, pool)
{
    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Info_has_the_fields_clients_rely_on(ServerKind kind)
    {
        var s = await SharedAsync(kind);
        await using var c = await RawClient.ConnectAsync(s);
        var raw = await c.ReadLineAsync();
        Output.WriteLine(raw);
        Assert.NotNull(raw);
        Assert.StartsWith("INFO {", raw, StringComparison.Ordinal);
        var info = JsonDocument.Parse(raw![5..]).RootElement;

        Assert.False(string.IsNullOrEmpty(info.GetProperty("server_id").GetString()));
        Assert.False(string.IsNullOrEmpty(info.GetProperty("server_name").GetString()));
        Assert.Matches(@"^\d+\.\d+\.\d+", info.GetProperty("version").GetString());
        Assert.Equal(1, info.GetProperty("proto").GetInt32());
        Assert.Equal("127.0.0.1", info.GetProperty("host").GetString());
        Assert.Equal(s.Port, info.GetProperty("port").GetInt32());
        Assert.True(info.GetProperty("headers").GetBoolean());
        Assert.Equal(1048576, info.GetProperty("max_payload").GetInt64());
        Assert.True(info.GetProperty("client_id").GetUInt64() > 0);
        Assert.Equal("127.0.0.1", info.GetProperty("client_ip").GetString());
        Assert.False(info.TryGetProperty("auth_required", out _), "no auth configured: auth_required must be absent");
    }

    /// <summary>
    /// The INFO a client reads, against nats-server 2.14.5's: the same keys in the same order (with and without
    /// JetStream), version 2.14.5 (clients gate 2.11-2.14 features on it, e.g. nats.js 3.x's Features), api_lvl 4 and an
    /// x25519 xkey. Only ours adds <c>implementation</c>; only Go has <c>git_commit</c>.
    /// </summary>
    [SkippableTheory]
    [InlineData("")]
    [InlineData("jetstream: enabled\n")]
    public async Task Info_has_nats_server_2_14_keys_and_version(string config)
    {
        var oracle = Prerequisites.RequireOracle214(Output);
        var dir = Directory.CreateTempSubdirectory("info214-");
        try
        {
            var cfg = config.Length == 0 ? "" : config + $"jetstream {{ store_dir: \"{dir.FullName}/%KIND%\" }}\n";
            var keys = new Dictionary<string, string>();
            foreach (var (kind, binary) in new[] { (ServerKind.Ours, (string?)null), (ServerKind.Go, oracle) })
            {
                await using var s = await ServerProcess.StartAsync(kind, new ServerStartOptions { Config = cfg.Replace("%KIND%", kind.ToString(), StringComparison.Ordinal), GoBinary = binary }, Output);
                await using var c = await RawClient.ConnectAsync(s);
                var info = await c.ReadInfoAsync();
                Output.WriteLine($"{kind}: {info.GetRawText()}");
                Assert.Equal("2.14.5", info.GetProperty("version").GetString());
                Assert.Equal(4, info.GetProperty("api_lvl").GetInt32());
                Assert.Matches("^X[A-Z2-7]{55}$", info.GetProperty("xkey").GetString());
                keys[kind.ToString()] = string.Join(",", info.EnumerateObject().Select(p => p.Name).Where(n => n is not ("implementation" or "git_commit")));
            }
            Assert.Equal(keys["Go"], keys["Ours"]);
        }
        finally
        {
            dir.Delete(recursive: true);
        }
    }

    /// <summary>
    /// Go's encoding/json reads invalid UTF-8 in a string as U+FFFD, one per bad byte: nats-server accepts the CONNECT
    /// and /connz shows the repaired name. Ours closed the connection (System.Text.Json refuses such text), and the
    /// WebSocket gateway dropped such clients with "Cannot transcode invalid UTF-8".
    /// </summary>
    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Connect_with_invalid_utf8_in_a_string_is_accepted_with_replacement_characters(ServerKind kind)
    {
        await using var s = await ServerProcess.StartAsync(kind, new ServerStartOptions { Monitoring = true }, Output);
        await using var c = await RawClient.ConnectAsync(s);
        await c.ReadInfoAsync();
        // 0xFF is never valid; 0xE2 0x82 is a truncated 3-byte sequence (Go: two U+FFFD, one per byte).
        await c.SendBytesAsync(new byte[][] { "CONNECT {\"verbose\":false,\"name\":\"a"u8.ToArray(), [0xFF], "b"u8.ToArray(), [0xE2, 0x82], "c\"}\r\nPING\r\n"u8.ToArray() }
            .SelectMany(b => b).ToArray());
        Assert.Equal("PONG", await c.ReadLineAsync());
        using var http = new HttpClient();
        var connz = JsonDocument.Parse(await http.GetStringAsync(new Uri($"http://127.0.0.1:{s.MonitorPort}/connz")));
        var names = connz.RootElement.GetProperty("connections").EnumerateArray().Select(x => x.TryGetProperty("name", out var n) ? n.GetString() : null).ToList();
        Assert.Contains("a\uFFFDb\uFFFD\uFFFDc", names);
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Client_ids_are_distinct_and_increasing(ServerKind kind)
    {
        var s = await SharedAsync(kind);
        await using var a = await RawClient.ConnectAsync(s);
        var ia = await a.ReadInfoAsync();
        await using var b = await RawClient.ConnectAsync(s);
        var ib = await b.ReadInfoAsync();
        Assert.True(ib.GetProperty("client_id").GetUInt64() > ia.GetProperty("client_id").GetUInt64());
        Assert.Equal(ia.GetProperty("server_id").GetString(), ib.GetProperty("server_id").GetString());
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Info_announces_auth_required_and_limits_from_config(ServerKind kind)
    {
        var s = await SharedAsync(kind, "authorization { user: u, password: p }\nmax_payload: 2048\n");
        await using var c = await RawClient.ConnectAsync(s);
        var info = await c.ReadInfoAsync();
        Assert.True(info.GetProperty("auth_required").GetBoolean());
        Assert.Equal(2048, info.GetProperty("max_payload").GetInt64());
    }

    [SkippableTheory]
    [MemberData(nameof(ConnectVariants))]
    public async Task Connect_variants_are_accepted(ServerKind kind, string connect, string expectedBeforePong)
    {
        var s = await SharedAsync(kind);
        await using var c = await Raw(s, connect);
        var lines = await c.PingAsync();
        Assert.Equal(expectedBeforePong, string.Join("|", lines));
    }

    public static TheoryData<ServerKind, string, string> ConnectVariants()
    {
        var d = new TheoryData<ServerKind, string, string>();
        foreach (var k in new[] { ServerKind.Ours, ServerKind.Go })
        {
            // CONNECT {} means verbose (and pedantic) true: nats-server's defaults.
            d.Add(k, "{}", "+OK");
            d.Add(k, """{"verbose":false}""", "");
            d.Add(k, """{"verbose":true}""", "+OK");
            d.Add(k, """{"verbose":false,"pedantic":true,"echo":true,"headers":true,"no_responders":true}""", "");
            d.Add(k, """{"verbose":false,"lang":"node","version":"2.29.3","name":"n1","protocol":1,"tls_required":false}""", "");
            d.Add(k, """{"verbose":false,"protocol":0}""", "");
            d.Add(k, """{"verbose":false,"unknown_field":{"nested":[1,2,3]},"another":"x"}""", "");
            d.Add(k, """  {"verbose":false}  """, "");
        }

        return d;
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Ping_before_connect_is_answered_without_auth(ServerKind kind)
    {
        var s = await SharedAsync(kind);
        await using var c = await RawClient.ConnectAsync(s);
        await c.ReadInfoAsync();
        await c.SendAsync("PING\r\n");
        await c.ExpectLineAsync("PONG");
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Pub_before_connect_uses_default_verbose(ServerKind kind)
    {
        var s = await SharedAsync(kind);
        await using var c = await RawClient.ConnectAsync(s);
        await c.ReadInfoAsync();
        await c.SendAsync("PUB foo 2\r\nhi\r\nPING\r\n");
        await c.ExpectLineAsync("+OK");
        await c.ExpectLineAsync("PONG");
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Second_connect_changes_options(ServerKind kind)
    {
        var s = await SharedAsync(kind);
        await using var c = await Raw(s, """{"verbose":true}""");
        await c.ExpectLineAsync("+OK");
        await c.SendLineAsync("""CONNECT {"verbose":false}""");
        Assert.Empty(await c.PingAsync());
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Invalid_client_protocol_is_rejected_and_closes(ServerKind kind)
    {
        var s = await SharedAsync(kind);
        await using var c = await Raw(s, """{"verbose":false,"protocol":2}""");
        await c.ExpectErrAsync("invalid client protocol");
        await c.ExpectClosedAsync();
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Malformed_connect_json_closes_without_error_line(ServerKind kind)
    {
        var s = await SharedAsync(kind);
        await using var c = await Raw(s);
        await c.SendAsync("CONNECT {bad json\r\n");
        Assert.Empty(await c.ExpectClosedAsync());
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task No_responders_without_headers_is_rejected_and_closes(ServerKind kind)
    {
        var s = await SharedAsync(kind);
        await using var c = await Raw(s, """{"verbose":false,"no_responders":true}""");
        await c.ExpectErrAsync("no responders requires headers support");
        await c.ExpectClosedAsync();
    }
}
