using System.Text;
using System.Text.Json;
using NATS.Client.Core;
using NATS.Client.JetStream;
using NATS.Client.JetStream.Models;
using static NatsBroker.Tests.JetStream.BatchTestKit;

namespace NatsBroker.Tests.JetStream;

/// <summary>
/// $JS.API.CONSUMER.RESET.&lt;stream&gt;.&lt;consumer&gt; (nats-server 2.14): back to the ack floor or to a sequence, the
/// consumer info with reset_seq, the deliver-policy rules (10204), and no answer for a missing consumer.
/// </summary>
public sealed class ConsumerResetTests(AtomicBatchServer fixture) : IClassFixture<AtomicBatchServer>
{
    private JsTestServer T => fixture.T;

    private async Task<JsonElement> ResetAsync(string stream, string consumer, string body, NatsHeaders? headers = null)
    {
        var reply = await T.Nats.RequestAsync<byte[], byte[]>($"$JS.API.CONSUMER.RESET.{stream}.{consumer}", Encoding.UTF8.GetBytes(body), headers: headers, cancellationToken: Timeout());
        return JsonDocument.Parse(reply.Data ?? []).RootElement.Clone();
    }

    [Fact]
    public async Task Reset_goes_back_to_the_ack_floor_or_to_a_sequence()
    {
        await T.Js.CreateStreamAsync(new StreamConfig("RS1", ["rs1.>"]), Timeout());
        for (int i = 1; i <= 10; i++) (await T.Js.PublishAsync($"rs1.{i}", i, cancellationToken: Timeout())).EnsureSuccess();
        var consumer = await T.Js.CreateOrUpdateConsumerAsync("RS1", new ConsumerConfig("c") { AckPolicy = ConsumerConfigAckPolicy.Explicit }, Timeout());
        int n = 0;
        await foreach (var msg in consumer.FetchAsync<int>(new NatsJSFetchOpts { MaxMsgs = 5, Expires = TimeSpan.FromSeconds(2) }, cancellationToken: Timeout()))
        {
            if (++n <= 3) await msg.AckAsync(new AckOpts { DoubleAck = true }, cancellationToken: Timeout());
        }
        Assert.Equal(5, n);

        // No body: back to the ack floor (3) + 1; the two unacknowledged messages are delivered again.
        var r = await ResetAsync("RS1", "c", "");
        Assert.Equal("io.nats.jetstream.api.v1.consumer_reset_response", r.GetProperty("type").GetString());
        Assert.Equal(4ul, r.GetProperty("reset_seq").GetUInt64());
        Assert.Equal("c", r.GetProperty("name").GetString());
        Assert.Equal(0ul, r.GetProperty("delivered").GetProperty("consumer_seq").GetUInt64());
        Assert.Equal(3ul, r.GetProperty("delivered").GetProperty("stream_seq").GetUInt64());
        Assert.Equal(3ul, r.GetProperty("ack_floor").GetProperty("stream_seq").GetUInt64());
        Assert.Equal(0, r.GetProperty("num_ack_pending").GetInt32());
        Assert.Equal(7ul, r.GetProperty("num_pending").GetUInt64());
        var next = await consumer.NextAsync<int>(opts: new NatsJSNextOpts { Expires = TimeSpan.FromSeconds(2) }, cancellationToken: Timeout());
        Assert.Equal(4, next!.Data);
        Assert.Equal(4ul, next.Metadata!.Value.Sequence.Stream);
        Assert.Equal(1ul, next.Metadata!.Value.Sequence.Consumer);

        // A sequence: delivery continues there.
        r = await ResetAsync("RS1", "c", """{"seq":8}""");
        Assert.Equal(8ul, r.GetProperty("reset_seq").GetUInt64());
        Assert.Equal(3ul, r.GetProperty("num_pending").GetUInt64());
        next = await consumer.NextAsync<int>(opts: new NatsJSNextOpts { Expires = TimeSpan.FromSeconds(2) }, cancellationToken: Timeout());
        Assert.Equal(8, next!.Data);
        var info = await T.Js.GetConsumerAsync("RS1", "c", Timeout());
        Assert.Equal(8ul, info.Info.Delivered.StreamSeq);
    }

    [Fact]
    public async Task Deliver_policies_limit_the_sequence_and_missing_consumers_have_no_responder()
    {
        await T.Js.CreateStreamAsync(new StreamConfig("RS2", ["rs2.>"]), Timeout());
        for (int i = 1; i <= 6; i++) (await T.Js.PublishAsync($"rs2.{i}", i, cancellationToken: Timeout())).EnsureSuccess();
        await T.Js.CreateOrUpdateConsumerAsync("RS2", new ConsumerConfig("new") { DeliverPolicy = ConsumerConfigDeliverPolicy.New }, Timeout());
        await T.Js.CreateOrUpdateConsumerAsync("RS2", new ConsumerConfig("from5") { DeliverPolicy = ConsumerConfigDeliverPolicy.ByStartSequence, OptStartSeq = 5 }, Timeout());

        var r = await ResetAsync("RS2", "new", """{"seq":2}""");
        Assert.Equal("""{"type":"io.nats.jetstream.api.v1.consumer_reset_response","error":{"code":400,"err_code":10204,"description":"invalid reset: not allowed"},"reset_seq":0}""", r.GetRawText());
        r = await ResetAsync("RS2", "from5", """{"seq":3}""");
        Assert.Equal("invalid reset: below start seq", r.GetProperty("error").GetProperty("description").GetString());
        r = await ResetAsync("RS2", "from5", """{"seq":6}""");
        Assert.Equal(6ul, r.GetProperty("reset_seq").GetUInt64());
        Assert.Equal(1ul, r.GetProperty("num_pending").GetUInt64());
        // Back to the ack floor is always allowed.
        r = await ResetAsync("RS2", "new", "");
        Assert.Equal(7ul, r.GetProperty("reset_seq").GetUInt64());
        r = await ResetAsync("RS2", "new", "{bad");
        Assert.Equal(10025, r.GetProperty("error").GetProperty("err_code").GetInt32());
        Assert.Equal(0ul, r.GetProperty("reset_seq").GetUInt64());
        r = await ResetAsync("RS2", "new", "", new NatsHeaders { ["Nats-Required-Api-Level"] = "99" });
        Assert.Equal("""{"type":"io.nats.jetstream.api.v1.consumer_reset_response","error":{"code":412,"err_code":10185,"description":"JetStream minimum api level required"},"reset_seq":0}""", r.GetRawText());

        // nats-server 2.14.5 subscribes the subject per consumer, and its $JS.API import takes (and drops) a request
        // for a missing one: no answer, not even the no-responders status (probed against 2.14.5).
        foreach (var (stream, consumer) in new[] { ("RS2", "missing"), ("NOPE", "c") })
        {
            await Assert.ThrowsAsync<NatsNoReplyException>(async () => await T.Nats.RequestAsync<byte[], byte[]>(
                $"$JS.API.CONSUMER.RESET.{stream}.{consumer}", [], replyOpts: new NatsSubOpts { Timeout = TimeSpan.FromMilliseconds(500) }, cancellationToken: Timeout()));
        }
    }
}
