using System.Buffers;
using System.Diagnostics;
using System.Text;
using MQTTnet;
using MQTTnet.Formatter;
using MQTTnet.Protocol;
using NATS.Client.Core;
using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Gateways.Mqtt;

/// <summary>One core with its supervised MQTT gateway for the whole class (see <see cref="MqttGatewayTests"/>).</summary>
// A short ack_wait: a persistent session's message the core pushed while nobody listened comes again soon.
public sealed class MqttGatewayFixture() : MqttServerFixture("no_auth_user: alice\n  ack_wait: \"2s\"");

/// <summary>
/// MQTT clients (MQTTnet 3.1.1 and 5, mosquitto_pub/sub, a raw socket) through the MQTT gateway, with NATS.Net
/// clients on the same core: nats-server's MQTT semantics (server/mqtt.go) as a client sees them.
/// </summary>
[Collection("Gateways")]
public sealed class MqttGatewayTests(MqttGatewayFixture fixture, ITestOutputHelper output) : IClassFixture<MqttGatewayFixture>
{
    private MqttTestServer S
    {
        get
        {
            Prerequisites.RequireServer(ServerKind.Ours, output);
            return fixture.Server!;
        }
    }

    private static string Id(string name) => MqttServerFixture.Id(name);

    private static async Task<NatsMsg<byte[]>> NextAsync(INatsSub<byte[]> sub)
    {
        using var cts = new CancellationTokenSource(TimeSpan.FromSeconds(15));
        return await sub.Msgs.ReadAsync(cts.Token);
    }

    [SkippableFact]
    public async Task Qos0_both_ways_with_nats_clients_and_a_multi_level_filter_matches_its_parent()
    {
        var s = S;
        await using var nats = s.Nats();
        await using var natsSub = await nats.SubscribeCoreAsync<byte[]>("sensors.>");
        using var mqtt = await s.ConnectAsync(Id("sub"));
        var received = new Received(mqtt);
        var suback = await mqtt.SubscribeAsync(new MqttClientSubscribeOptionsBuilder().WithTopicFilter("sensors/#").Build());
        Assert.Equal(MqttClientSubscribeResultCode.GrantedQoS0, Assert.Single(suback.Items).ResultCode);

        // NATS → MQTT: "foo/#" also matches "foo" (nats-server subscribes the parent level too).
        await nats.PublishAsync("sensors", Encoding.UTF8.GetBytes("parent"));
        var m = await received.NextAsync();
        Assert.Equal("sensors", m.Topic);
        Assert.Equal("parent", m.ConvertPayloadToString());
        await nats.PublishAsync("sensors.temp", Encoding.UTF8.GetBytes("21"));
        m = await received.NextAsync();
        Assert.Equal("sensors/temp", m.Topic);
        Assert.Equal(MqttQualityOfServiceLevel.AtMostOnce, m.QualityOfServiceLevel);

        // MQTT → NATS: the subject mapped, the Nmqtt-Pub header carrying the QoS.
        await mqtt.PublishAsync(new MqttApplicationMessageBuilder().WithTopic("sensors/hum").WithPayload("42").Build());
        NatsMsg<byte[]> n;
        do n = await NextAsync(natsSub); while (n.Subject != "sensors.hum");
        Assert.Equal("42", Encoding.UTF8.GetString(n.Data!));
        Assert.Equal("0", n.Headers!["Nmqtt-Pub"].ToString());
        // The MQTT client's own subscription gets it too (MQTT has no echo suppression without MQTT 5 no-local).
        do m = await received.NextAsync(); while (m.Topic != "sensors/hum");
        Assert.Equal("42", m.ConvertPayloadToString());
    }

    [SkippableFact]
    public async Task Empty_levels_and_dots_travel_as_nats_server_maps_them()
    {
        var s = S;
        await using var nats = s.Nats();
        await using var natsSub = await nats.SubscribeCoreAsync<byte[]>(">");
        using var mqtt = await s.ConnectAsync(Id("map"));
        foreach (var (topic, subject) in new[] { ("/lead", "/.lead"), ("trail/", "trail./"), ("a//b", "a./.b"), ("v1.2/x", "v1//2.x") })
        {
            await mqtt.PublishAsync(new MqttApplicationMessageBuilder().WithTopic(topic).WithPayload(topic).Build());
            NatsMsg<byte[]> n;
            do n = await NextAsync(natsSub); while (n.Data is null || Encoding.UTF8.GetString(n.Data) != topic);
            Assert.Equal(subject, n.Subject);
        }
    }

