using System.Text.Json;
using MQTTnet;
using MQTTnet.Formatter;
using MQTTnet.Protocol;
using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Gateways.Mqtt;

/// <summary>One core with its MQTT gateway sweeping expired sessions every second (ours: mqtt { session_sweep_interval }).</summary>
public sealed class MqttSessionSweepFixture() : MqttServerFixture("no_auth_user: alice\n  session_sweep_interval: \"1s\"");

/// <summary>
/// MQTT 5 section 3.1.2.11.2: a session is discarded once its Session Expiry Interval has passed after the connection
/// closed, also when its client never comes back (gateways/mqtt SessionSweeper).
/// </summary>
[Collection("Gateways")]
public sealed class MqttSessionSweepTests(MqttSessionSweepFixture fixture, ITestOutputHelper output) : IClassFixture<MqttSessionSweepFixture>
{
    private MqttTestServer S
    {
        get
        {
            Prerequisites.RequireServer(ServerKind.Ours, output);
            return fixture.Server!;
        }
    }

    [SkippableFact]
    public async Task An_expired_session_nobody_reconnects_to_is_deleted_with_its_consumer()
    {
        var s = S;
        string shortId = MqttServerFixture.Id("sweep1"), longId = MqttServerFixture.Id("sweep300");
        string topic = "sweep/" + Guid.NewGuid().ToString("N")[..8];
        foreach (var (id, expiry) in new[] { (shortId, 1u), (longId, 300u) })
        {
            using var client = await s.ConnectAsync(id, MqttProtocolVersion.V500, b => b.WithSessionExpiryInterval(expiry));
            await client.SubscribeAsync(new MqttClientSubscribeOptionsBuilder().WithTopicFilter(topic, MqttQualityOfServiceLevel.AtLeastOnce).Build());
            await client.DisconnectAsync();
        }
        // The record as the connection left it (with "expires"), naming the QoS 1 subscription's durable consumer.
        string? record = null;
        Assert.True(await Mqtt5FeatureTests.PollSessionRecordAsync(s, longId, TimeSpan.FromSeconds(15),
            r => r is not null && (record = r).Contains("\"expires\"", StringComparison.Ordinal)), "the long session was not detached\n" + s.Server.OutputTail());
        string kept = Consumer(record!);
        // The short one may already be swept when first read: its consumer is taken from the first record seen.
        string? shortRecord = null;
        Assert.True(await Mqtt5FeatureTests.PollSessionRecordAsync(s, shortId, TimeSpan.FromSeconds(15), r => (shortRecord = r) is not null),
            "the short session has no record\n" + s.Server.OutputTail());
        string swept = Consumer(shortRecord!);

        string? left = null;
        Assert.True(await Mqtt5FeatureTests.PollSessionRecordAsync(s, shortId, TimeSpan.FromSeconds(30), r => (left = r) is null),
            $"the expired session's record is still stored: {left}\n{s.Server.OutputTail()}");
        await using var nats = s.Nats();
        Assert.True(await PollAsync(async () => !await ConsumerExistsAsync(nats, swept), TimeSpan.FromSeconds(15)), "the expired session's consumer is still there");
        // The session that has not expired is untouched, and resumes.
        Assert.True(await ConsumerExistsAsync(nats, kept));
        using var back = new MqttClientFactory().CreateMqttClient();
        Assert.True((await s.ConnectAsync(back, longId, MqttProtocolVersion.V500, b => b.WithCleanStart(false).WithSessionExpiryInterval(300))).IsSessionPresent);
        await back.DisconnectAsync(new MqttClientDisconnectOptionsBuilder().WithSessionExpiryInterval(0).Build());
    }

