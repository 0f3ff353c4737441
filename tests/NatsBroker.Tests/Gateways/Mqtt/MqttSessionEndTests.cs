using System.Text.Json.Nodes;
using MQTTnet;
using MQTTnet.Formatter;
using NATS.Client.Core;
using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Gateways.Mqtt;

/// <summary>How a session ends when its connection fails part-way (a server of its own: the test changes $MQTT_sess).</summary>
[Collection("Gateways")]
public sealed class MqttSessionEndTests(ITestOutputHelper output)
{
    /// <summary>
    /// A connection that resumed a session with Session Expiry Interval 0 and then failed before its client loop (here
    /// the rewrite of the session record after CONNACK is refused) still ends the session: the record is deleted, as
    /// when the client disconnects (MQTT 5 section 3.1.2.11.2). The record left otherwise is the previous connection's,
    /// which a later connection would resume.
    /// </summary>
    [SkippableFact]
    public async Task A_session_resumed_with_expiry_0_ends_when_its_connection_fails_after_connack()
    {
        Prerequisites.RequireServer(ServerKind.Ours, output);
        await using var s = await MqttTestServer.StartAsync(ServerKind.Ours, output, rest: MqttTestServer.Users + "\ndebug: true");
        string id = MqttServerFixture.Id("sfail");
        using (var first = await s.ConnectAsync(id, MqttProtocolVersion.V500, b => b.WithCleanStart(true).WithSessionExpiryInterval(60)))
        {
            await first.DisconnectAsync();
        }
        Assert.True(await Mqtt5FeatureTests.PollSessionRecordAsync(s, id, TimeSpan.FromSeconds(15), r => r?.Contains("\"expires\"", StringComparison.Ordinal) == true),
            "the session was not detached\n" + s.Server.OutputTail());

        // From now on $MQTT_sess refuses new records (discard new at its current size); a purge still works. Without
        // the per-subject limit: as in nats-server (storeRawMsg), a record for a subject at max_msgs_per_subject
        // would replace the old one whenever it is not bigger, and the restored record is smaller.
        await using var nats = s.Nats();
        var info = JsonNode.Parse((await nats.RequestAsync<string, string>("$JS.API.STREAM.INFO.$MQTT_sess", "")).Data!)!;
        var config = info["config"]!.AsObject();
        config["max_bytes"] = info["state"]!["bytes"]!.GetValue<long>();
        config["discard"] = "new";
        config["max_msgs_per_subject"] = -1;
        var updated = (await nats.RequestAsync<string, string>("$JS.API.STREAM.UPDATE.$MQTT_sess", config.ToJsonString())).Data!;
        Assert.DoesNotContain("\"error\"", updated, StringComparison.Ordinal);

        using var again = new MqttClientFactory().CreateMqttClient();
        var result = await s.ConnectAsync(again, id, MqttProtocolVersion.V500, b => b.WithCleanStart(false)); // expiry 0
        Assert.True(result.IsSessionPresent);
        string? left = null;
        Assert.True(await Mqtt5FeatureTests.PollSessionRecordAsync(s, id, TimeSpan.FromSeconds(15), r => (left = r) is null),
            $"the ended session's record is still stored: {left}\n{s.Server.OutputTail()}");
        Assert.Contains("connection failed after its session was restored", s.Server.OutputTail(), StringComparison.Ordinal);
    }
}
