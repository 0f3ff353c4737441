using System.Text.Json;
using System.Text.RegularExpressions;
using NatsBroker.Configuration;

namespace NatsBroker.Tests.Monitoring;

public sealed partial class MonitoringEndpointTests
{
    private const string Traffic = "SUB foo 1\r\nPUB foo 2\r\nhi\r\n";

    [GeneratedRegex(@"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?Z$")]
    private static partial Regex GoTime();

    [GeneratedRegex(@"^(\d+y)?(\d+d)?(\d+h)?(\d+m)?\d+s$")]
    private static partial Regex GoUptime();

    private static string[] Keys(JsonElement e) => [.. e.EnumerateObject().Select(p => p.Name)];

    [Fact]
    public async Task Varz_ReportsCountersAndNatsFormats()
    {
        await using var broker = await MonitoredBroker.StartAsync();
        await using var a = await RawClient.ConnectAsync(broker.ClientPort, "a");
        await using var b = await RawClient.ConnectAsync(broker.ClientPort, "b");
        await a.SendAndFlushAsync(Traffic);
        await b.SendAndFlushAsync(Traffic);

        var v = await broker.GetJsonAsync("/varz");
        Assert.Equal(broker.Server.ServerId, v.GetProperty("server_id").GetString());
        Assert.Equal(1, v.GetProperty("proto").GetInt32());
        Assert.Equal("127.0.0.1", v.GetProperty("host").GetString());
        Assert.Equal(broker.ClientPort, v.GetProperty("port").GetInt32());
        Assert.Equal(2, v.GetProperty("connections").GetInt32());
        Assert.Equal(2, v.GetProperty("total_connections").GetInt64());
        Assert.Equal(2, v.GetProperty("in_msgs").GetInt64());
        Assert.Equal(4, v.GetProperty("in_bytes").GetInt64());
        // a's PUB reaches a only (b has not subscribed yet); b's reaches both.
        Assert.Equal(3, v.GetProperty("out_msgs").GetInt64());
        // 2 clients + the $SYS.REQ.USER.INFO service every account has (nats-server 2.10 imports it into each account).
        Assert.Equal(3, v.GetProperty("subscriptions").GetInt64());
        Assert.Equal(120_000_000_000L, v.GetProperty("ping_interval").GetInt64());
        Assert.Equal(10_000_000_000L, v.GetProperty("write_deadline").GetInt64());
        Assert.Equal(2.0, v.GetProperty("auth_timeout").GetDouble());
        Assert.Equal(1_048_576, v.GetProperty("max_payload").GetInt32());
        Assert.Equal(65_536, v.GetProperty("max_connections").GetInt32());
        Assert.Equal(-1, v.GetProperty("http_port").GetInt32()); // the configured value, as nats-server reports it
        Assert.Matches(GoTime(), v.GetProperty("start").GetString());
        Assert.Matches(GoTime(), v.GetProperty("now").GetString());
        Assert.Matches(GoUptime(), v.GetProperty("uptime").GetString());
        Assert.True(v.GetProperty("mem").GetInt64() > 0);
        Assert.Equal(Environment.ProcessorCount, v.GetProperty("cores").GetInt32());
        Assert.Equal(1, v.GetProperty("http_req_stats").GetProperty("/varz").GetInt64());
        Assert.Empty(Keys(v.GetProperty("cluster")));
        Assert.Empty(Keys(v.GetProperty("jetstream")));
        Assert.Equal("$SYS", v.GetProperty("system_account").GetString());
        Assert.False(v.TryGetProperty("auth_required", out _));

        var v2 = await broker.GetJsonAsync("/varz");
        Assert.Equal(2, v2.GetProperty("http_req_stats").GetProperty("/varz").GetInt64());
    }

    [Fact]
    public async Task Varz_JetStreamEnabled_ShowsConfig()
    {
        await using var broker = await MonitoredBroker.StartAsync(o =>
        {
            o.JetStream = true;
            o.StoreDir = "/tmp/js-monitor-test";
            o.JetStreamMaxMemory = 1024;
            o.JetStreamMaxStore = 2048;
        });
        var js = (await broker.GetJsonAsync("/varz")).GetProperty("jetstream");
        Assert.Equal(1024, js.GetProperty("config").GetProperty("max_memory").GetInt64());
        Assert.Equal(2048, js.GetProperty("config").GetProperty("max_storage").GetInt64());
        Assert.Equal("/tmp/js-monitor-test/jetstream", js.GetProperty("config").GetProperty("store_dir").GetString());
        Assert.Equal(0, js.GetProperty("stats").GetProperty("api").GetProperty("total").GetInt64());

        var jsz = await broker.GetJsonAsync("/jsz");
        Assert.False(jsz.TryGetProperty("disabled", out _));
        Assert.Equal(2048, jsz.GetProperty("config").GetProperty("max_storage").GetInt64());
    }

