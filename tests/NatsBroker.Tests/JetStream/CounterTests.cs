using static NatsBroker.Tests.JetStream.BatchTestKit;

namespace NatsBroker.Tests.JetStream;

/// <summary>Distributed counters (ADR-49, nats-server 2.12): Nats-Incr, the stored {"val"}, the PubAck's val, errors.</summary>
public sealed class CounterTests(AtomicBatchServer fixture) : IClassFixture<AtomicBatchServer>
{
    private JsTestServer T => fixture.T;

    [Fact]
    public async Task Increments_add_up_per_subject_and_the_pub_ack_shows_the_total()
    {
        await CreateStreamAsync(T, """{"name":"CN1","subjects":["cn1.>"],"allow_msg_counter":true}""");
        await using var c = await ConnectAsync(T);
        await HPubAsync(c, "cn1.hits", "_R.1", "Nats-Incr: +2\r\n", "");
        Assert.Equal("{\"stream\":\"CN1\", \"seq\":1,\"val\":\"2\"}", await ReplyAsync(c, "_R.1"));
        await HPubAsync(c, "cn1.hits", "_R.2", "Nats-Incr: 40\r\n", "");
        Assert.Equal("{\"stream\":\"CN1\", \"seq\":2,\"val\":\"42\"}", await ReplyAsync(c, "_R.2"));
        await HPubAsync(c, "cn1.other", "_R.3", "Nats-Incr: -5\r\n", "");
        Assert.Equal("{\"stream\":\"CN1\", \"seq\":3,\"val\":\"-5\"}", await ReplyAsync(c, "_R.3"));
        // Beyond 64 bits (big integers, as nats-server's big.Int).
        await HPubAsync(c, "cn1.hits", "_R.4", "Nats-Incr: 99999999999999999999999999\r\n", "");
        Assert.Equal("{\"stream\":\"CN1\", \"seq\":4,\"val\":\"100000000000000000000000041\"}", await ReplyAsync(c, "_R.4"));
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
}