    /// <summary>
    /// QoS 1 PUBLISHes arriving together are stored together (MqttSession.PubAcks.cs): every PUBACK still comes after
    /// its message is in $MQTT_msgs, in the order of the PUBLISHes [MQTT-4.6.0-2], and the messages reach NATS in order.
    /// </summary>
    [SkippableFact]
    public async Task A_burst_of_QoS1_publishes_is_acknowledged_in_order_once_stored()
    {
        var s = S;
        const int count = 300;
        string topic = "burst/" + Guid.NewGuid().ToString("N")[..8];
        await using var nats = s.Nats();
        await using var sub = await nats.SubscribeCoreAsync<byte[]>(topic.Replace('/', '.'));
        await nats.PingAsync();
        using var raw = await RawMqtt.ConnectAsync(s.MqttPort, Id("burst"));
        Assert.Equal(0, await raw.ReadConnAckAsync());
        long before = await MessagesLastSeqAsync(nats);
        await raw.PublishQoS1BurstAsync(topic, count);
        Assert.Equal(Enumerable.Range(1, count), await raw.ReadPubAcksAsync(count));
        // Stored before acknowledged ($MQTT_msgs has interest retention, so without a consumer the messages are gone
        // at once: its last sequence counts them). Other tests' stores may come in between: at least this many.
        Assert.True(await MessagesLastSeqAsync(nats) - before >= count);
        for (int i = 0; i < count; i++) Assert.Equal(i.ToString(System.Globalization.CultureInfo.InvariantCulture), Encoding.ASCII.GetString((await NextAsync(sub)).Data!));
        await raw.DisconnectAsync();
    }

    private static async Task<long> MessagesLastSeqAsync(NatsConnection nats)
    {
        var info = await nats.RequestAsync<string, string>("$JS.API.STREAM.INFO.$MQTT_msgs", "");
        using var doc = System.Text.Json.JsonDocument.Parse(info.Data!);
        return doc.RootElement.GetProperty("state").GetProperty("last_seq").GetInt64();
    }

    [SkippableFact]
    public async Task Credentials_map_to_core_users_and_their_permissions()
    {
        var s = S;
        // nats-server answers an authentication failure with CONNACK 0x05 (not authorized), then closes.
        using (var refused = await RawMqtt.ConnectAsync(s.MqttPort, Id("bad"), user: "bob", password: "wrong"))
        {
            Assert.Equal(5, await refused.ReadConnAckAsync());
            Assert.True(await refused.ClosedWithinAsync(15));
        }

        using var bob = await s.ConnectAsync(Id("bob"), configure: b => b.WithCredentials("bob", "pw"));
        var suback = await bob.SubscribeAsync(new MqttClientSubscribeOptionsBuilder().WithTopicFilter("secret/#").WithTopicFilter("open/#").Build());
        Assert.Equal(MqttClientSubscribeResultCode.UnspecifiedError, suback.Items.First(i => i.TopicFilter.Topic == "secret/#").ResultCode);
        Assert.Equal(MqttClientSubscribeResultCode.GrantedQoS0, suback.Items.First(i => i.TopicFilter.Topic == "open/#").ResultCode);
    }

