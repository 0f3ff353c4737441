using System.Text.RegularExpressions;
using MQTTnet;
using MQTTnet.Protocol;
using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Gateways.Mqtt;

/// <summary>The MQTT gateway killed (-9) and restarted by the core: sessions and their QoS 1 messages live in JetStream.</summary>
[Collection("Gateways")]
public sealed partial class MqttGatewayRestartTests(ITestOutputHelper output)
{
    [SkippableFact]
    public async Task A_persistent_session_survives_kill_9_of_the_gateway()
    {
        Prerequisites.RequireServer(ServerKind.Ours, output);
        await using var s = await MqttTestServer.StartAsync(ServerKind.Ours, output, "no_auth_user: alice\n  ack_wait: \"2s\"");
        string id = "restart-" + Guid.NewGuid().ToString("N")[..6];
        using (var first = await s.ConnectAsync(id, configure: b => b.WithCleanSession(false)))
        {
            await first.SubscribeAsync(new MqttClientSubscribeOptionsBuilder().WithTopicFilter("r/+", MqttQualityOfServiceLevel.AtLeastOnce).Build());
            await first.DisconnectAsync();
        }
        var pid = int.Parse(GatewayPid().Matches(s.Server.Output)[^1].Groups[1].Value, System.Globalization.CultureInfo.InvariantCulture);
        System.Diagnostics.Process.GetProcessById(pid).Kill();
        output.WriteLine($"killed gateway pid {pid}");

        // The core restarts it (back-off 1 s); the publisher retries until it is back.
        IMqttClient? publisher = null;
        var until = DateTime.UtcNow.AddSeconds(30);
        while (publisher is null)
        {
            try
            {
                publisher = await s.ConnectAsync("pub-" + Guid.NewGuid().ToString("N")[..6]);
            }
            catch (Exception ex) when (DateTime.UtcNow < until && ex is MQTTnet.Exceptions.MqttCommunicationException or OperationCanceledException or MQTTnet.Adapter.MqttConnectingFailedException)
            {
                await Task.Delay(200);
            }
        }
        using (publisher)
        {
            var ack = await publisher.PublishAsync(new MqttApplicationMessageBuilder().WithTopic("r/x").WithPayload("after restart")
                .WithQualityOfServiceLevel(MqttQualityOfServiceLevel.AtLeastOnce).Build());
            Assert.True(ack.IsSuccess);
        }
        using var again = new MqttClientFactory().CreateMqttClient();
        var received = new Received(again);
        var result = await s.ConnectAsync(again, id, configure: b => b.WithCleanSession(false));
        Assert.True(result.IsSessionPresent);
        var m = await received.NextAsync(30);
        Assert.Equal("r/x", m.Topic);
        Assert.Equal("after restart", m.ConvertPayloadToString());
    }

    [GeneratedRegex(@"Started the mqtt gateway \(pid (\d+)\)")]
    private static partial Regex GatewayPid();
}
