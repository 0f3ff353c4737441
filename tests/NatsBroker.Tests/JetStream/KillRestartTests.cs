using NATS.Client.Core;
using NATS.Client.JetStream;
using NATS.Client.JetStream.Models;
using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;

namespace NatsBroker.Tests.JetStream;

/// <summary>kill -9 of the broker process: with sync_interval: always every acknowledged publish is kept, and every ack once the consumer's state was written.</summary>
public sealed class KillRestartTests(ITestOutputHelper output)
{
    [Fact]
    public async Task Acknowledged_publishes_and_acks_survive_kill_9_under_sync_always()
    {
        var dir = Path.Combine(Path.GetTempPath(), "natsbroker-js-tests", Guid.NewGuid().ToString("N"));
        try
        {
            var config = $"jetstream {{ store_dir: \"{dir}\", sync_interval: always }}\n";
            await using var server = await ServerProcess.StartAsync(ServerKind.Ours, config, output);
            await using (var nats = new NatsConnection(new NatsOpts { Url = server.Url }))
            {
                var js = new NatsJSContext(nats);
                await js.CreateStreamAsync(new StreamConfig("K", ["k.>"]));
                for (int i = 1; i <= 50; i++) (await js.PublishAsync($"k.{i % 5}", i)).EnsureSuccess();
                var c = await js.CreateOrUpdateConsumerAsync("K", new ConsumerConfig("d") { AckPolicy = ConsumerConfigAckPolicy.Explicit });
                await foreach (var m in c.FetchAsync<int>(new NatsJSFetchOpts { MaxMsgs = 10, Expires = TimeSpan.FromSeconds(2) }))
                {
                    await m.AckAsync(new AckOpts { DoubleAck = true });
                }
            }
            // Consumer state is written by the store's flush loop within 100 ms under sync always (nats-server's consumer
            // flusher writes about 10 times a second): an ack is durable after that, not when it is confirmed.
            await Task.Delay(500);
            await server.RestartAsync(hard: true);
            await using (var nats = new NatsConnection(new NatsOpts { Url = server.Url }))
            {
                var js = new NatsJSContext(nats);
                var s = await js.GetStreamAsync("K");
                Assert.Equal(50, s.Info.State.Messages);
                var c = await js.GetConsumerAsync("K", "d");
                Assert.Equal(10ul, c.Info.AckFloor.StreamSeq);
                var next = await c.NextAsync<int>(opts: new NatsJSNextOpts { Expires = TimeSpan.FromSeconds(2) });
                Assert.Equal(11, next!.Data);
            }
        }
        finally
        {
            try { Directory.Delete(dir, recursive: true); } catch (IOException) { }
        }
    }
}