    [SkippableFact]
    public async Task The_will_is_published_when_the_client_vanishes_but_not_after_disconnect()
    {
        var s = S;
        await using var nats = s.Nats();
        await using var natsSub = await nats.SubscribeCoreAsync<byte[]>("status.*");
        using (var graceful = await RawMqtt.ConnectAsync(s.MqttPort, Id("w1"), willTopic: "status/graceful", willMessage: "gone"))
        {
            Assert.Equal(0, await graceful.ReadConnAckAsync());
            await graceful.DisconnectAsync();
            Assert.True(await graceful.ClosedWithinAsync(15));
        }
        using var vanishing = await RawMqtt.ConnectAsync(s.MqttPort, Id("w2"), willTopic: "status/vanished", willMessage: "lost");
        Assert.Equal(0, await vanishing.ReadConnAckAsync());
        vanishing.Vanish();
        var will = await NextAsync(natsSub);
        // The graceful client's will (published first, if it were) would arrive before this one.
        Assert.Equal("status.vanished", will.Subject);
        Assert.Equal("lost", Encoding.UTF8.GetString(will.Data!));
    }

    [SkippableFact]
    public async Task A_silent_client_is_closed_after_one_and_a_half_keep_alive_periods()
    {
        var s = S;
        using var raw = await RawMqtt.ConnectAsync(s.MqttPort, Id("ka"), keepAlive: 1);
        Assert.Equal(0, await raw.ReadConnAckAsync());
        Assert.True(await raw.ClosedWithinAsync(20));
    }

    [SkippableFact]
    public async Task A_second_client_with_the_same_id_takes_the_session_over()
    {
        var s = S;
        string id = Id("dup");
        using var first = await s.ConnectAsync(id);
        var dropped = new TaskCompletionSource();
        first.DisconnectedAsync += _ =>
        {
            dropped.TrySetResult();
            return Task.CompletedTask;
        };
        using var second = await s.ConnectAsync(id);
        await dropped.Task.WaitAsync(TimeSpan.FromSeconds(15));
        var received = new Received(second);
        await second.SubscribeAsync("dup/check");
        await second.PublishStringAsync("dup/check", "still here");
        Assert.Equal("still here", (await received.NextAsync()).ConvertPayloadToString());
    }

    [SkippableFact]
    public async Task Qos1_and_qos2_round_trips_are_acknowledged_and_delivered_at_the_lower_qos()
    {
        var s = S;
        using var mqtt = await s.ConnectAsync(Id("q"), MqttProtocolVersion.V500);
        var received = new Received(mqtt);
        await mqtt.SubscribeAsync(new MqttClientSubscribeOptionsBuilder().WithTopicFilter("q/one", MqttQualityOfServiceLevel.AtLeastOnce)
            .WithTopicFilter("q/two", MqttQualityOfServiceLevel.ExactlyOnce).Build());
        var ack = await mqtt.PublishAsync(new MqttApplicationMessageBuilder().WithTopic("q/one").WithPayload("1")
            .WithQualityOfServiceLevel(MqttQualityOfServiceLevel.AtLeastOnce).Build());
        Assert.True(ack.IsSuccess);
        var m = await received.NextAsync();
        Assert.Equal(MqttQualityOfServiceLevel.AtLeastOnce, m.QualityOfServiceLevel);
        ack = await mqtt.PublishAsync(new MqttApplicationMessageBuilder().WithTopic("q/two").WithPayload("2")
            .WithQualityOfServiceLevel(MqttQualityOfServiceLevel.ExactlyOnce).Build());
        Assert.True(ack.IsSuccess);
        m = await received.NextAsync();
        Assert.Equal("q/two", m.Topic);
        Assert.Equal(MqttQualityOfServiceLevel.ExactlyOnce, m.QualityOfServiceLevel);
        // A NATS message is QoS 0 whatever the subscription's QoS.
        await using var nats = s.Nats();
        await nats.PublishAsync("q.one", Encoding.UTF8.GetBytes("n"));
        m = await received.NextAsync();
        Assert.Equal(MqttQualityOfServiceLevel.AtMostOnce, m.QualityOfServiceLevel);
    }

