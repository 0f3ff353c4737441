using System.Text;
using System.Text.Json;
using NATS.Client.Core;

namespace NatsBroker.Tests.JetStream;

/// <summary>One broker for the class: per-message TTL and delete markers, DIRECT.GET batch / multi_last, consumer pause.</summary>
public sealed class TtlDirectPauseFixture : IAsyncLifetime
{
    internal JsTestServer Server { get; private set; } = null!;
    public async Task InitializeAsync() => Server = await JsTestServer.StartAsync();
    public async Task DisposeAsync() => await Server.DisposeAsync();
}

/// <summary>
/// ADR-43 per-message TTL (Nats-TTL, "never", subject delete markers on max-age expiry), DIRECT.GET batches and
/// multi_last with their EOB status, and CONSUMER.PAUSE (nats-server 2.11 behaviour, from its source).
/// </summary>
public sealed class TtlDirectPauseTests(TtlDirectPauseFixture fixture) : IClassFixture<TtlDirectPauseFixture>
{
    private static readonly TimeSpan Wait = TimeSpan.FromSeconds(10);
    private NatsConnection Nats => fixture.Server.Nats;

    private async Task<JsonElement> Api(string subject, string body = "")
    {
        var reply = await Nats.RequestAsync<byte[], byte[]>(subject, Encoding.UTF8.GetBytes(body), replyOpts: new NatsSubOpts { Timeout = Wait });
        return JsonDocument.Parse(reply.Data ?? []).RootElement.Clone();
    }

    private async Task<JsonElement> Ok(string subject, string body = "")
    {
        var r = await Api(subject, body);
        Assert.False(r.TryGetProperty("error", out var e), $"{subject}: {e}");
        return r;
    }

    private async Task<JsonElement> Publish(string subject, string data, NatsHeaders? headers = null)
    {
        var r = await Nats.RequestAsync<string, byte[]>(subject, data, headers: headers, replyOpts: new NatsSubOpts { Timeout = Wait });
        return JsonDocument.Parse(r.Data ?? []).RootElement.Clone();
    }

    private static async Task Eventually(Func<Task<bool>> condition, string what)
    {
        var deadline = DateTime.UtcNow + Wait;
        while (!await condition())
        {
            if (DateTime.UtcNow > deadline) Assert.Fail($"timed out waiting for {what}");
            await Task.Delay(100);
        }
    }

    private async Task<ulong> Messages(string stream) =>
        (await Ok($"$JS.API.STREAM.INFO.{stream}")).GetProperty("state").GetProperty("messages").GetUInt64();

    [Fact]
    public async Task Nats_TTL_expires_messages_never_outlives_max_age_and_streams_without_ttl_refuse_it()
    {
        await Ok("$JS.API.STREAM.CREATE.T1", """{"name":"T1","subjects":["t1.>"],"storage":"memory","allow_msg_ttl":true,"max_age":1500000000}""");
        await Publish("t1.plain", "x");
        await Publish("t1.never", "y", new NatsHeaders { ["Nats-TTL"] = "never" });
        await Publish("t1.short", "z", new NatsHeaders { ["Nats-TTL"] = "1s" });
        var invalid = await Publish("t1.bad", "z", new NatsHeaders { ["Nats-TTL"] = "500ms" });
        Assert.Equal(10165, invalid.GetProperty("error").GetProperty("err_code").GetInt32());
        await Eventually(async () => await Messages("T1") == 1, "the TTL'd and aged messages to go");
        var left = await Ok("$JS.API.STREAM.MSG.GET.T1", """{"last_by_subj":"t1.never"}""");
        Assert.Equal(2ul, left.GetProperty("message").GetProperty("seq").GetUInt64());

        await Ok("$JS.API.STREAM.CREATE.T2", """{"name":"T2","subjects":["t2"],"storage":"memory"}""");
        var disabled = await Publish("t2", "x", new NatsHeaders { ["Nats-TTL"] = "5s" });
        Assert.Equal(10166, disabled.GetProperty("error").GetProperty("err_code").GetInt32());
        var off = await Api("$JS.API.STREAM.UPDATE.T1", """{"name":"T1","subjects":["t1.>"],"storage":"memory","allow_msg_ttl":false,"max_age":1500000000}""");
        Assert.Equal("message TTL status can not be disabled", off.GetProperty("error").GetProperty("description").GetString());
    }

