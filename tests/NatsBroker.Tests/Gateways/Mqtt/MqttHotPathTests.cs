using System.Buffers;
using System.Text;
using MQTTnet;
using MQTTnet.Formatter;
using NATS.Client.Core;
using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Gateways.Mqtt;

/// <summary>
/// The gateway's per-message shortcuts keep what a client sees: a PUBLISH repeating the last topic skips the
/// decoder (MqttSession.RepeatedPublish.cs) only when nothing but the payload differs; the link's read buffer
/// (NatsLink) moves a partial message to its start, grows once, and handles MSG and HMSG lines with and without a
/// reply subject whatever their sizes and however the reads split them.
/// </summary>
[Collection("Gateways")]
public sealed class MqttHotPathTests(MqttGatewayFixture fixture, ITestOutputHelper output) : IClassFixture<MqttGatewayFixture>
{
    private MqttTestServer S
    {
        get
        {
            Prerequisites.RequireServer(ServerKind.Ours, output);
            return fixture.Server!;
        }
    }

    private static async Task<NatsMsg<byte[]>> NextAsync(INatsSub<byte[]> sub)
    {
        using var cts = new CancellationTokenSource(TimeSpan.FromSeconds(15));
        return await sub.Msgs.ReadAsync(cts.Token);
    }

    /// <summary>
    /// One burst (one read for the gateway) of QoS 0 PUBLISHes: repeated topics (the shortcut), a RETAIN one and a
    /// new topic in between (the decoder's path, which also changes the remembered topic), a topic that maps with
    /// empty levels. Each reaches NATS on its own subject, in order, with the headers the decoder's path gives it.
    /// </summary>
    [SkippableFact]
    public async Task Repeated_topic_publishes_reach_nats_as_decoded_ones_do()
    {
        var s = S;
        string run = Guid.NewGuid().ToString("N")[..8];
        await using var nats = s.Nats();
        await using var sub = await nats.SubscribeCoreAsync<byte[]>("hot." + run + ".>");
        await nats.PingAsync();
        using var raw = await RawMqtt.ConnectAsync(s.MqttPort, MqttServerFixture.Id("hotpub"));
        Assert.Equal(0, await raw.ReadConnAckAsync());
        string a = $"hot/{run}/a", b = $"hot/{run}/b", empty = $"hot/{run}//x";
        var burst = new List<(byte, string, string)>
        {
            (0x30, a, "1"), (0x30, a, "2"), (0x31, a, "3"), (0x30, a, "4"), (0x30, b, "5"), (0x30, b, "6"),
            (0x30, a, "7"), (0x30, empty, "8"), (0x30, empty, "9"), (0x30, a, ""),
        };
        await raw.PublishBurstAsync(burst);
        var expected = new (string Subject, string Payload, bool Retained)[]
        {
            ($"hot.{run}.a", "1", false), ($"hot.{run}.a", "2", false), ($"hot.{run}.a", "3", true), ($"hot.{run}.a", "4", false),
            ($"hot.{run}.b", "5", false), ($"hot.{run}.b", "6", false), ($"hot.{run}.a", "7", false),
            ($"hot.{run}./.x", "8", false), ($"hot.{run}./.x", "9", false), ($"hot.{run}.a", "", false),
        };
        foreach (var (subject, payload, retained) in expected)
        {
            var n = await NextAsync(sub);
            Assert.Equal(subject, n.Subject);
            Assert.Equal(payload, Encoding.UTF8.GetString(n.Data ?? []));
            Assert.Null(n.ReplyTo);
            Assert.Equal("0", n.Headers!["Nmqtt-Pub"].ToString());
            Assert.Equal(retained, n.Headers.ContainsKey("Nmqtt-Ret"));
        }
        // Clear the retained message so that no later subscriber of the class gets it.
        await raw.PublishBurstAsync([(0x31, a, "")]);
        await raw.DisconnectAsync();
    }