    [Fact]
    public async Task Connz_ListsOpenConnectionsWithNatsFields()
    {
        await using var broker = await MonitoredBroker.StartAsync();
        await using var a = await RawClient.ConnectAsync(broker.ClientPort, "a");
        await a.SendAndFlushAsync(Traffic);

        var c = await broker.GetJsonAsync("/connz");
        Assert.Equal(["server_id", "now", "num_connections", "total", "offset", "limit", "connections"], Keys(c));
        Assert.Equal(1, c.GetProperty("num_connections").GetInt32());
        Assert.Equal(1, c.GetProperty("total").GetInt32());
        Assert.Equal(0, c.GetProperty("offset").GetInt32());
        Assert.Equal(1024, c.GetProperty("limit").GetInt32());
        var conn = c.GetProperty("connections")[0];
        Assert.Equal(
            ["cid", "kind", "type", "ip", "port", "start", "last_activity", "rtt", "uptime", "idle", "pending_bytes", "in_msgs",
             "out_msgs", "in_bytes", "out_bytes", "subscriptions", "name", "lang", "version"],
            Keys(conn));
        Assert.Equal("Client", conn.GetProperty("kind").GetString());
        Assert.Equal("nats", conn.GetProperty("type").GetString());
        Assert.Equal("127.0.0.1", conn.GetProperty("ip").GetString());
        Assert.True(conn.GetProperty("port").GetInt32() > 0);
        Assert.Equal("a", conn.GetProperty("name").GetString());
        Assert.Equal("raw", conn.GetProperty("lang").GetString());
        Assert.Equal("1.0", conn.GetProperty("version").GetString());
        // nats-server 2.10 estimates RTT at CONNECT (time since accept), so it is a small Go duration.
        Assert.Matches(@"^[0-9.]+(ns|µs|us|ms|s)$", conn.GetProperty("rtt").GetString());
        Assert.Equal(1, conn.GetProperty("in_msgs").GetInt64());
        Assert.Equal(2, conn.GetProperty("in_bytes").GetInt64());
        Assert.Equal(1, conn.GetProperty("out_msgs").GetInt64());
        Assert.Equal(1, conn.GetProperty("subscriptions").GetInt32());
        Assert.Matches(GoUptime(), conn.GetProperty("idle").GetString());
        var start = DateTime.Parse(conn.GetProperty("start").GetString()!, System.Globalization.CultureInfo.InvariantCulture);
        var last = DateTime.Parse(conn.GetProperty("last_activity").GetString()!, System.Globalization.CultureInfo.InvariantCulture);
        Assert.True(last >= start);

        var withSubs = (await broker.GetJsonAsync("/connz?subs=1")).GetProperty("connections")[0];
        Assert.Equal(["foo"], withSubs.GetProperty("subscriptions_list").EnumerateArray().Select(s => s.GetString()));

        var detail = (await broker.GetJsonAsync("/connz?subs=detail")).GetProperty("connections")[0].GetProperty("subscriptions_list_detail")[0];
        Assert.Equal(["subject", "sid", "msgs", "cid"], Keys(detail));
        Assert.Equal("foo", detail.GetProperty("subject").GetString());
        Assert.Equal("1", detail.GetProperty("sid").GetString());
        Assert.Equal(1, detail.GetProperty("msgs").GetInt64());
    }

