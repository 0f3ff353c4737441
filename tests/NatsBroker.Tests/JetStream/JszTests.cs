using NATS.Client.Core;
using NATS.Client.JetStream;
using NATS.Client.JetStream.Models;
using NatsBroker.Tests.Monitoring;

namespace NatsBroker.Tests.JetStream;

/// <summary>/jsz and /varz report JetStream usage: streams, consumers, messages, bytes, API calls.</summary>
public sealed class JszTests
{
    [Fact]
    public async Task Jsz_counts_streams_consumers_and_messages()
    {
        var dir = Path.Combine(Path.GetTempPath(), "natsbroker-js-tests", Guid.NewGuid().ToString("N"));
        try
        {
            await using var broker = await MonitoredBroker.StartAsync(o =>
            {
                o.JetStream = true;
                o.StoreDir = dir;
            });
            await using var nats = new NatsConnection(new NatsOpts { Url = $"nats://127.0.0.1:{broker.ClientPort}" });
            var js = new NatsJSContext(nats);
            await js.CreateStreamAsync(new StreamConfig("M", ["m.>"]) { Storage = StreamConfigStorage.Memory });
            await js.CreateStreamAsync(new StreamConfig("F", ["f.>"]));
            for (int i = 0; i < 3; i++) (await js.PublishAsync("m.x", "abc")).EnsureSuccess();
            (await js.PublishAsync("f.x", "abc")).EnsureSuccess();
            await js.CreateOrUpdateConsumerAsync("F", new ConsumerConfig("c"));

            var jsz = await broker.GetJsonAsync("/jsz");
            Assert.Equal(2, jsz.GetProperty("streams").GetInt32());
            Assert.Equal(1, jsz.GetProperty("consumers").GetInt32());
            Assert.Equal(4, jsz.GetProperty("messages").GetInt64());
            Assert.True(jsz.GetProperty("memory").GetInt64() > 0);
            Assert.True(jsz.GetProperty("storage").GetInt64() > 0);
            Assert.True(jsz.GetProperty("api").GetProperty("total").GetInt64() >= 3);
            var varz = await broker.GetJsonAsync("/varz");
            Assert.True(varz.GetProperty("jetstream").GetProperty("stats").GetProperty("api").GetProperty("total").GetInt64() >= 3);
        }
        finally
        {
            try { Directory.Delete(dir, recursive: true); } catch (IOException) { }
        }
    }
}
