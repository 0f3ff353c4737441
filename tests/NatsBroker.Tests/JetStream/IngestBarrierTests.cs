using System.Text;
using System.Text.Json;
using NATS.Client.Core;
using NATS.Client.JetStream.Models;
using NatsBroker.Tests.Infrastructure;

namespace NatsBroker.Tests.JetStream;

/// <summary>
/// Core publishes to a stream followed by an API request from the same connection: the answer reflects them
/// (core/JetStream/JsStream.Barrier.cs). nats.js's "jetstream - jsm" test does exactly this: two core publishes, a
/// flush, then stream info expecting two messages.
/// </summary>
public sealed class IngestBarrierTests
{
    private static CancellationToken Timeout(int seconds = 10) => new CancellationTokenSource(TimeSpan.FromSeconds(seconds)).Token;

    /// <summary>Publishes and the request in one write: the read loop queues both in the same pass.</summary>
    [Fact]
    public async Task Stream_info_in_the_same_read_as_the_publishes_counts_them()
    {
        await using var t = await JsTestServer.StartAsync();
        await t.Js.CreateStreamAsync(new StreamConfig("RAW", ["raw.>"]) { Storage = StreamConfigStorage.Memory }, Timeout());
        await using var c = await RawClient.ConnectAsync("127.0.0.1", t.Server.Port);
        await c.HandshakeAsync();
        await c.SendLineAsync("SUB reply.info 1");
        var batch = new StringBuilder();
        for (int i = 0; i < 2000; i++) batch.Append("PUB raw.x 1\r\nx\r\n");
        batch.Append("PUB $JS.API.STREAM.INFO.RAW reply.info 0\r\n\r\n");
        for (int round = 1; round <= 10; round++)
        {
            await c.SendAsync(batch.ToString());
            var reply = await c.ExpectMessageAsync(TimeSpan.FromSeconds(10), skipPongs: true);
            using var info = JsonDocument.Parse(reply.Payload);
            Assert.Equal(2000L * round, info.RootElement.GetProperty("state").GetProperty("messages").GetInt64());
        }
    }

    [Fact]
    public async Task Stream_info_and_direct_get_see_core_publishes_sent_before_them()
    {
        await using var t = await JsTestServer.StartAsync();
        var stream = await t.Js.CreateStreamAsync(new StreamConfig("BAR", ["bar.>"]) { Storage = StreamConfigStorage.Memory, AllowDirect = true }, Timeout());
        long expected = 0;
        for (int round = 0; round < 50; round++)
        {
            // Enough messages that the ingest worker is still busy when the request arrives without the barrier.
            for (int i = 0; i < 200; i++) await t.Nats.PublishAsync($"bar.{round}", i, cancellationToken: Timeout());
            expected += 200;
            await stream.RefreshAsync(Timeout());
            Assert.Equal(expected, stream.Info.State.Messages);
        }
        var last = await stream.GetDirectAsync<int>(new StreamMsgGetRequest { LastBySubj = "bar.49" }, cancellationToken: Timeout());
        Assert.Equal(199, last.Data);
    }
}