    [SkippableFact]
    public async Task Mqtt5_user_properties_are_nats_headers_and_response_topic_is_the_reply_subject()
    {
        var s = S;
        await using var nats = s.Nats();
        await using var natsSub = await nats.SubscribeCoreAsync<byte[]>("props.in");
        using var mqtt = await s.ConnectAsync(Id("v5"), MqttProtocolVersion.V500);
        var received = new Received(mqtt);
        await mqtt.SubscribeAsync("props/out");
        await mqtt.PublishAsync(new MqttApplicationMessageBuilder().WithTopic("props/in").WithPayload("x")
            .WithUserProperty("tenant", Encoding.UTF8.GetBytes("acme").AsMemory()).WithResponseTopic("props/reply").Build());
        var n = await NextAsync(natsSub);
        Assert.Equal("acme", n.Headers!["tenant"].ToString());
        Assert.Equal("props.reply", n.ReplyTo);

        var headers = new NatsHeaders { ["trace-id"] = "t1" };
        await nats.PublishAsync("props.out", Encoding.UTF8.GetBytes("y"), headers: headers, replyTo: "inbox.1");
        var m = await received.NextAsync();
        var prop = Assert.Single(m.UserProperties!);
        Assert.Equal("trace-id", prop.Name);
        Assert.Equal("t1", Encoding.UTF8.GetString(prop.ValueBuffer.Span));
        Assert.Equal("inbox/1", m.ResponseTopic);
    }

    /// <summary>
    /// MQTT 5 message properties reach MQTT 5 subscribers: content type, payload format indicator and correlation
    /// data on a live message, and user properties kept with a retained message (paho.mqtt.testing's
    /// test_payload_format, test_request_response, test_retained_message).
    /// </summary>
    [SkippableFact]
    public async Task Mqtt5_message_properties_and_retained_user_properties_reach_subscribers()
    {
        var s = S;
        string topic = "mprops/" + Guid.NewGuid().ToString("N")[..8];
        using var publisher = await s.ConnectAsync(Id("v5pub"), MqttProtocolVersion.V500);
        await publisher.PublishAsync(new MqttApplicationMessageBuilder().WithTopic(topic + "/kept").WithPayload("r").WithRetainFlag()
            .WithQualityOfServiceLevel(MqttQualityOfServiceLevel.AtLeastOnce)
            .WithUserProperty("origin", Encoding.UTF8.GetBytes("sensor-7").AsMemory()).Build());

        using var subscriber = await s.ConnectAsync(Id("v5sub"), MqttProtocolVersion.V500);
        var received = new Received(subscriber);
        await subscriber.SubscribeAsync(topic + "/#");
        var retained = await received.NextAsync();
        Assert.True(retained.Retain);
        Assert.Equal("sensor-7", Encoding.UTF8.GetString(Assert.Single(retained.UserProperties!).ValueBuffer.Span));

        await publisher.PublishAsync(new MqttApplicationMessageBuilder().WithTopic(topic + "/live").WithPayload("{}")
            .WithContentType("application/json").WithPayloadFormatIndicator(MqttPayloadFormatIndicator.CharacterData)
            .WithCorrelationData([1, 2, 3]).Build());
        var live = await received.NextAsync();
        Assert.Equal("application/json", live.ContentType);
        Assert.Equal(MqttPayloadFormatIndicator.CharacterData, live.PayloadFormatIndicator);
        Assert.Equal(new byte[] { 1, 2, 3 }, live.CorrelationData);
        Assert.Null(live.UserProperties); // the carrier headers are not user properties
    }

    [SkippableFact]
    public async Task Mqtt5_shared_subscriptions_are_queue_groups()
    {
        var s = S;
        using var a = await s.ConnectAsync(Id("sa"), MqttProtocolVersion.V500);
        using var b = await s.ConnectAsync(Id("sb"), MqttProtocolVersion.V500);
        int count = 0;
        Task Count(MqttApplicationMessageReceivedEventArgs _)
        {
            Interlocked.Increment(ref count);
            return Task.CompletedTask;
        }
        a.ApplicationMessageReceivedAsync += Count;
        b.ApplicationMessageReceivedAsync += Count;
        await a.SubscribeAsync("$share/workers/jobs/#");
        await b.SubscribeAsync("$share/workers/jobs/#");
        await using var nats = s.Nats();
        for (int i = 0; i < 20; i++) await nats.PublishAsync("jobs.x", Encoding.UTF8.GetBytes(i.ToString(System.Globalization.CultureInfo.InvariantCulture)));
        await nats.PingAsync();
        var sw = Stopwatch.StartNew();
        while (Volatile.Read(ref count) < 20 && sw.Elapsed < TimeSpan.FromSeconds(15)) await Task.Delay(50);
        Assert.Equal(20, Volatile.Read(ref count));
        // Each message went to one member of the group only.
        await Task.Delay(300);
        Assert.Equal(20, Volatile.Read(ref count));
    }