    /// <summary>MQTT 5: a PUBLISH repeating the last topic but carrying properties is not shortened: its user
    /// property and response topic still reach NATS; the next one without properties has neither.</summary>
    [SkippableFact]
    public async Task Mqtt5_repeated_topic_with_properties_keeps_them()
    {
        var s = S;
        string run = Guid.NewGuid().ToString("N")[..8];
        await using var nats = s.Nats();
        await using var sub = await nats.SubscribeCoreAsync<byte[]>("hot5." + run);
        await nats.PingAsync();
        using var mqtt = await s.ConnectAsync(MqttServerFixture.Id("hot5"), MqttProtocolVersion.V500);
        string topic = "hot5/" + run;
        await mqtt.PublishAsync(new MqttApplicationMessageBuilder().WithTopic(topic).WithPayload("plain").Build());
        await mqtt.PublishAsync(new MqttApplicationMessageBuilder().WithTopic(topic).WithPayload("props")
            .WithUserProperty("tenant", Encoding.UTF8.GetBytes("acme").AsMemory()).WithResponseTopic("hot5/reply").Build());
        await mqtt.PublishAsync(new MqttApplicationMessageBuilder().WithTopic(topic).WithPayload("plain again").Build());

        var first = await NextAsync(sub);
        Assert.Equal("plain", Encoding.UTF8.GetString(first.Data!));
        Assert.False(first.Headers!.ContainsKey("tenant"));
        var second = await NextAsync(sub);
        Assert.Equal("props", Encoding.UTF8.GetString(second.Data!));
        Assert.Equal("acme", second.Headers!["tenant"].ToString());
        Assert.Equal("hot5.reply", second.ReplyTo);
        var third = await NextAsync(sub);
        Assert.Equal("plain again", Encoding.UTF8.GetString(third.Data!));
        Assert.False(third.Headers!.ContainsKey("tenant"));
        Assert.Null(third.ReplyTo);
    }

    /// <summary>
    /// NATS to MQTT with sizes that make the link's reads end inside messages (from empty to larger than the link's
    /// largest read buffer), MSG and HMSG, with and without a reply subject, in one flush: every message arrives
    /// whole, in order, on its topic.
    /// </summary>
    [SkippableFact]
    public async Task Messages_of_every_size_cross_the_link_whole_and_in_order()
    {
        var s = S;
        string run = Guid.NewGuid().ToString("N")[..8];
        await using var nats = s.Nats();
        using var mqtt = await s.ConnectAsync(MqttServerFixture.Id("hotsizes"));
        var received = new Received(mqtt);
        await mqtt.SubscribeAsync($"sizes/{run}/#");
        var sizes = new List<int>();
        for (int i = 0; i < 400; i++) sizes.Add(i * 37 % 5000);
        sizes.Insert(150, 70_000);
        sizes.Insert(300, 200_000);
        for (int i = 0; i < sizes.Count; i++)
        {
            var payload = new byte[sizes[i]];
            for (int j = 0; j < payload.Length; j++) payload[j] = (byte)(i + j);
            string subject = i % 2 == 0 ? $"sizes.{run}.even" : $"sizes.{run}.odd.x";
            var headers = i % 3 == 0 ? new NatsHeaders { ["k"] = "v" + i } : null;
            await nats.PublishAsync(subject, payload, headers: headers, replyTo: i % 5 == 0 ? "re.ply" : null);
        }
        for (int i = 0; i < sizes.Count; i++)
        {
            var m = await received.NextAsync();
            Assert.Equal(i % 2 == 0 ? $"sizes/{run}/even" : $"sizes/{run}/odd/x", m.Topic);
            var payload = m.Payload.ToArray();
            Assert.Equal(sizes[i], payload.Length);
            for (int j = 0; j < payload.Length; j++)
            {
                if (payload[j] != (byte)(i + j)) Assert.Fail($"message {i}: byte {j} is {payload[j]}, not {(byte)(i + j)}");
            }
        }
    }
}
