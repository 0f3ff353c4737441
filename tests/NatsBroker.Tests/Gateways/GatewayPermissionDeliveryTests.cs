using MQTTnet;
using MQTTnet.Protocol;
using NATS.Client.Core;
using NatsBroker.Tests.Auth;
using NatsBroker.Tests.Gateways.Mqtt;
using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Gateways;

/// <summary>
/// Issue 38 through the protocol gateways: an end user of the websocket or MQTT gateway is an ordinary client of
/// the core with that user's permissions, so a subscribe deny narrower than an allowed wildcard subscription keeps
/// its subjects out of the deliveries (client.go deliverMsg checkDenySub; for MQTT also the QoS 1/2 JetStream
/// deliveries and the retained messages, mqtt.go processJSConsumer / serializeRetainedMsgsForSub). Ours (core and
/// its supervised gateway) and nats-server 2.14.5 (websocket and mqtt in process) give the same.
/// </summary>
[Collection("Gateways")]
public sealed class GatewayPermissionDeliveryTests(ITestOutputHelper output)
{
    private const string Users = """
        authorization { users = [
          {user: d, password: p, permissions: { subscribe: { deny: ["pub.secret.>"] } }}
          {user: s, password: p}
        ] }
        """;

    private sealed class Running(IAsyncDisposable? ours, IDisposable? oracle, int natsPort, int port, string? dir) : IAsyncDisposable
    {
        public int NatsPort => natsPort;
        public int Port => port;

        public async ValueTask DisposeAsync()
        {
            if (ours is not null) await ours.DisposeAsync();
            oracle?.Dispose();
            if (dir is not null)
            {
                try { Directory.Delete(dir, recursive: true); }
                catch (IOException) { }
                catch (UnauthorizedAccessException) { }
            }
        }
    }

    /// <summary>Ours or nats-server 2.14.5 with <paramref name="block"/> (given its port) and <see cref="Users"/>.</summary>
    private async Task<Running> StartAsync(string server, Func<int, string> block, bool jetStream = false)
    {
        string? oracle = server == "2.14.5" ? Prerequisites.RequireOracle214(output) : null;
        if (oracle is null) Prerequisites.RequireServer(ServerKind.Ours, output);
        int port = TestPorts.Next();
        string? dir = null;
        string config = block(port) + "\n" + Users;
        if (jetStream)
        {
            dir = Directory.CreateTempSubdirectory("natsbroker-permgw-").FullName;
            config = $$"""
                server_name: permgw
                jetstream { store_dir: "{{dir}}" }
                {{config}}
                """;
        }
        Running running;
        if (oracle is not null)
        {
            var go = new NatsServerOracle(config, oracle);
            running = new Running(null, go, go.Port, port, dir);
        }
        else
        {
            var ours = await ServerProcess.StartAsync(ServerKind.Ours, new ServerStartOptions { Config = config, Port = TestPorts.Next() }, output);
            running = new Running(ours, null, ours.Port, port, dir);
        }
        await GatewayTestHelpers.WaitListeningAsync(port);
        return running;
    }

    private static NatsConnection Nats(string url, string user) => new(new NatsOpts
    {
        Url = url,
        AuthOpts = new NatsAuthOpts { Username = user, Password = "p" },
        ConnectTimeout = TimeSpan.FromSeconds(10),
    });

    [SkippableTheory]
    [InlineData("ours")]
    [InlineData("2.14.5")]
    public async Task A_websocket_user_with_a_narrower_subscribe_deny_gets_only_allowed_subjects(string server)
    {
        await using var s = await StartAsync(server, port => $$"""
            websocket {
              port: {{port}}
              no_tls: true
            }
            """);
        await using var denied = Nats($"ws://127.0.0.1:{s.Port}", "d");
        await denied.ConnectAsync();
        (string Subject, string? Queue)[] specs = [("pub.*.x", null), ("*.*.x", null), ("pub.*.x", "g1"), ("*.*.x", "g2")];
        var subs = new List<INatsSub<string>>();
        foreach (var (subject, queue) in specs) subs.Add(await denied.SubscribeCoreAsync<string>(subject, queue));
        await denied.PingAsync();

        await using var publisher = Nats($"nats://127.0.0.1:{s.NatsPort}", "s");
        await publisher.ConnectAsync();
        foreach (var subject in new[] { "pub.secret.x", "pub.open.x", "pub.end.x" }) await publisher.PublishAsync(subject, "m");
        await publisher.PingAsync();

        // One publisher: each subscription sees its messages in order, so everything it gets comes before pub.end.x.
        using var cts = new CancellationTokenSource(TimeSpan.FromSeconds(15));
        for (int i = 0; i < subs.Count; i++)
        {
            var got = new List<string>();
            while (true)
            {
                var m = await subs[i].Msgs.ReadAsync(cts.Token);
                if (m.Subject == "pub.end.x") break;
                got.Add(m.Subject);
            }
            output.WriteLine($"{server}: SUB {specs[i].Subject} {specs[i].Queue}: [{string.Join(", ", got)}]");
            Assert.Equal(["pub.open.x"], got);
        }
        foreach (var sub in subs) await sub.DisposeAsync();
    }

