using System.Text;
using System.Text.Json;
using static NatsBroker.Tests.JetStream.BatchTestKit;

namespace NatsBroker.Tests.JetStream;

/// <summary>
/// Distributed counters (ADR-49, nats-server 2.12): Nats-Incr, the stored {"val"}, the PubAck's val, errors, counter
/// streams sourcing counter streams (Nats-Counter-Sources).
/// </summary>
public sealed class CounterTests(AtomicBatchServer fixture) : IClassFixture<AtomicBatchServer>
{
    private JsTestServer T => fixture.T;

    [Fact]
    public async Task Increments_add_up_per_subject_and_the_pub_ack_shows_the_total()
    {
        await CreateStreamAsync(T, """{"name":"CN1","subjects":["cn1.>"],"allow_msg_counter":true}""");
        await using var c = await ConnectAsync(T);
        await HPubAsync(c, "cn1.hits", "_R.1", "Nats-Incr: +2\r\n", "");
        Assert.Equal("{\"stream\":\"CN1\",\"seq\":1,\"val\":\"2\"}", await ReplyAsync(c, "_R.1"));
        await HPubAsync(c, "cn1.hits", "_R.2", "Nats-Incr: 40\r\n", "");
        Assert.Equal("{\"stream\":\"CN1\",\"seq\":2,\"val\":\"42\"}", await ReplyAsync(c, "_R.2"));
        await HPubAsync(c, "cn1.other", "_R.3", "Nats-Incr: -5\r\n", "");
        Assert.Equal("{\"stream\":\"CN1\",\"seq\":3,\"val\":\"-5\"}", await ReplyAsync(c, "_R.3"));
        // Beyond 64 bits (big integers, as nats-server's big.Int).
        await HPubAsync(c, "cn1.hits", "_R.4", "Nats-Incr: 99999999999999999999999999\r\n", "");
        Assert.Equal("{\"stream\":\"CN1\",\"seq\":4,\"val\":\"100000000000000000000000041\"}", await ReplyAsync(c, "_R.4"));
        var get = await ApiAsync(T, "$JS.API.STREAM.MSG.GET.CN1", """{"last_by_subj":"cn1.hits"}""");
        var data = System.Text.Json.JsonDocument.Parse(get).RootElement.GetProperty("message").GetProperty("data").GetString()!;
        Assert.Equal("{\"val\":\"100000000000000000000000041\"}", System.Text.Encoding.UTF8.GetString(Convert.FromBase64String(data)));
    }

    [Fact]
    public async Task Errors_as_nats_server_answers_them()
    {
        await CreateStreamAsync(T, """{"name":"CN2","subjects":["cn2.>"],"allow_msg_counter":true}""");
        await CreateStreamAsync(T, """{"name":"CN3","subjects":["cn3.>"]}""");
        await using var c = await ConnectAsync(T);
        await HPubAsync(c, "cn3.a", "_R.1", "Nats-Incr: 1\r\n", "");
        Assert.Equal(Error(400, 10168, "message counters is disabled", "CN3"), await ReplyAsync(c));
        await HPubAsync(c, "cn2.a", "_R.2", "Nats-Msg-Id: x\r\n", "");
        Assert.Equal(Error(400, 10169, "message counter increment is missing", "CN2"), await ReplyAsync(c));
        await HPubAsync(c, "cn2.a", "_R.3", "Nats-Incr: 1\r\n", "payload");
        Assert.Equal(Error(400, 10170, "message counter has payload", "CN2"), await ReplyAsync(c));
        await HPubAsync(c, "cn2.a", "_R.4", "Nats-Incr: one\r\n", "");
        Assert.Equal(Error(400, 10171, "message counter increment is invalid", "CN2"), await ReplyAsync(c));
        await HPubAsync(c, "cn2.a", "_R.5", "Nats-Incr: 1\r\nNats-Expected-Last-Sequence: 0\r\n", "");
        Assert.Equal(Error(400, 10171, "message counter increment is invalid", "CN2"), await ReplyAsync(c));
        Assert.Equal(0, await MessagesAsync(T, "CN2"));
        var r = await ApiAsync(T, "$JS.API.STREAM.CREATE.CN4", """{"name":"CN4","subjects":["cn4.>"],"allow_msg_counter":true,"discard":"new"}""");
        Assert.Contains("\"err_code\":10052,\"description\":\"counter stream cannot use discard new\"", r, StringComparison.Ordinal);
        r = await ApiAsync(T, "$JS.API.STREAM.UPDATE.CN2", """{"name":"CN2","subjects":["cn2.>"]}""");
        Assert.Contains("stream configuration update can not change message counter setting", r, StringComparison.Ordinal);
    }

    /// <summary>The last message of a subject: its payload and headers (polled until its value is <paramref name="val"/>).</summary>
    private async Task<(string Data, string Headers)> LastAsync(string stream, string subject, string val)
    {
        var deadline = DateTime.UtcNow.AddSeconds(10);
        string data = "", hdrs = "";
        while (DateTime.UtcNow < deadline)
        {
            var get = await ApiAsync(T, $"$JS.API.STREAM.MSG.GET.{stream}", $$"""{"last_by_subj":"{{subject}}"}""");
            var root = JsonDocument.Parse(get).RootElement;
            if (root.TryGetProperty("message", out var m))
            {
                data = Encoding.UTF8.GetString(Convert.FromBase64String(m.GetProperty("data").GetString()!));
                hdrs = m.TryGetProperty("hdrs", out var h) ? Encoding.UTF8.GetString(Convert.FromBase64String(h.GetString()!)) : "";
                if (data == $$"""{"val":"{{val}}"}""") return (data, hdrs);
            }
            await Task.Delay(20);
        }
        Assert.Fail($"{stream} {subject}: last value not {val} in time: {data} {hdrs}");
        return default;
    }

