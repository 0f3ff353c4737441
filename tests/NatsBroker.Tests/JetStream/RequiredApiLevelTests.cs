using System.Text;
using System.Text.Json;
using NATS.Client.Core;
using NATS.Client.JetStream.Models;
using static NatsBroker.Tests.JetStream.BatchTestKit;

namespace NatsBroker.Tests.JetStream;

/// <summary>
/// Nats-Required-Api-Level (nats-server jetstream_versioning.go errorOnRequiredApiLevel): API requests, MSG.NEXT
/// and DIRECT.GET, atomic and fast-ingest batch messages; the level in $JS.API.INFO.
/// </summary>
public sealed class RequiredApiLevelTests(AtomicBatchServer fixture) : IClassFixture<AtomicBatchServer>
{
    private JsTestServer T => fixture.T;

    private async Task<NatsMsg<byte[]>> RequestAsync(string subject, string body, string level)
    {
        var headers = new NatsHeaders { ["Nats-Required-Api-Level"] = level };
        return await T.Nats.RequestAsync<byte[], byte[]>(subject, Encoding.UTF8.GetBytes(body), headers: headers, cancellationToken: Timeout());
    }

    /// <summary>nats-server 2.14.5's refusal; STREAM.INFO's answer carries its paging fields at zero beside the error.</summary>
    private static string Refused(string type) =>
        "{\"type\":\"io.nats.jetstream.api.v1." + type + "\",\"error\":{\"code\":412,\"err_code\":10185,\"description\":\"JetStream minimum api level required\"}"
        + (type == "stream_info_response" ? ",\"total\":0,\"offset\":0,\"limit\":0}" : "}");

    [Fact]
    public async Task Api_requests_above_level_4_are_refused_and_the_level_is_shown()
    {
        var info = JsonDocument.Parse(await ApiAsync(T, "$JS.API.INFO", "")).RootElement;
        Assert.Equal(4, info.GetProperty("api").GetProperty("level").GetInt32());

        var r = await RequestAsync("$JS.API.INFO", "", "5");
        Assert.Equal(Refused("account_info_response"), Encoding.UTF8.GetString(r.Data!));
        r = await RequestAsync("$JS.API.STREAM.CREATE.AL1", """{"name":"AL1","subjects":["al1.>"]}""", "x");
        Assert.Equal(Refused("stream_create_response"), Encoding.UTF8.GetString(r.Data!));
        Assert.DoesNotContain("AL1", await ApiAsync(T, "$JS.API.STREAM.NAMES", ""), StringComparison.Ordinal);
        r = await RequestAsync("$JS.API.STREAM.CREATE.AL1", """{"name":"AL1","subjects":["al1.>"]}""", "4");
        Assert.DoesNotContain("error", Encoding.UTF8.GetString(r.Data!), StringComparison.Ordinal);
        r = await RequestAsync("$JS.API.STREAM.INFO.AL1", "", "10");
        Assert.Equal(Refused("stream_info_response"), Encoding.UTF8.GetString(r.Data!));
        r = await RequestAsync("$JS.API.CONSUMER.CREATE.AL1", """{"stream_name":"AL1","config":{"name":"c","ack_policy":"explicit"}}""", "1");
        Assert.Contains("\"name\":\"c\"", Encoding.UTF8.GetString(r.Data!), StringComparison.Ordinal);
        r = await RequestAsync("$JS.API.CONSUMER.INFO.AL1.c", "", "5");
        Assert.Equal(Refused("consumer_info_response"), Encoding.UTF8.GetString(r.Data!));

        // MSG.NEXT and DIRECT.GET answer with a status.
        r = await RequestAsync("$JS.API.CONSUMER.MSG.NEXT.AL1.c", """{"batch":1,"no_wait":true}""", "5");
        Assert.Equal(412, (int)r.Headers!.Code);
        Assert.Equal("Required Api Level", r.Headers.MessageText);
        await CreateStreamAsync(T, """{"name":"AL2","subjects":["al2.>"],"allow_direct":true}""");
        r = await RequestAsync("$JS.API.DIRECT.GET.AL2", """{"seq":1}""", "5");
        Assert.Equal(412, (int)r.Headers!.Code);
    }

    [Fact]
    public async Task Batch_messages_above_the_level_end_the_batch_and_the_header_is_not_stored()
    {
        await CreateStreamAsync(T, """{"name":"AL3","subjects":["al3.>"],"allow_atomic":true}""");
        await using var c = await ConnectAsync(T);
        await HPubAsync(c, "al3.a", "_R.1", Batch("b1", 1) + "Nats-Required-Api-Level: 2\r\n", "one");
        Assert.Equal("", await ReplyAsync(c, "_R.1"));
        await HPubAsync(c, "al3.b", "_R.2", Batch("b1", 2, "1"), "two");
        Assert.Equal("{\"stream\":\"AL3\",\"seq\":2,\"batch\":\"b1\",\"count\":2}", await ReplyAsync(c, "_R.2"));
        var get = JsonDocument.Parse(await ApiAsync(T, "$JS.API.STREAM.MSG.GET.AL3", """{"seq":1}""")).RootElement;
        var hdrs = Encoding.UTF8.GetString(Convert.FromBase64String(get.GetProperty("message").GetProperty("hdrs").GetString()!));
        Assert.Equal("NATS/1.0\r\nNats-Batch-Id: b1\r\nNats-Batch-Sequence: 1\r\n\r\n", hdrs);

        await HPubAsync(c, "al3.a", "_R.3", Batch("b2", 1), "one");
        Assert.Equal("", await ReplyAsync(c, "_R.3"));
        await HPubAsync(c, "al3.b", "_R.4", Batch("b2", 2, "1") + "Nats-Required-Api-Level: 5\r\n", "two");
        Assert.Equal(Error(412, 10185, "JetStream minimum api level required", "AL3"), await ReplyAsync(c, "_R.4"));
        Assert.Equal(2, await MessagesAsync(T, "AL3"));

        await CreateStreamAsync(T, """{"name":"AL4","subjects":["al4.>"],"allow_batched":true}""");
        await HPubAsync(c, "al4.a", "_R.f.1.fail.1.2.$FI", "Nats-Required-Api-Level: 9\r\n", "x");
        Assert.Equal(Error(412, 10185, "JetStream minimum api level required", "AL4"), await ReplyAsync(c));
        await HPubAsync(c, "al4.a", "_R.g.1.fail.1.2.$FI", "Nats-Required-Api-Level: 3\r\n", "x");
        Assert.Equal("{\"stream\":\"AL4\",\"seq\":1,\"batch\":\"g\",\"count\":1}", await ReplyAsync(c));
        get = JsonDocument.Parse(await ApiAsync(T, "$JS.API.STREAM.MSG.GET.AL4", """{"seq":1}""")).RootElement;
        Assert.False(get.GetProperty("message").TryGetProperty("hdrs", out _));
    }
}
