using MQTTnet;
using MQTTnet.Protocol;
using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Gateways.Mqtt;

/// <summary>
/// [MQTT-4.4.0-1]: a client that reconnects to its persistent session gets its unacknowledged QoS 1 PUBLISH again
/// at once, with DUP set (paho.mqtt.testing's test_redelivery_on_reconnect). The gateway here has a long ack_wait,
/// so a JetStream redelivery (which is sent without DUP) cannot be what arrives.
/// </summary>
[Collection("Gateways")]
public sealed class MqttRedeliveryTests(ITestOutputHelper output)
{
    [SkippableFact]
    public async Task Unacknowledged_qos1_message_is_sent_again_with_dup_on_reconnect()
    {
        Prerequisites.RequireServer(ServerKind.Ours, output);
        await using var s = await MqttTestServer.StartAsync(ServerKind.Ours, null, "no_auth_user: alice\n  ack_wait: \"60s\"");
        string id = "redeliver-" + Guid.NewGuid().ToString("N")[..8];

        using (var first = new MqttClientFactory().CreateMqttClient())
        {
            var got = new TaskCompletionSource<MqttApplicationMessage>(TaskCreationOptions.RunContinuationsAsynchronously);
            first.ApplicationMessageReceivedAsync += e =>
            {
                e.AutoAcknowledge = false; // never PUBACK: the message stays in flight
                got.TrySetResult(e.ApplicationMessage);
                return Task.CompletedTask;
            };
            await s.ConnectAsync(first, id, configure: b => b.WithCleanSession(false));
            await first.SubscribeAsync(new MqttClientSubscribeOptionsBuilder().WithTopicFilter("redeliver/#", MqttQualityOfServiceLevel.AtLeastOnce).Build());
            using (var publisher = await s.ConnectAsync("pub-" + id))
            {
                var ack = await publisher.PublishAsync(new MqttApplicationMessageBuilder().WithTopic("redeliver/a").WithPayload("once")
                    .WithQualityOfServiceLevel(MqttQualityOfServiceLevel.AtLeastOnce).Build());
                Assert.True(ack.IsSuccess);
            }
            var original = await got.Task.WaitAsync(TimeSpan.FromSeconds(15));
            Assert.False(original.Dup);
            await first.DisconnectAsync();
        }

        using var again = new MqttClientFactory().CreateMqttClient();
        var received = new Received(again);
        var result = await s.ConnectAsync(again, id, configure: b => b.WithCleanSession(false));
        Assert.True(result.IsSessionPresent);
        var m = await received.NextAsync(15);
        Assert.Equal("redeliver/a", m.Topic);
        Assert.Equal("once", m.ConvertPayloadToString());
        Assert.True(m.Dup);
        await again.DisconnectAsync();
    }
}
