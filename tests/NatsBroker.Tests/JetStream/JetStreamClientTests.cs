using NATS.Client.Core;
using NATS.Client.JetStream;
using NATS.Client.JetStream.Models;

namespace NatsBroker.Tests.JetStream;

/// <summary>NATS.Net 3.3.2's JetStream client against our broker: streams, publish, pull and push consumers.</summary>
public sealed class JetStreamClientTests
{
    private static CancellationToken Timeout(int seconds = 10) => new CancellationTokenSource(TimeSpan.FromSeconds(seconds)).Token;

    [Fact]
    public async Task Info_advertises_jetstream_and_account_info_answers()
    {
        await using var t = await JsTestServer.StartAsync();
        Assert.True(t.Nats.ServerInfo!.JetStreamAvailable);
        var info = await t.Js.GetAccountInfoAsync(Timeout());
        Assert.Equal(0, info.Streams);
    }

    [Fact]
    public async Task Create_publish_info_and_delete_a_stream()
    {
        await using var t = await JsTestServer.StartAsync();
        var stream = await t.Js.CreateStreamAsync(new StreamConfig("ORDERS", ["orders.>"]), Timeout());
        Assert.Equal("ORDERS", stream.Info.Config.Name);
        Assert.Equal(StreamConfigStorage.File, stream.Info.Config.Storage);

        for (int i = 1; i <= 5; i++)
        {
            var ack = await t.Js.PublishAsync($"orders.{i}", $"order {i}", cancellationToken: Timeout());
            ack.EnsureSuccess();
            Assert.Equal("ORDERS", ack.Stream);
            Assert.Equal((ulong)i, ack.Seq);
        }
        await stream.RefreshAsync(Timeout());
        Assert.Equal(5, stream.Info.State.Messages);
        Assert.Equal(5ul, stream.Info.State.LastSeq);

        var names = new List<string>();
        await foreach (var n in t.Js.ListStreamNamesAsync(cancellationToken: Timeout())) names.Add(n);
        Assert.Equal(["ORDERS"], names);

        Assert.True(await t.Js.DeleteStreamAsync("ORDERS", Timeout()));
        var ex = await Assert.ThrowsAsync<NatsJSApiException>(async () => await t.Js.GetStreamAsync("ORDERS", cancellationToken: Timeout()));
        Assert.Equal(404, ex.Error.Code);
        Assert.Equal(10059, ex.Error.ErrCode);
        Assert.Equal("stream not found", ex.Error.Description);
    }

    [Fact]
    public async Task Overlapping_subjects_and_conflicting_config_get_nats_server_errors()
    {
        await using var t = await JsTestServer.StartAsync();
        await t.Js.CreateStreamAsync(new StreamConfig("A", ["a.>"]), Timeout());
        var overlap = await Assert.ThrowsAsync<NatsJSApiException>(async () => await t.Js.CreateStreamAsync(new StreamConfig("B", ["a.b"]), Timeout()));
        Assert.Equal(10065, overlap.Error.ErrCode);
        var exists = await Assert.ThrowsAsync<NatsJSApiException>(async () => await t.Js.CreateStreamAsync(new StreamConfig("A", ["a.>", "x"]), Timeout()));
        Assert.Equal(10058, exists.Error.ErrCode);
        // The same config again is not an error.
        await t.Js.CreateStreamAsync(new StreamConfig("A", ["a.>"]), Timeout());
    }

    [Fact]
    public async Task Msg_id_dedupe_and_expected_last_sequence()
    {
        await using var t = await JsTestServer.StartAsync();
        await t.Js.CreateStreamAsync(new StreamConfig("D", ["d.>"]), Timeout());
        var first = await t.Js.PublishAsync("d.1", "x", opts: new NatsJSPubOpts { MsgId = "m1" }, cancellationToken: Timeout());
        var again = await t.Js.PublishAsync("d.1", "x", opts: new NatsJSPubOpts { MsgId = "m1" }, cancellationToken: Timeout());
        Assert.False(first.Duplicate);
        Assert.True(again.Duplicate);
        Assert.Equal(first.Seq, again.Seq);

        var wrong = await t.Js.PublishAsync("d.2", "y", opts: new NatsJSPubOpts { ExpectedLastSequence = 7 }, cancellationToken: Timeout());
        Assert.NotNull(wrong.Error);
        Assert.Equal(10071, wrong.Error!.ErrCode);
        Assert.Equal("wrong last sequence: 1", wrong.Error.Description);
        var right = await t.Js.PublishAsync("d.2", "y", opts: new NatsJSPubOpts { ExpectedLastSequence = 1 }, cancellationToken: Timeout());
        right.EnsureSuccess();
        Assert.Equal(2ul, right.Seq);
    }

