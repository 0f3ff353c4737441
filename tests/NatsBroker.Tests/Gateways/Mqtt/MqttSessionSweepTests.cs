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