    [Fact]
    public async Task Max_age_leaves_a_subject_delete_marker_that_expires_in_turn()
    {
        var created = await Ok("$JS.API.STREAM.CREATE.SDM", """{"name":"SDM","subjects":["k.>"],"storage":"memory","max_age":1000000000,"subject_delete_marker_ttl":2000000000}""");
        Assert.True(created.GetProperty("config").GetProperty("allow_msg_ttl").GetBoolean());
        Assert.True(created.GetProperty("config").GetProperty("allow_rollup_hdrs").GetBoolean());
        await Publish("k.1", "v1");
        await Publish("k.1", "v2");
        string marker = "";
        await Eventually(async () =>
        {
            var r = await Api("$JS.API.STREAM.MSG.GET.SDM", """{"last_by_subj":"k.1"}""");
            if (!r.TryGetProperty("message", out var m) || !m.TryGetProperty("hdrs", out var h)) return false;
            marker = Encoding.UTF8.GetString(h.GetBytesFromBase64());
            return true;
        }, "a delete marker");
        Assert.Contains("Nats-Marker-Reason: MaxAge\r\n", marker, StringComparison.Ordinal);
        Assert.Contains("Nats-TTL: 2s\r\n", marker, StringComparison.Ordinal);
        Assert.Contains("Nats-Rollup: sub\r\n", marker, StringComparison.Ordinal);
        await Eventually(async () => await Messages("SDM") == 0, "the marker to expire");
    }

    [Fact]
    public async Task Direct_get_batches_and_multi_last_end_with_eob()
    {
        await Ok("$JS.API.STREAM.CREATE.DG", """{"name":"DG","subjects":["dg.*"],"storage":"memory","allow_direct":true}""");
        foreach (var s in new[] { "dg.a", "dg.b", "dg.a", "dg.c", "dg.b" }) await Publish(s, s);
        await using var inbox = await Nats.SubscribeCoreAsync<string>("dgr.inbox");
        await Nats.PingAsync();

        async Task<List<NatsMsg<string>>> Request(string body)
        {
            await Nats.PublishAsync("$JS.API.DIRECT.GET.DG", body, replyTo: "dgr.inbox");
            var got = new List<NatsMsg<string>>();
            using var cts = new CancellationTokenSource(Wait);
            while (true)
            {
                var m = await inbox.Msgs.ReadAsync(cts.Token);
                got.Add(m);
                if (m.Headers?.Code is 204 or 404 or 408 or 413) return got;
            }
        }

        var batch = await Request("""{"seq":2,"batch":3}""");
        Assert.Equal(4, batch.Count);
        Assert.Equal(["2", "3", "4"], batch.Take(3).Select(m => m.Headers!["Nats-Sequence"].ToString()));
        Assert.Equal(["0", "2", "3"], batch.Take(3).Select(m => m.Headers!["Nats-Last-Sequence"].ToString()));
        Assert.Equal("1", batch[2].Headers!["Nats-Num-Pending"].ToString());
        Assert.Equal("EOB", batch[3].Headers!.MessageText);
        Assert.Equal("1", batch[3].Headers!["Nats-Num-Pending"].ToString());
        Assert.Equal("4", batch[3].Headers!["Nats-Last-Sequence"].ToString());

        var multi = await Request("""{"multi_last":["dg.a","dg.b"]}""");
        Assert.Equal(["3", "5"], multi.Take(2).Select(m => m.Headers!["Nats-Sequence"].ToString()));
        Assert.Equal("5", multi[2].Headers!["Nats-UpTo-Sequence"].ToString());
        var upTo = await Request("""{"multi_last":["dg.*"],"up_to_seq":4}""");
        Assert.Equal(["2", "3", "4"], upTo.Take(3).Select(m => m.Headers!["Nats-Sequence"].ToString()));

        var conflicting = await Request("""{"last_by_subj":"dg.a","batch":2}""");
        Assert.Equal(408, conflicting.Single().Headers!.Code);
        var none = await Request("""{"multi_last":["dg.none"]}""");
        Assert.Equal("No Results", none.Single().Headers!.MessageText);
    }