    [Fact]
    public async Task Connz_PagesWithOffsetAndLimit()
    {
        await using var broker = await MonitoredBroker.StartAsync();
        var clients = new List<RawClient>();
        for (int i = 0; i < 4; i++) clients.Add(await RawClient.ConnectAsync(broker.ClientPort, $"c{i}"));
        try
        {
            var all = await broker.GetJsonAsync("/connz");
            var cids = all.GetProperty("connections").EnumerateArray().Select(c => c.GetProperty("cid").GetUInt64()).ToList();
            Assert.Equal(cids.Order(), cids);

            var page = await broker.GetJsonAsync("/connz?offset=1&limit=2");
            Assert.Equal(2, page.GetProperty("num_connections").GetInt32());
            Assert.Equal(4, page.GetProperty("total").GetInt32());
            Assert.Equal(1, page.GetProperty("offset").GetInt32());
            Assert.Equal(2, page.GetProperty("limit").GetInt32());
            Assert.Equal(cids.Skip(1).Take(2), page.GetProperty("connections").EnumerateArray().Select(c => c.GetProperty("cid").GetUInt64()));

            var beyond = await broker.GetJsonAsync("/connz?offset=10&limit=1");
            Assert.Equal(0, beyond.GetProperty("num_connections").GetInt32());
            Assert.Equal(0, beyond.GetProperty("connections").GetArrayLength());

            // Negative offset and zero limit fall back to 0 and 1024.
            var defaults = await broker.GetJsonAsync("/connz?offset=-1&limit=0");
            Assert.Equal(0, defaults.GetProperty("offset").GetInt32());
            Assert.Equal(1024, defaults.GetProperty("limit").GetInt32());

            var one = await broker.GetJsonAsync($"/connz?cid={cids[2]}");
            Assert.Equal(1, one.GetProperty("limit").GetInt32());
            Assert.Equal(cids[2], one.GetProperty("connections")[0].GetProperty("cid").GetUInt64());
        }
        finally
        {
            foreach (var c in clients) await c.DisposeAsync();
        }
    }

    [Fact]
    public async Task Connz_SortsAsNatsServer()
    {
        await using var broker = await MonitoredBroker.StartAsync();
        await using var one = await RawClient.ConnectAsync(broker.ClientPort, "one");
        await using var three = await RawClient.ConnectAsync(broker.ClientPort, "three");
        await using var two = await RawClient.ConnectAsync(broker.ClientPort, "two");
        await one.SendAndFlushAsync("SUB a 1\r\nPUB x 1\r\n1\r\n");
        await three.SendAndFlushAsync("SUB a 1\r\nSUB b 2\r\nSUB c 3\r\nPUB x 1\r\n1\r\nPUB x 1\r\n1\r\nPUB x 1\r\n1\r\n");
        await two.SendAndFlushAsync("SUB a 1\r\nSUB b 2\r\nPUB x 1\r\n1\r\nPUB x 1\r\n1\r\n");

        async Task<string[]> Names(string sort)
        {
            var c = await broker.GetJsonAsync($"/connz?sort={sort}");
            return [.. c.GetProperty("connections").EnumerateArray().Select(e => e.GetProperty("name").GetString()!)];
        }

        Assert.Equal(["one", "three", "two"], await Names("cid"));
        Assert.Equal(["one", "three", "two"], await Names("start"));
        Assert.Equal(["three", "two", "one"], await Names("subs"));
        Assert.Equal(["three", "two", "one"], await Names("msgs_from"));
        Assert.Equal(["three", "two", "one"], await Names("bytes_from"));
        // uptime is ascending: the newest connection first.
        Assert.Equal("two", (await Names("uptime"))[0]);
    }

    [Theory]
    [InlineData("/connz?sort=foo", "invalid sorting option: foo")]
    [InlineData("/connz?sort=stop", "sort by stop only valid on closed connections")]
    [InlineData("/connz?sort=reason&state=all", "sort by reason only valid on closed connections")]
    [InlineData("/connz?state=xyz", "Error decoding state for xyz")]
    [InlineData("/connz?limit=abc", "Error decoding int for 'limit': strconv.Atoi: parsing \"abc\": invalid syntax")]
    [InlineData("/connz?auth=maybe", "Error decoding boolean for 'auth': strconv.ParseBool: parsing \"maybe\": invalid syntax")]
    [InlineData("/connz?cid=-1", "Error decoding uint64 for 'cid': strconv.ParseUint: parsing \"-1\": invalid syntax")]
    [InlineData("/subsz?offset=abc", "Error decoding int for 'offset': strconv.Atoi: parsing \"abc\": invalid syntax")]
    [InlineData("/subsz?test=foo.*", "invalid test subject, must be valid publish subject: foo.*")]
    public async Task InvalidParameters_Return400WithNatsServerText(string path, string message)
    {
        await using var broker = await MonitoredBroker.StartAsync();
        var (status, contentType, body) = await broker.GetAsync(path);
        Assert.Equal(400, status);
        Assert.StartsWith("text/plain", contentType, StringComparison.Ordinal);
        Assert.Equal(message, body);
    }

