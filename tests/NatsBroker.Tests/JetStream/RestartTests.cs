using NATS.Client.JetStream;
using NATS.Client.JetStream.Models;
using NATS.Client.KeyValueStore;

namespace NatsBroker.Tests.JetStream;

/// <summary>File streams, durable consumers and KV buckets survive a broker restart on the same store directory.</summary>
public sealed class RestartTests
{
    private static CancellationToken Timeout(int seconds = 10) => new CancellationTokenSource(TimeSpan.FromSeconds(seconds)).Token;

    [Fact]
    public async Task Messages_and_consumer_ack_floor_survive_a_restart()
    {
        string dir = Path.Combine(Path.GetTempPath(), "natsbroker-js-tests", Guid.NewGuid().ToString("N"));
        try
        {
            var first = await JsTestServer.StartAsync(dir);
            await first.Js.CreateStreamAsync(new StreamConfig("KEEP", ["keep.>"]), Timeout());
            (await first.Js.PublishAsync("keep.id", 0, opts: new NatsJSPubOpts { MsgId = "once" }, cancellationToken: Timeout())).EnsureSuccess();
            Assert.True((await first.Js.PurgeStreamAsync("KEEP", new StreamPurgeRequest(), Timeout())).Success);
            (await first.Js.PublishAsync("keep.id", 0, opts: new NatsJSPubOpts { MsgId = "kept" }, cancellationToken: Timeout())).EnsureSuccess();
            for (int i = 1; i <= 19; i++) (await first.Js.PublishAsync($"keep.{i}", i, cancellationToken: Timeout())).EnsureSuccess();
            var consumer = await first.Js.CreateOrUpdateConsumerAsync("KEEP", new ConsumerConfig("durable") { AckPolicy = ConsumerConfigAckPolicy.Explicit }, Timeout());
            await foreach (var msg in consumer.FetchAsync<int>(new NatsJSFetchOpts { MaxMsgs = 8, Expires = TimeSpan.FromSeconds(2) }, cancellationToken: Timeout()))
            {
                await msg.AckAsync(new AckOpts { DoubleAck = true }, cancellationToken: Timeout());
            }
            var kv = await new NatsKVContext(first.Js).CreateStoreAsync("settings", Timeout());
            await kv.PutAsync("mode", "fast", cancellationToken: Timeout());
            await first.StopKeepingStoreAsync();

            await using var second = await JsTestServer.StartAsync(dir);
            var stream = await second.Js.GetStreamAsync("KEEP", cancellationToken: Timeout());
            Assert.Equal(20, stream.Info.State.Messages);
            Assert.Equal(21ul, stream.Info.State.LastSeq);
            // The duplicate window is rebuilt from the stored Nats-Msg-Id headers.
            var dup = await second.Js.PublishAsync("keep.id", 0, opts: new NatsJSPubOpts { MsgId = "kept" }, cancellationToken: Timeout());
            Assert.True(dup.Duplicate);
            Assert.Equal(2ul, dup.Seq);
            var again = await second.Js.GetConsumerAsync("KEEP", "durable", Timeout());
            // Delivery started at stream seq 2 (the purge removed seq 1): 8 acked messages put the floor at 9.
            Assert.Equal(9ul, again.Info.AckFloor.StreamSeq);
            Assert.Equal(9ul, again.Info.Delivered.StreamSeq);
            Assert.Equal(12ul, again.Info.NumPending);
            var next = await again.NextAsync<int>(opts: new NatsJSNextOpts { Expires = TimeSpan.FromSeconds(2) }, cancellationToken: Timeout());
            Assert.NotNull(next);
            Assert.Equal(8, next!.Data);

            // Publishing continues after the last sequence.
            var ack = await second.Js.PublishAsync("keep.more", 21, cancellationToken: Timeout());
            Assert.Equal(22ul, ack.Seq);

            var kv2 = await new NatsKVContext(second.Js).GetStoreAsync("settings", Timeout());
            Assert.Equal("fast", (await kv2.GetEntryAsync<string>("mode", cancellationToken: Timeout())).Value);
        }
        finally
        {
            try { Directory.Delete(dir, recursive: true); } catch (IOException) { }
        }
    }

    [Fact]
    public async Task Memory_streams_do_not_survive_a_restart()
    {
        string dir = Path.Combine(Path.GetTempPath(), "natsbroker-js-tests", Guid.NewGuid().ToString("N"));
        try
        {
            var first = await JsTestServer.StartAsync(dir);
            await first.Js.CreateStreamAsync(new StreamConfig("MEM", ["mem"]) { Storage = StreamConfigStorage.Memory }, Timeout());
            await first.StopKeepingStoreAsync();
            await using var second = await JsTestServer.StartAsync(dir);
            var ex = await Assert.ThrowsAsync<NatsJSApiException>(async () => await second.Js.GetStreamAsync("MEM", cancellationToken: Timeout()));
            Assert.Equal(10059, ex.Error.ErrCode);
        }
        finally
        {
            try { Directory.Delete(dir, recursive: true); } catch (IOException) { }
        }
    }
}