    [Fact]
    public async Task Durable_pull_consumer_fetch_and_ack()
    {
        await using var t = await JsTestServer.StartAsync();
        await t.Js.CreateStreamAsync(new StreamConfig("P", ["p.>"]), Timeout());
        for (int i = 0; i < 10; i++) (await t.Js.PublishAsync($"p.{i}", i, cancellationToken: Timeout())).EnsureSuccess();
        var consumer = await t.Js.CreateOrUpdateConsumerAsync("P", new ConsumerConfig("worker") { AckPolicy = ConsumerConfigAckPolicy.Explicit }, Timeout());
        Assert.Equal(10ul, consumer.Info.NumPending);

        var got = new List<int>();
        await foreach (var msg in consumer.FetchAsync<int>(new NatsJSFetchOpts { MaxMsgs = 4, Expires = TimeSpan.FromSeconds(2) }, cancellationToken: Timeout()))
        {
            got.Add(msg.Data);
            await msg.AckAsync(cancellationToken: Timeout());
        }
        Assert.Equal([0, 1, 2, 3], got);
        await foreach (var msg in consumer.FetchAsync<int>(new NatsJSFetchOpts { MaxMsgs = 100, Expires = TimeSpan.FromSeconds(1) }, cancellationToken: Timeout()))
        {
            got.Add(msg.Data);
            await msg.AckAsync(new AckOpts { DoubleAck = true }, cancellationToken: Timeout());
        }
        Assert.Equal(Enumerable.Range(0, 10), got);
        await consumer.RefreshAsync(Timeout());
        Assert.Equal(0ul, consumer.Info.NumPending);
        Assert.Equal(0, consumer.Info.NumAckPending);
        Assert.Equal(10ul, consumer.Info.AckFloor.StreamSeq);
    }

    [Fact]
    public async Task Fetch_no_wait_on_an_empty_stream_ends_at_once()
    {
        await using var t = await JsTestServer.StartAsync();
        await t.Js.CreateStreamAsync(new StreamConfig("E", ["e"]), Timeout());
        var consumer = await t.Js.CreateOrUpdateConsumerAsync("E", new ConsumerConfig("c"), Timeout());
        int n = 0;
        await foreach (var _ in consumer.FetchNoWaitAsync<string>(new NatsJSFetchOpts { MaxMsgs = 10 }, cancellationToken: Timeout())) n++;
        Assert.Equal(0, n);
    }

    [Fact]
    public async Task Consume_receives_messages_published_later()
    {
        await using var t = await JsTestServer.StartAsync();
        await t.Js.CreateStreamAsync(new StreamConfig("C", ["c.*"]), Timeout());
        var consumer = await t.Js.CreateOrUpdateConsumerAsync("C", new ConsumerConfig("live"), Timeout());
        var cts = new CancellationTokenSource(TimeSpan.FromSeconds(15));
        var received = new List<string>();
        var consume = Task.Run(async () =>
        {
            await foreach (var msg in consumer.ConsumeAsync<string>(cancellationToken: cts.Token))
            {
                received.Add(msg.Subject + "=" + msg.Data);
                await msg.AckAsync(cancellationToken: cts.Token);
                if (received.Count == 3) break;
            }
        });
        await Task.Delay(200);
        for (int i = 0; i < 3; i++) (await t.Js.PublishAsync($"c.{i}", $"v{i}", cancellationToken: Timeout())).EnsureSuccess();
        await consume.WaitAsync(TimeSpan.FromSeconds(15));
        Assert.Equal(["c.0=v0", "c.1=v1", "c.2=v2"], received);
    }