    [Fact]
    public async Task Connz_ClosedConnections_KeepStatsReasonAndSubscriptions()
    {
        await using var broker = await MonitoredBroker.StartAsync();
        await using var open = await RawClient.ConnectAsync(broker.ClientPort, "open");
        var gone = await RawClient.ConnectAsync(broker.ClientPort, "gone");
        await gone.SendAndFlushAsync("SUB foo 1\r\nSUB bar q 2\r\nPUB foo 2\r\nhi\r\n");
        await gone.DisposeAsync();
        await broker.WaitForClosedAsync(1);

        var closed = await broker.GetJsonAsync("/connz?state=closed&subs=1");
        Assert.Equal(1, closed.GetProperty("total").GetInt32());
        var c = closed.GetProperty("connections")[0];
        Assert.Equal("gone", c.GetProperty("name").GetString());
        Assert.Equal("Client Closed", c.GetProperty("reason").GetString());
        Assert.Matches(GoTime(), c.GetProperty("stop").GetString());
        Assert.Equal(2, c.GetProperty("subscriptions").GetInt32());
        Assert.Equal(1, c.GetProperty("in_msgs").GetInt64());
        Assert.Equal(1, c.GetProperty("out_msgs").GetInt64());
        Assert.Equal(["bar", "foo"], c.GetProperty("subscriptions_list").EnumerateArray().Select(s => s.GetString()).Order());

        var detail = (await broker.GetJsonAsync("/connz?state=closed&subs=detail")).GetProperty("connections")[0]
            .GetProperty("subscriptions_list_detail").EnumerateArray().Single(s => s.GetProperty("subject").GetString() == "bar");
        Assert.Equal("$G", detail.GetProperty("account").GetString());
        Assert.Equal("q", detail.GetProperty("qgroup").GetString());

        var all = await broker.GetJsonAsync("/connz?state=all");
        Assert.Equal(2, all.GetProperty("total").GetInt32());
        Assert.Equal(["open", "gone"], all.GetProperty("connections").EnumerateArray().Select(e => e.GetProperty("name").GetString())
            .OrderBy(n => n == "gone"));
        var openOnly = await broker.GetJsonAsync("/connz");
        Assert.Equal(1, openOnly.GetProperty("total").GetInt32());

        var byReason = await broker.GetJsonAsync("/connz?state=closed&sort=reason");
        Assert.Equal(1, byReason.GetProperty("num_connections").GetInt32());
        var byStop = await broker.GetJsonAsync("/connz?state=closed&sort=stop");
        Assert.Equal(1, byStop.GetProperty("num_connections").GetInt32());

        var varz = await broker.GetJsonAsync("/varz");
        Assert.Equal(1, varz.GetProperty("connections").GetInt32());
        Assert.Equal(2, varz.GetProperty("total_connections").GetInt64());
        Assert.Equal(1, varz.GetProperty("in_msgs").GetInt64()); // closed connections still count
    }

    [Fact]
    public async Task Connz_Auth_ShowsAuthorizedUser()
    {
        await using var broker = await MonitoredBroker.StartAsync(o =>
        {
            o.Username = "alice";
            o.Password = "secret";
        });
        await using var a = await RawClient.ConnectAsync(broker.ClientPort, "a", ",\"user\":\"alice\",\"pass\":\"secret\"");
        var without = (await broker.GetJsonAsync("/connz")).GetProperty("connections")[0];
        Assert.False(without.TryGetProperty("authorized_user", out _));
        var with = (await broker.GetJsonAsync("/connz?auth=true")).GetProperty("connections")[0];
        Assert.Equal("alice", with.GetProperty("authorized_user").GetString());
        Assert.True((await broker.GetJsonAsync("/varz")).GetProperty("auth_required").GetBoolean());
    }