    [SkippableFact]
    public async Task Sessions_taken_again_as_they_expire_are_not_swept()
    {
        var s = S;
        string topic = "sweep/" + Guid.NewGuid().ToString("N")[..8];
        var ids = Enumerable.Range(0, 8).Select(i => MqttServerFixture.Id("race" + i)).ToArray();
        var subscribe = new MqttClientSubscribeOptionsBuilder().WithTopicFilter(topic, MqttQualityOfServiceLevel.AtLeastOnce).Build();
        foreach (var id in ids)
        {
            using var client = await s.ConnectAsync(id, MqttProtocolVersion.V500, b => b.WithSessionExpiryInterval(1));
            await client.SubscribeAsync(subscribe);
            await client.DisconnectAsync();
        }
        // Each client comes back as its session expires, while the sweeper (every second) may be walking it, and leaves
        // a new session for 300 s: that one must survive every later sweep. This exercises reconnects beside sweeps; it
        // does not force the narrow interleavings the registry claim and the re-read under it guard against.
        foreach (var id in ids)
        {
            // Detached first (else the CONNECT would take over the live connection); swept already or not, either is fine.
            await Mqtt5FeatureTests.PollSessionRecordAsync(s, id, TimeSpan.FromSeconds(5), r => r is null || r.Contains("\"expires\"", StringComparison.Ordinal));
            using var client = new MqttClientFactory().CreateMqttClient();
            await s.ConnectAsync(client, id, MqttProtocolVersion.V500, b => b.WithCleanStart(false).WithSessionExpiryInterval(300));
            await client.SubscribeAsync(subscribe);
            await client.DisconnectAsync();
            await Task.Delay(150);
        }
        var consumers = new string[ids.Length];
        for (int i = 0; i < ids.Length; i++)
        {
            string? record = null;
            Assert.True(await Mqtt5FeatureTests.PollSessionRecordAsync(s, ids[i], TimeSpan.FromSeconds(15),
                r => r is not null && (record = r).Contains("\"expires\"", StringComparison.Ordinal)), $"{ids[i]}: no detached record\n{s.Server.OutputTail()}");
            consumers[i] = Consumer(record!);
        }
        // Three sweeps (each second) pass; nothing may be deleted (what must not happen can only be waited for).
        await Task.Delay(3500);
        await using var nats = s.Nats();
        for (int i = 0; i < ids.Length; i++)
        {
            Assert.True(await ConsumerExistsAsync(nats, consumers[i]), $"{ids[i]}: its consumer was swept");
            using var back = new MqttClientFactory().CreateMqttClient();
            Assert.True((await s.ConnectAsync(back, ids[i], MqttProtocolVersion.V500, b => b.WithCleanStart(false).WithSessionExpiryInterval(300))).IsSessionPresent,
                $"{ids[i]}: its session was swept");
            await back.DisconnectAsync(new MqttClientDisconnectOptionsBuilder().WithSessionExpiryInterval(0).Build());
        }
    }

    /// <summary>
    /// MQTT over WebSocket sessions are served by the websocket gateway's process, which sweeps its own. An MQTTnet 5
    /// client over WebSocket (MQTT 5) also checks that no empty WebSocket message reaches it (it reads one as the end).
    /// </summary>
    [SkippableFact]
    public async Task An_expired_session_of_a_websocket_client_is_deleted()
    {
        Prerequisites.RequireServer(ServerKind.Ours, output);
        int wsPort = TestPorts.Next();
        await using var s = await MqttTestServer.StartAsync(ServerKind.Ours, output, "no_auth_user: alice\n  session_sweep_interval: \"1s\"",
            MqttTestServer.Users + $"\ndebug: true\nwebsocket {{ host: \"127.0.0.1\", port: {wsPort}, no_tls: true }}\n");
        await GatewayTestHelpers.WaitListeningAsync(wsPort);
        string id = MqttServerFixture.Id("wssweep");
        using (var client = new MqttClientFactory().CreateMqttClient())
        {
            var options = new MqttClientOptionsBuilder().WithWebSocketServer(o => o.WithUri($"ws://127.0.0.1:{wsPort}/mqtt"))
                .WithClientId(id).WithProtocolVersion(MqttProtocolVersion.V500).WithSessionExpiryInterval(1).WithTimeout(TimeSpan.FromSeconds(15)).Build();
            await client.ConnectAsync(options);
            await client.SubscribeAsync(new MqttClientSubscribeOptionsBuilder().WithTopicFilter("wssweep/x", MqttQualityOfServiceLevel.AtLeastOnce).Build());
            await client.DisconnectAsync();
        }
        string? record = null;
        Assert.True(await Mqtt5FeatureTests.PollSessionRecordAsync(s, id, TimeSpan.FromSeconds(15), r => (record = r) is not null),
            "the websocket client's session has no record\n" + s.Server.OutputTail());
        string swept = Consumer(record!);
        string? left = null;
        Assert.True(await Mqtt5FeatureTests.PollSessionRecordAsync(s, id, TimeSpan.FromSeconds(30), r => (left = r) is null),
            $"the expired session's record is still stored: {left}\n{s.Server.OutputTail()}");
        await using var nats = s.Nats();
        Assert.True(await PollAsync(async () => !await ConsumerExistsAsync(nats, swept), TimeSpan.FromSeconds(15)), "the expired session's consumer is still there");
    }

    private static string Consumer(string record)
    {
        using var doc = JsonDocument.Parse(record);
        return doc.RootElement.GetProperty("cons").EnumerateObject().Single().Value.GetProperty("durable_name").GetString()!;
    }

    private static async Task<bool> ConsumerExistsAsync(NATS.Client.Core.NatsConnection nats, string name)
    {
        var reply = await nats.RequestAsync<string, string>("$JS.API.CONSUMER.INFO.$MQTT_msgs." + name, "");
        return reply.Data is { } json && !json.Contains("\"error\"", StringComparison.Ordinal);
    }

    private static async Task<bool> PollAsync(Func<Task<bool>> done, TimeSpan limit)
    {
        var until = DateTime.UtcNow + limit;
        while (DateTime.UtcNow < until)
        {
            if (await done()) return true;
            await Task.Delay(100);
        }
        return false;
    }
}
