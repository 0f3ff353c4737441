using MQTTnet;
using MQTTnet.Protocol;
using NATS.NKeys;
using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Gateways.Mqtt;

/// <summary>
/// Two MQTT gateway processes on one core (as systemd runs them with <c>gateways { managed: external }</c>), each on
/// its own port, sharing the sessions kept in JetStream: a client ID taken through one process ends its connection
/// through the other ([MQTT-3.1.4-2]), and the session moves with it.
/// </summary>
[Collection("Gateways")]
public sealed class MqttTwoProcessesTests(ITestOutputHelper output) : IDisposable
{
    private readonly ExternalGatewayProcesses _gateways = new(output);
    private readonly string _dir = Path.Combine(Path.GetTempPath(), "natsbroker-tests", "mqtt-two-" + Guid.NewGuid().ToString("N"));

    public void Dispose()
    {
        _gateways.Dispose();
        try { Directory.Delete(_dir, recursive: true); }
        catch (IOException) { }
        catch (UnauthorizedAccessException) { }
    }

    [SkippableFact]
    public async Task A_client_id_taken_through_another_process_ends_the_old_connection_and_moves_the_session()
    {
        Prerequisites.RequireServer(ServerKind.Ours, output);
        Directory.CreateDirectory(_dir);
        using var key = KeyPair.CreatePair(PrefixByte.User);
        int first = TestPorts.Next(), second = TestPorts.Next();
        var socket = Path.Combine(Path.GetTempPath(), $"nb-{Guid.NewGuid():N}"[..12] + ".sock");
        var config = $$"""
            server_name: mqtt_two
            unix_socket: "{{socket}}"
            jetstream { store_dir: "{{Path.Combine(_dir, "js")}}" }
            mqtt { port: {{first}}, no_auth_user: alice, ack_wait: "2s" }
            gateways { managed: external }
            proxies { trusted = [ { key: "{{key.GetPublicKey()}}" } ] }
            {{MqttTestServer.Users}}
            """;
        var configPath = Path.Combine(_dir, "two.conf");
        File.WriteAllText(configPath, config);
        await using var core = await ServerProcess.StartAsync(ServerKind.Ours, new ServerStartOptions { Config = config }, output);
        var (_, firstLog) = _gateways.Start("NatsBroker.MqttGateway.dll", configPath, first, key.GetSeed(), socket);
        var (_, secondLog) = _gateways.Start("NatsBroker.MqttGateway.dll", configPath, second, key.GetSeed(), socket);
        await ExternalGatewayProcesses.WaitFor(firstLog, "Listening for MQTT clients");
        await ExternalGatewayProcesses.WaitFor(secondLog, "Listening for MQTT clients");

        string id = "moving-" + Guid.NewGuid().ToString("N")[..6];
        var disconnected = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        using var old = new MqttClientFactory().CreateMqttClient();
        var oldReceived = new Received(old);
        old.DisconnectedAsync += _ =>
        {
            disconnected.TrySetResult();
            return Task.CompletedTask;
        };
        await ConnectAsync(old, first, id);
        await old.SubscribeAsync(new MqttClientSubscribeOptionsBuilder().WithTopicFilter("moving/+", MqttQualityOfServiceLevel.AtLeastOnce).Build());

        // The same client ID through the other process: the session is there, and the first connection is ended.
        using var moved = new MqttClientFactory().CreateMqttClient();
        var movedReceived = new Received(moved);
        var result = await ConnectAsync(moved, second, id);
        Assert.True(result.IsSessionPresent);
        await disconnected.Task.WaitAsync(TimeSpan.FromSeconds(10));
        Assert.False(old.IsConnected);
        Assert.True(moved.IsConnected);

        // The moved session's QoS 1 subscription delivers through the second process.
        using (var publisher = new MqttClientFactory().CreateMqttClient())
        {
            await ConnectAsync(publisher, first, "pub-" + Guid.NewGuid().ToString("N")[..6], persistent: false);
            await publisher.PublishAsync(new MqttApplicationMessageBuilder().WithTopic("moving/1").WithPayload("after the move")
                .WithQualityOfServiceLevel(MqttQualityOfServiceLevel.AtLeastOnce).Build());
        }
        var m = await movedReceived.NextAsync(15);
        Assert.Equal("moving/1", m.Topic);
        Assert.Equal("after the move", m.ConvertPayloadToString());
        Assert.True(await oldReceived.NothingWithinAsync(300));

        // Another client ID through the first process is left alone by the moved session's announcement, and stays.
        using var other = new MqttClientFactory().CreateMqttClient();
        await ConnectAsync(other, first, "other-" + Guid.NewGuid().ToString("N")[..6]);
        await Task.Delay(500);
        Assert.True(other.IsConnected);
        Assert.True(moved.IsConnected);
        lock (firstLog) Assert.Contains("connection to another gateway process has the same client ID", firstLog.ToString(), StringComparison.Ordinal);
    }

    private static async Task<MqttClientConnectResult> ConnectAsync(IMqttClient client, int port, string clientId, bool persistent = true)
    {
        var options = new MqttClientOptionsBuilder().WithTcpServer("127.0.0.1", port).WithClientId(clientId)
            .WithProtocolVersion(MQTTnet.Formatter.MqttProtocolVersion.V311).WithCleanSession(!persistent).WithTimeout(TimeSpan.FromSeconds(15)).Build();
        using var cts = new CancellationTokenSource(TimeSpan.FromSeconds(20));
        return await client.ConnectAsync(options, cts.Token);
    }
}