    [Fact]
    public async Task Unacked_message_is_redelivered_after_ack_wait_and_nak_redelivers_at_once()
    {
        await using var t = await JsTestServer.StartAsync();
        await t.Js.CreateStreamAsync(new StreamConfig("R", ["r"]), Timeout());
        (await t.Js.PublishAsync("r", "once", cancellationToken: Timeout())).EnsureSuccess();
        var consumer = await t.Js.CreateOrUpdateConsumerAsync("R", new ConsumerConfig("c") { AckWait = TimeSpan.FromMilliseconds(500) }, Timeout());

        var first = await consumer.NextAsync<string>(opts: new NatsJSNextOpts { Expires = TimeSpan.FromSeconds(2) }, cancellationToken: Timeout());
        Assert.NotNull(first);
        Assert.Equal(1ul, first!.Metadata!.Value.NumDelivered);
        // Not acked: comes back after ack_wait, with the delivery count raised.
        var second = await consumer.NextAsync<string>(opts: new NatsJSNextOpts { Expires = TimeSpan.FromSeconds(3) }, cancellationToken: Timeout());
        Assert.NotNull(second);
        Assert.Equal(2ul, second!.Metadata!.Value.NumDelivered);
        Assert.Equal(1ul, second.Metadata!.Value.Sequence.Stream);
        await second.NakAsync(cancellationToken: Timeout());
        var third = await consumer.NextAsync<string>(opts: new NatsJSNextOpts { Expires = TimeSpan.FromSeconds(2) }, cancellationToken: Timeout());
        Assert.NotNull(third);
        Assert.Equal(3ul, third!.Metadata!.Value.NumDelivered);
        await third.AckAsync(cancellationToken: Timeout());
    }

    [Fact]
    public async Task Ordered_consumer_reads_the_stream_in_order()
    {
        await using var t = await JsTestServer.StartAsync();
        await t.Js.CreateStreamAsync(new StreamConfig("O", ["o.>"]) { Storage = StreamConfigStorage.Memory }, Timeout());
        for (int i = 0; i < 50; i++) (await t.Js.PublishAsync($"o.{i % 3}", i, cancellationToken: Timeout())).EnsureSuccess();
        var ordered = await t.Js.CreateOrderedConsumerAsync("O", cancellationToken: Timeout());
        var got = new List<int>();
        await foreach (var msg in ordered.FetchAsync<int>(new NatsJSFetchOpts { MaxMsgs = 50, Expires = TimeSpan.FromSeconds(3) }, cancellationToken: Timeout()))
        {
            got.Add(msg.Data);
        }
        Assert.Equal(Enumerable.Range(0, 50), got);
    }

    [Fact]
    public async Task Push_consumer_delivers_to_its_deliver_subject_with_the_original_subject()
    {
        await using var t = await JsTestServer.StartAsync();
        await t.Js.CreateStreamAsync(new StreamConfig("PUSH", ["push.>"]), Timeout());
        (await t.Js.PublishAsync("push.a", "1", cancellationToken: Timeout())).EnsureSuccess();
        (await t.Js.PublishAsync("push.b", "2", cancellationToken: Timeout())).EnsureSuccess();
        await using var sub = await t.Nats.SubscribeCoreAsync<string>("deliver.here", cancellationToken: Timeout());
        await t.Js.CreateOrUpdateConsumerAsync("PUSH", new ConsumerConfig("pc") { DeliverSubject = "deliver.here", AckPolicy = ConsumerConfigAckPolicy.None }, Timeout());
        var m1 = await sub.Msgs.ReadAsync(Timeout());
        var m2 = await sub.Msgs.ReadAsync(Timeout());
        Assert.Equal(("push.a", "1"), (m1.Subject, m1.Data));
        Assert.Equal(("push.b", "2"), (m2.Subject, m2.Data));
        Assert.StartsWith("$JS.ACK.PUSH.pc.1.1.1.", m1.ReplyTo);
    }

