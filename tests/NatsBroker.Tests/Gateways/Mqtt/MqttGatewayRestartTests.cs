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
        KillGateway(s);

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

    [SkippableFact]
    public async Task Deliveries_in_flight_at_a_kill_9_come_again_and_a_released_qos2_message_only_as_PUBREL()
    {
        Prerequisites.RequireServer(ServerKind.Ours, output);
        await using var s = await MqttTestServer.StartAsync(ServerKind.Ours, output, "no_auth_user: alice\n  ack_wait: \"2s\"");
        string id = "inflight-" + Guid.NewGuid().ToString("N")[..6];
        int qos2Id;
        using (var raw = await RawMqtt.ConnectAsync(s.MqttPort, id, cleanSession: false))
        {
            Assert.Equal(0, await raw.ReadConnAckAsync());
            Assert.Equal(2, await raw.SubscribeAsync("f/+", 2));
            using (var publisher = await s.ConnectAsync("pub-" + Guid.NewGuid().ToString("N")[..6]))
            {
                await publisher.PublishAsync(new MqttApplicationMessageBuilder().WithTopic("f/one").WithPayload("one")
                    .WithQualityOfServiceLevel(MqttQualityOfServiceLevel.AtLeastOnce).Build());
                await publisher.PublishAsync(new MqttApplicationMessageBuilder().WithTopic("f/two").WithPayload("two")
                    .WithQualityOfServiceLevel(MqttQualityOfServiceLevel.ExactlyOnce).Build());
            }
            // "one" is left unacknowledged; "two" gets its PUBREC (the client has it) and the server's PUBREL.
            var first = new Dictionary<string, (int Qos, int Id)>();
            while (first.Count < 2)
            {
                var (header, body) = await raw.ReadPacketAsync();
                var p = RawMqtt.ParsePublish(header, body);
                first[p.Payload] = (p.Qos, p.PacketId);
            }
            Assert.Equal(1, first["one"].Qos);
            Assert.Equal(2, first["two"].Qos);
            qos2Id = first["two"].Id;
            await raw.AcknowledgeAsync(0x50, qos2Id);
            var (relHeader, relBody) = await raw.ReadPacketAsync();
            Assert.Equal(0x62, relHeader);
            Assert.Equal(qos2Id, relBody[0] << 8 | relBody[1]);

            KillGateway(s);
        }

        // Back through the restarted gateway (the core restarts it): PUBREL again for "two", "one" again, and never
        // "two" as a PUBLISH.
        RawMqtt? again = null;
        var until = DateTime.UtcNow.AddSeconds(30);
        while (again is null)
        {
            try
            {
                again = await RawMqtt.ConnectAsync(s.MqttPort, id, cleanSession: false);
                Assert.Equal(0, await again.ReadConnAckAsync());
            }
            catch (Exception ex) when (DateTime.UtcNow < until && ex is System.Net.Sockets.SocketException or IOException or TimeoutException or EndOfStreamException)
            {
                again?.Dispose();
                again = null;
                await Task.Delay(200);
            }
        }
        using (again)
        {
            bool released = false, one = false;
            var deadline = DateTime.UtcNow.AddSeconds(20);
            while (!(released && one) && DateTime.UtcNow < deadline)
            {
                var (header, body) = await again.ReadPacketAsync(20);
                if (header == 0x62)
                {
                    Assert.Equal(qos2Id, body[0] << 8 | body[1]);
                    released = true;
                    await again.AcknowledgeAsync(0x70, qos2Id);
                    continue;
                }
                var p = RawMqtt.ParsePublish(header, body);
                Assert.NotEqual("two", p.Payload);
                Assert.Equal("one", p.Payload);
                one = true;
                await again.AcknowledgeAsync(0x40, p.PacketId);
            }
            Assert.True(released, "no PUBREL for the released QoS 2 message after the restart");
            Assert.True(one, "the unacknowledged QoS 1 message did not come again");
            // Past another ack_wait: still no PUBLISH of "two" (and "one" is not sent again once acknowledged).
            await Assert.ThrowsAnyAsync<OperationCanceledException>(() => again.ReadPacketAsync(5));
        }
    }

    [GeneratedRegex(@"Started the mqtt gateway \(pid (\d+)\)")]
    private static partial Regex GatewayPid();

    /// <summary>Kills the MQTT gateway the core started last (kill -9; the core restarts it after its back-off).</summary>
    private void KillGateway(MqttTestServer s)
    {
        var pid = int.Parse(GatewayPid().Matches(s.Server.Output)[^1].Groups[1].Value, System.Globalization.CultureInfo.InvariantCulture);
        System.Diagnostics.Process.GetProcessById(pid).Kill();
        output.WriteLine($"killed gateway pid {pid}");
    }
}