    [Fact]
    public async Task Subsz_StatsAndSubscriptionList()
    {
        await using var broker = await MonitoredBroker.StartAsync();
        await using var a = await RawClient.ConnectAsync(broker.ClientPort, "a");
        await a.SendAndFlushAsync("SUB foo 1\r\nSUB foo.* 2\r\nSUB bar q 3\r\nPUB foo 2\r\nhi\r\nPUB foo 2\r\nhi\r\n");

        var stats = await broker.GetJsonAsync("/subsz");
        // nats-server 2.14.5 writes the whole document without subs=1 too (2.9.10 wrote only the statistics).
        Assert.Equal(
            ["server_id", "now", "num_subscriptions", "num_cache", "num_inserts", "num_removes", "num_matches", "cache_hit_rate",
             "max_fanout", "avg_fanout", "total", "offset", "limit"],
            Keys(stats));
        // 3 client subscriptions + $G's $SYS.REQ.USER.INFO service (nats-server 2.10 imports it into each account).
        Assert.Equal(4, stats.GetProperty("num_subscriptions").GetInt64());
        Assert.Equal(4, stats.GetProperty("num_inserts").GetInt64());
        Assert.True(stats.GetProperty("num_matches").GetInt64() >= 1);

        var list = await broker.GetJsonAsync("/subsz?subs=1");
        Assert.Equal(
            ["server_id", "now", "num_subscriptions", "num_cache", "num_inserts", "num_removes", "num_matches", "cache_hit_rate",
             "max_fanout", "avg_fanout", "total", "offset", "limit", "subscriptions_list"],
            Keys(list));
        Assert.Equal(4, list.GetProperty("total").GetInt32());
        var foo = list.GetProperty("subscriptions_list").EnumerateArray().Single(s => s.GetProperty("subject").GetString() == "foo");
        Assert.Equal("$G", foo.GetProperty("account").GetString());
        Assert.Equal("1", foo.GetProperty("sid").GetString());
        Assert.Equal(2, foo.GetProperty("msgs").GetInt64());
        var bar = list.GetProperty("subscriptions_list").EnumerateArray().Single(s => s.GetProperty("subject").GetString() == "bar");
        Assert.Equal("q", bar.GetProperty("qgroup").GetString());

        var test = await broker.GetJsonAsync("/subsz?subs=1&test=foo.x");
        Assert.Equal(["foo.*"], test.GetProperty("subscriptions_list").EnumerateArray().Select(s => s.GetProperty("subject").GetString()));

        var page = await broker.GetJsonAsync("/subsz?subs=1&limit=1&offset=1");
        Assert.Equal(1, page.GetProperty("subscriptions_list").GetArrayLength());
        Assert.Equal(1, page.GetProperty("offset").GetInt32());
        Assert.Equal(1, page.GetProperty("limit").GetInt32());

        // An empty page is the whole document without a list, as nats-server 2.14.5 writes it (2.9.10: the bare stats).
        var empty = await broker.GetJsonAsync("/subsz?subs=1&offset=50");
        Assert.Equal(50, empty.GetProperty("offset").GetInt32());
        Assert.False(empty.TryGetProperty("subscriptions_list", out _));

        Assert.Equal(4, (await broker.GetJsonAsync("/subscriptionsz")).GetProperty("num_subscriptions").GetInt64());
    }