    [Fact]
    public async Task A_counter_stream_sourcing_counters_adds_each_source_once()
    {
        await CreateStreamAsync(T, """{"name":"CSA","subjects":["csa.>"],"allow_msg_counter":true}""");
        await CreateStreamAsync(T, """{"name":"CSB","subjects":["csb.>"],"allow_msg_counter":true}""");
        // Both regions into one subject of the aggregate (ADR-49's example), which also takes its own increments.
        await CreateStreamAsync(T, """{"name":"CSAGG","subjects":["agg.>"],"allow_msg_counter":true,"sources":[{"name":"CSA","subject_transforms":[{"src":"csa.>","dest":"agg.>"}]},{"name":"CSB","subject_transforms":[{"src":"csb.>","dest":"agg.>"}]}]}""");
        // A plain stream sourcing a counter stores its messages as they are.
        await CreateStreamAsync(T, """{"name":"CSPLAIN","subjects":["csplain"],"sources":[{"name":"CSA"}]}""");
        await using var c = await ConnectAsync(T);
        await HPubAsync(c, "csa.hits", "_R.1", "Nats-Incr: 5\r\n", "");
        Assert.Contains("\"val\":\"5\"", await ReplyAsync(c, "_R.1"), StringComparison.Ordinal);
        await LastAsync("CSAGG", "agg.hits", "5");
        await HPubAsync(c, "csb.hits", "_R.2", "Nats-Incr: 3\r\n", "");
        Assert.Contains("\"val\":\"3\"", await ReplyAsync(c, "_R.2"), StringComparison.Ordinal);
        await LastAsync("CSAGG", "agg.hits", "8");
        await HPubAsync(c, "csa.hits", "_R.3", "Nats-Incr: 2\r\n", "");
        Assert.Contains("\"val\":\"7\"", await ReplyAsync(c, "_R.3"), StringComparison.Ordinal);
        // CSA's total went from 5 to 7: the aggregate adds 2 (not 7), and says so in Nats-Incr.
        var (_, hdrs) = await LastAsync("CSAGG", "agg.hits", "10");
        Assert.Contains("Nats-Incr: 2\r\n", hdrs, StringComparison.Ordinal);
        Assert.Contains("Nats-Counter-Sources: {\"CSA\":{\"csa.hits\":\"7\"},\"CSB\":{\"csb.hits\":\"3\"}}\r\n", hdrs, StringComparison.Ordinal);
        Assert.Contains("Nats-Stream-Source: CSA ", hdrs, StringComparison.Ordinal);

        // A direct increment on the aggregate keeps the sources' totals, so the next sourced change still adds up.
        await HPubAsync(c, "agg.hits", "_R.4", "Nats-Incr: 100\r\n", "");
        Assert.Contains("\"val\":\"110\"", await ReplyAsync(c, "_R.4"), StringComparison.Ordinal);
        (_, hdrs) = await LastAsync("CSAGG", "agg.hits", "110");
        Assert.Contains("Nats-Counter-Sources: {\"CSA\":{\"csa.hits\":\"7\"},\"CSB\":{\"csb.hits\":\"3\"}}\r\n", hdrs, StringComparison.Ordinal);
        await HPubAsync(c, "csb.hits", "_R.5", "Nats-Incr: -1\r\n", "");
        Assert.Contains("\"val\":\"2\"", await ReplyAsync(c, "_R.5"), StringComparison.Ordinal);
        (_, hdrs) = await LastAsync("CSAGG", "agg.hits", "109");
        Assert.Contains("Nats-Incr: -1\r\n", hdrs, StringComparison.Ordinal);
        Assert.Contains("\"CSB\":{\"csb.hits\":\"2\"}", hdrs, StringComparison.Ordinal);

        // The plain stream holds CSA's two messages verbatim (their totals and increments).
        var (plainData, plainHdrs) = await LastAsync("CSPLAIN", "csa.hits", "7");
        Assert.Contains("Nats-Incr: 2\r\n", plainHdrs, StringComparison.Ordinal);
        Assert.Equal(2, await MessagesAsync(T, "CSPLAIN"));
        Assert.Equal("{\"val\":\"7\"}", plainData);
    }

    [Fact]
    public async Task The_stored_total_must_fit_max_msg_size()
    {
        // {"val":"N"} is 10 bytes plus the digits; the headers count too (nats-server checks after adding).
        await CreateStreamAsync(T, """{"name":"CN5","subjects":["cn5"],"allow_msg_counter":true,"max_msg_size":40}""");
        await using var c = await ConnectAsync(T);
        await HPubAsync(c, "cn5", "_R.1", "Nats-Incr: 1\r\n", "");
        Assert.Contains("\"val\":\"1\"", await ReplyAsync(c, "_R.1"), StringComparison.Ordinal);
        await HPubAsync(c, "cn5", "_R.2", "Nats-Incr: 99999999999999\r\n", "");
        Assert.Equal(Error(400, 10054, "message size exceeds maximum allowed", "CN5"), await ReplyAsync(c, "_R.2"));
        Assert.Equal(1, await MessagesAsync(T, "CN5"));
    }
}