    [Fact]
    public async Task Get_and_delete_messages_purge_by_subject()
    {
        await using var t = await JsTestServer.StartAsync();
        var stream = await t.Js.CreateStreamAsync(new StreamConfig("G", ["g.>"]), Timeout());
        (await t.Js.PublishAsync("g.a", "a1", cancellationToken: Timeout())).EnsureSuccess();
        (await t.Js.PublishAsync("g.b", "b1", cancellationToken: Timeout())).EnsureSuccess();
        (await t.Js.PublishAsync("g.a", "a2", cancellationToken: Timeout())).EnsureSuccess();
        var last = await stream.GetAsync(new StreamMsgGetRequest { LastBySubj = "g.a" }, Timeout());
        Assert.Equal(3ul, last.Message.Seq);
        Assert.Equal("g.a", last.Message.Subject);
        var del = await stream.DeleteMessageAsync(new StreamMsgDeleteRequest { Seq = 2 }, Timeout());
        Assert.True(del.Success);
        var gone = await Assert.ThrowsAsync<NatsJSApiException>(async () => await stream.GetAsync(new StreamMsgGetRequest { Seq = 2 }, Timeout()));
        Assert.Equal(10037, gone.Error.ErrCode);
        var purge = await stream.PurgeAsync(new StreamPurgeRequest { Filter = "g.a" }, Timeout());
        Assert.Equal(2, (long)purge.Purged);
        await stream.RefreshAsync(Timeout());
        Assert.Equal(0, stream.Info.State.Messages);
    }

    [Fact]
    public async Task Work_queue_removes_acked_messages()
    {
        await using var t = await JsTestServer.StartAsync();
        var stream = await t.Js.CreateStreamAsync(new StreamConfig("WQ", ["wq"]) { Retention = StreamConfigRetention.Workqueue }, Timeout());
        for (int i = 0; i < 3; i++) (await t.Js.PublishAsync("wq", i, cancellationToken: Timeout())).EnsureSuccess();
        var consumer = await t.Js.CreateOrUpdateConsumerAsync("WQ", new ConsumerConfig("w") { AckPolicy = ConsumerConfigAckPolicy.Explicit }, Timeout());
        await foreach (var msg in consumer.FetchAsync<int>(new NatsJSFetchOpts { MaxMsgs = 3, Expires = TimeSpan.FromSeconds(2) }, cancellationToken: Timeout()))
        {
            await msg.AckAsync(new AckOpts { DoubleAck = true }, cancellationToken: Timeout());
        }
        await stream.RefreshAsync(Timeout());
        Assert.Equal(0, stream.Info.State.Messages);
        var second = await Assert.ThrowsAsync<NatsJSApiException>(async () =>
            await t.Js.CreateOrUpdateConsumerAsync("WQ", new ConsumerConfig("w2") { AckPolicy = ConsumerConfigAckPolicy.Explicit }, Timeout()));
        Assert.Equal(10099, second.Error.ErrCode);
    }

    [Fact]
    public async Task Backoff_schedule_sets_the_redelivery_delay_and_max_deliver_stops_redelivery()
    {
        await using var t = await JsTestServer.StartAsync();
        await t.Js.CreateStreamAsync(new StreamConfig("BO", ["bo"]), Timeout());
        (await t.Js.PublishAsync("bo", "x", cancellationToken: Timeout())).EnsureSuccess();
        var consumer = await t.Js.CreateOrUpdateConsumerAsync("BO", new ConsumerConfig("c")
        {
            AckWait = TimeSpan.FromSeconds(30),
            Backoff = [TimeSpan.FromMilliseconds(200), TimeSpan.FromMilliseconds(300)],
            MaxDeliver = 3,
        }, Timeout());
        var deliveries = new List<ulong>();
        for (int i = 0; i < 3; i++)
        {
            // With ack_wait 30 s these arrive only because the backoff schedule (200 ms, 300 ms) applies.
            var m = await consumer.NextAsync<string>(opts: new NatsJSNextOpts { Expires = TimeSpan.FromSeconds(3) }, cancellationToken: Timeout());
            Assert.NotNull(m);
            deliveries.Add(m!.Metadata!.Value.NumDelivered);
        }
        Assert.Equal([1ul, 2ul, 3ul], deliveries);
        // max_deliver 3 reached: no fourth delivery.
        var none = await consumer.NextAsync<string>(opts: new NatsJSNextOpts { Expires = TimeSpan.FromSeconds(1) }, cancellationToken: Timeout());
        Assert.Null(none);
    }
}