    [SkippableTheory]
    [InlineData("ours")]
    [InlineData("2.14.5")]
    public async Task An_mqtt_user_with_a_narrower_subscribe_deny_gets_only_allowed_topics_live_qos1_and_retained(string server)
    {
        await using var s = await StartAsync(server, port => $$"""
            mqtt {
              port: {{port}}
            }
            """, jetStream: true);
        string run = Guid.NewGuid().ToString("N")[..8];
        MqttClientOptionsBuilder Options(string id, string user) => new MqttClientOptionsBuilder().WithTcpServer("127.0.0.1", s.Port)
            .WithClientId(id + run).WithCredentials(user, "p").WithProtocolVersion(MQTTnet.Formatter.MqttProtocolVersion.V311).WithTimeout(TimeSpan.FromSeconds(15));
        var factory = new MqttClientFactory();
        static MqttApplicationMessage Message(string topic, string payload, bool retain) => new MqttApplicationMessageBuilder()
            .WithTopic(topic).WithPayload(payload).WithQualityOfServiceLevel(MqttQualityOfServiceLevel.AtLeastOnce).WithRetainFlag(retain).Build();

        using var publisher = factory.CreateMqttClient();
        await publisher.ConnectAsync(Options("pub", "s").Build());
        await publisher.PublishAsync(Message("pub/secret/x", "retained", retain: true));
        await publisher.PublishAsync(Message("pub/open/x", "retained", retain: true));

        // A filter inside the deny is refused (SUBACK 0x80); the overlapping wildcards are granted, at QoS 0 (live
        // deliveries), QoS 1 with a clean session and QoS 1 in a persistent session (JetStream consumers).
        (string Filter, MqttQualityOfServiceLevel Qos, bool Clean)[] specs =
        [
            ("pub/+/x", MqttQualityOfServiceLevel.AtMostOnce, true),
            ("pub/+/x", MqttQualityOfServiceLevel.AtLeastOnce, true),
            ("+/+/x", MqttQualityOfServiceLevel.AtLeastOnce, false),
        ];
        var clients = new List<(IMqttClient Client, List<string> Got)>();
        try
        {
            for (int i = 0; i < specs.Length; i++)
            {
                var client = factory.CreateMqttClient();
                var got = new List<string>();
                client.ApplicationMessageReceivedAsync += e =>
                {
                    lock (got) got.Add($"{e.ApplicationMessage.Topic} {e.ApplicationMessage.ConvertPayloadToString()}{(e.ApplicationMessage.Retain ? " retained-flag" : "")}");
                    return Task.CompletedTask;
                };
                clients.Add((client, got));
                await client.ConnectAsync(Options("d" + i, "d").WithCleanSession(specs[i].Clean).Build());
                var refused = await client.SubscribeAsync(new MqttClientSubscribeOptionsBuilder().WithTopicFilter("pub/secret/x").Build());
                Assert.Equal(MqttClientSubscribeResultCode.UnspecifiedError, Assert.Single(refused.Items).ResultCode);
                var granted = await client.SubscribeAsync(new MqttClientSubscribeOptionsBuilder().WithTopicFilter(specs[i].Filter, specs[i].Qos).Build());
                Assert.Equal((MqttClientSubscribeResultCode)(int)specs[i].Qos, Assert.Single(granted.Items).ResultCode);
            }

            await using (var nats = Nats($"nats://127.0.0.1:{s.NatsPort}", "s"))
            {
                await nats.PublishAsync("pub.secret.x", "nats");
                await nats.PublishAsync("pub.open.x", "nats");
                await nats.PingAsync();
            }
            await publisher.PublishAsync(Message("pub/secret/x", "mqtt", retain: false));
            await publisher.PublishAsync(Message("pub/open/x", "mqtt", retain: false));

            string[] expected = ["pub/open/x mqtt", "pub/open/x nats", "pub/open/x retained retained-flag"];
            var deadline = DateTime.UtcNow.AddSeconds(15);
            while (DateTime.UtcNow < deadline && clients.Any(c => { lock (c.Got) return c.Got.Count < expected.Length; }))
                await Task.Delay(50);
            await Task.Delay(500); // anything that should not come has had its chance
            for (int i = 0; i < clients.Count; i++)
            {
                List<string> got;
                lock (clients[i].Got) got = [.. clients[i].Got.Order(StringComparer.Ordinal)];
                output.WriteLine($"{server}: {specs[i].Filter} QoS {(int)specs[i].Qos} clean {specs[i].Clean}: [{string.Join(", ", got)}]");
                Assert.Equal(expected, got);
            }
        }
        finally
        {
            foreach (var (client, _) in clients)
            {
                if (client.IsConnected) await client.DisconnectAsync();
                client.Dispose();
            }
            if (publisher.IsConnected) await publisher.DisconnectAsync();
        }
    }
}