    [Fact]
    public async Task DisabledFeatures_ReturnNatsServerEmptyShapes()
    {
        await using var broker = await MonitoredBroker.StartAsync();
        var routez = await broker.GetJsonAsync("/routez");
        Assert.Equal(["server_id", "server_name", "now", "num_routes", "routes"], Keys(routez));
        Assert.Equal(0, routez.GetProperty("routes").GetArrayLength());

        var gatewayz = await broker.GetJsonAsync("/gatewayz");
        Assert.Equal(["server_id", "now", "outbound_gateways", "inbound_gateways"], Keys(gatewayz));
        Assert.Empty(Keys(gatewayz.GetProperty("outbound_gateways")));

        var leafz = await broker.GetJsonAsync("/leafz");
        Assert.Equal(["server_id", "now", "leafnodes", "leafs"], Keys(leafz));
        Assert.Equal(JsonValueKind.Null, leafz.GetProperty("leafs").ValueKind);

        var accountz = await broker.GetJsonAsync("/accountz");
        // nats-server 2.9.10 lists the global and the system account.
        Assert.Equal(["$G", "$SYS"], accountz.GetProperty("accounts").EnumerateArray().Select(a => a.GetString()).Order(StringComparer.Ordinal));
        var detail = (await broker.GetJsonAsync("/accountz?acc=$G")).GetProperty("account_detail");
        Assert.Equal("$G", detail.GetProperty("account_name").GetString());
        Assert.Equal(400, (await broker.GetAsync("/accountz?acc=nope")).Status);

        Assert.Equal(0, (await broker.GetJsonAsync("/accstatz")).GetProperty("account_statz").GetArrayLength());
        Assert.Equal(1, (await broker.GetJsonAsync("/accstatz?unused=1")).GetProperty("account_statz").GetArrayLength());

        var jsz = await broker.GetJsonAsync("/jsz");
        Assert.True(jsz.GetProperty("disabled").GetBoolean());
        Assert.Equal(
            ["memory", "storage", "reserved_memory", "reserved_storage", "accounts", "ha_assets", "api", "server_id", "now", "disabled",
             "config", "streams", "consumers", "messages", "bytes", "total"],
            Keys(jsz));

        var (status, contentType, body) = await broker.GetAsync("/healthz?js-enabled-only=true");
        Assert.Equal(200, status);
        Assert.Equal("application/json", contentType);
        Assert.Equal("{\"status\":\"ok\"}", body);
    }

    [Fact]
    public async Task Root_Jsonp_And_NotFound()
    {
        await using var broker = await MonitoredBroker.StartAsync();
        var root = await broker.GetAsync("/");
        Assert.Equal(200, root.Status);
        Assert.StartsWith("text/html", root.ContentType, StringComparison.Ordinal);
        Assert.Contains("href=./varz", root.Body, StringComparison.Ordinal);

        var jsonp = await broker.GetAsync("/varz?callback=cb");
        Assert.Equal("application/javascript", jsonp.ContentType);
        Assert.StartsWith("cb({", jsonp.Body, StringComparison.Ordinal);
        Assert.EndsWith("})", jsonp.Body, StringComparison.Ordinal);

        foreach (var path in new[] { "/varz/", "/nope", "/connz/x" })
        {
            var nf = await broker.GetAsync(path);
            Assert.Equal(404, nf.Status);
            Assert.Equal("404 page not found\n", nf.Body);
        }

        // Any method, as Go's ServeMux.
        using var post = await broker.Http.PostAsync("/varz", new StringContent(""));
        Assert.Equal(200, (int)post.StatusCode);

        // The indentation is Go's MarshalIndent("", "  ").
        var varz = await broker.GetAsync("/varz");
        Assert.StartsWith("{\n  \"server_id\": ", varz.Body, StringComparison.Ordinal);
    }

    [Fact]
    public async Task RandomPort_IsBoundAndWrittenToPortsFile()
    {
        var dir = Directory.CreateTempSubdirectory("natsbroker-ports");
        try
        {
            await using var broker = await MonitoredBroker.StartAsync(o => o.PortsFileDir = dir.FullName);
            Assert.True(broker.Monitor.Port > 0);
            broker.Server.WritePortsFile(broker.Monitor.Port);
            var file = Path.Combine(dir.FullName, $"nats-server_{Environment.ProcessId}.ports");
            using var doc = JsonDocument.Parse(await File.ReadAllTextAsync(file));
            Assert.Equal([$"http://127.0.0.1:{broker.Monitor.Port}"], doc.RootElement.GetProperty("monitoring").EnumerateArray().Select(e => e.GetString()));
        }
        finally
        {
            dir.Delete(recursive: true);
        }
    }

    [Fact]
    public async Task MonitorPortInUse_FailsWithNatsServerMessage()
    {
        await using var broker = await MonitoredBroker.StartAsync();
        var options = new ServerOptions { Host = "127.0.0.1", Port = -1, HttpHost = "127.0.0.1", HttpPort = broker.Monitor.Port };
        await using var server = new NatsBroker.Server.NatsServer(options, Microsoft.Extensions.Logging.Abstractions.NullLogger.Instance);
        var ex = await Assert.ThrowsAsync<IOException>(() =>
            NatsBroker.Monitoring.MonitoringServer.StartAsync(server, Microsoft.Extensions.Logging.Abstractions.NullLogger.Instance, CancellationToken.None));
        Assert.StartsWith("can't listen to the monitor port", ex.Message, StringComparison.Ordinal);
    }
}