    [Fact]
    public async Task Paused_consumer_delivers_nothing_until_resumed_and_says_so()
    {
        await Ok("$JS.API.STREAM.CREATE.PS", """{"name":"PS","subjects":["ps"],"storage":"memory"}""");
        await Ok("$JS.API.CONSUMER.DURABLE.CREATE.PS.C", """{"stream_name":"PS","config":{"durable_name":"C","ack_policy":"explicit"}}""");
        await using var adv = await Nats.SubscribeCoreAsync<string>("$JS.EVENT.ADVISORY.CONSUMER.PAUSE.PS.C");
        await Nats.PingAsync();
        var until = DateTime.UtcNow.AddMinutes(5).ToString("O");
        var paused = await Ok("$JS.API.CONSUMER.PAUSE.PS.C", $$"""{"pause_until":"{{until}}"}""");
        Assert.Equal("io.nats.jetstream.api.v1.consumer_pause_response", paused.GetProperty("type").GetString());
        Assert.True(paused.GetProperty("paused").GetBoolean());
        Assert.True(paused.GetProperty("pause_remaining").GetInt64() > 0);
        var info = await Ok("$JS.API.CONSUMER.INFO.PS.C");
        Assert.True(info.GetProperty("paused").GetBoolean());
        using var cts = new CancellationTokenSource(Wait);
        var advisory = JsonDocument.Parse((await adv.Msgs.ReadAsync(cts.Token)).Data!).RootElement;
        Assert.Equal("io.nats.jetstream.advisory.v1.consumer_pause", advisory.GetProperty("type").GetString());
        Assert.True(advisory.GetProperty("paused").GetBoolean());

        await Publish("ps", "held");
        var empty = await Nats.RequestAsync<string, string>("$JS.API.CONSUMER.MSG.NEXT.PS.C", """{"batch":1,"expires":500000000}""",
            replyOpts: new NatsSubOpts { Timeout = Wait });
        Assert.Equal(408, empty.Headers?.Code);

        var resumed = await Ok("$JS.API.CONSUMER.PAUSE.PS.C");
        Assert.False(resumed.GetProperty("paused").GetBoolean());
        Assert.False((await Ok("$JS.API.CONSUMER.INFO.PS.C")).TryGetProperty("paused", out _));
        // Deliveries keep the stored subject (not the reply inbox), so read them on a subscription of our own.
        await using var pull = await Nats.SubscribeCoreAsync<string>("ps.pull.inbox");
        await Nats.PingAsync();
        await Nats.PublishAsync("$JS.API.CONSUMER.MSG.NEXT.PS.C", """{"batch":1,"expires":5000000000}""", replyTo: "ps.pull.inbox");
        var msg = await pull.Msgs.ReadAsync(cts.Token);
        Assert.Equal("held", msg.Data);
        var resumedAdvisory = JsonDocument.Parse((await adv.Msgs.ReadAsync(cts.Token)).Data!).RootElement;
        Assert.False(resumedAdvisory.GetProperty("paused").GetBoolean());
        Assert.Equal(404, (await Api("$JS.API.CONSUMER.PAUSE.PS.NOPE")).GetProperty("error").GetProperty("code").GetInt32());
    }
}