    [SkippableFact]
    public async Task A_persistent_session_keeps_its_subscriptions_and_qos1_messages_across_reconnects()
    {
        var s = S;
        string id = Id("pers");
        using (var first = await s.ConnectAsync(id, configure: b => b.WithCleanSession(false)))
        {
            await first.SubscribeAsync(new MqttClientSubscribeOptionsBuilder().WithTopicFilter("pers/#", MqttQualityOfServiceLevel.AtLeastOnce).Build());
            await first.DisconnectAsync();
        }
        using (var publisher = await s.ConnectAsync(Id("pub")))
        {
            var ack = await publisher.PublishAsync(new MqttApplicationMessageBuilder().WithTopic("pers/a").WithPayload("while away")
                .WithQualityOfServiceLevel(MqttQualityOfServiceLevel.AtLeastOnce).Build());
            Assert.True(ack.IsSuccess);
        }
        using var again = new MqttClientFactory().CreateMqttClient();
        var received = new Received(again);
        var result = await s.ConnectAsync(again, id, configure: b => b.WithCleanSession(false));
        Assert.True(result.IsSessionPresent);
        var m = await received.NextAsync(30);
        Assert.Equal("pers/a", m.Topic);
        Assert.Equal("while away", m.ConvertPayloadToString());
        Assert.Equal(MqttQualityOfServiceLevel.AtLeastOnce, m.QualityOfServiceLevel);
        // The restored subscription is live too.
        await using var nats = s.Nats();
        await nats.PublishAsync("pers.b", Encoding.UTF8.GetBytes("live"));
        do m = await received.NextAsync(); while (m.ConvertPayloadToString() != "live");
        await again.DisconnectAsync();

        // A clean session discards it.
        using (var clean = await s.ConnectAsync(id, configure: b => b.WithCleanSession(true)))
        {
            await clean.DisconnectAsync();
        }
        using var last = new MqttClientFactory().CreateMqttClient();
        Assert.False((await s.ConnectAsync(last, id, configure: b => b.WithCleanSession(false))).IsSessionPresent);
    }

    [SkippableFact]
    public async Task Mosquitto_clients_publish_and_subscribe()
    {
        var s = S;
        string sub = Prerequisites.RequireProgram("mosquitto_sub", output);
        string pub = Prerequisites.RequireProgram("mosquitto_pub", output);
        var psi = new ProcessStartInfo(sub) { RedirectStandardOutput = true, RedirectStandardError = true };
        foreach (var a in new[] { "-h", "127.0.0.1", "-p", s.MqttPort.ToString(System.Globalization.CultureInfo.InvariantCulture), "-t", "mosq/+", "-C", "1", "-v", "-W", "30" })
            psi.ArgumentList.Add(a);
        using var subscriber = Process.Start(psi)!;
        // mosquitto_sub has subscribed once a NATS-side check sees its interest: publish until it gets one.
        var read = subscriber.StandardOutput.ReadLineAsync();
        var sw = Stopwatch.StartNew();
        while (!read.IsCompleted && sw.Elapsed < TimeSpan.FromSeconds(25))
        {
            var p = new ProcessStartInfo(pub);
            foreach (var a in new[] { "-h", "127.0.0.1", "-p", s.MqttPort.ToString(System.Globalization.CultureInfo.InvariantCulture), "-t", "mosq/one", "-m", "hello", "-q", "1" })
                p.ArgumentList.Add(a);
            using var publisher = Process.Start(p)!;
            await publisher.WaitForExitAsync();
            Assert.Equal(0, publisher.ExitCode);
            await Task.WhenAny(read, Task.Delay(500));
        }
        Assert.Equal("mosq/one hello", await read.WaitAsync(TimeSpan.FromSeconds(5)));
        await subscriber.WaitForExitAsync();
    }
}
