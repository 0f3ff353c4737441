using System.Text;
using MQTTnet;
using MQTTnet.Formatter;
using MQTTnet.Protocol;
using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Gateways.Mqtt;

/// <summary>One core with its MQTT gateway (max_keepalive 30) for <see cref="Mqtt5FeatureTests"/>.</summary>
/// <remarks>With <c>debug</c>: the gateway logs each connection's end and will, which a failing test prints.</remarks>
public sealed class Mqtt5FeatureFixture() : MqttServerFixture("no_auth_user: alice\n  max_keepalive: 30", MqttTestServer.Users + "\ndebug: true");

/// <summary>
/// MQTT 5 features (OASIS mqtt-v5.0) as an MQTTnet 5 client sees them through our gateway: session and message
/// expiry, subscription options, topic aliases, flow control, Server Keep Alive, refused subscriptions.
/// </summary>
[Collection("Gateways")]
public sealed class Mqtt5FeatureTests(Mqtt5FeatureFixture fixture, ITestOutputHelper output) : IClassFixture<Mqtt5FeatureFixture>
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

    private static MqttApplicationMessage Message(string topic, string payload, MqttQualityOfServiceLevel qos = MqttQualityOfServiceLevel.AtLeastOnce,
        bool retain = false, uint expiry = 0) =>
        new MqttApplicationMessageBuilder().WithTopic(topic).WithPayload(payload).WithQualityOfServiceLevel(qos).WithRetainFlag(retain)
            .WithMessageExpiryInterval(expiry).Build();

    private Task<IMqttClient> V5Async(string id, Action<MqttClientOptionsBuilder>? configure = null) =>
        S.ConnectAsync(id, MqttProtocolVersion.V500, configure);

    /// <summary>
    /// Failed in 1 of 3 CI runs on 2026-11-25 (the ended session's record left stored) until a connection failing after
    /// CONNACK also ended its session; that path is forced in <see cref="MqttSessionEndTests"/>.
    /// </summary>
    [SkippableFact]
    public async Task A_session_with_an_expiry_interval_outlives_a_clean_start_connection_and_expires_after_it()
    {
        var s = S;
        string id = Id("sx");
        using (var first = await V5Async(id, b => b.WithCleanStart(true).WithSessionExpiryInterval(30)))
        {
            await first.SubscribeAsync(new MqttClientSubscribeOptionsBuilder().WithTopicFilter("sx/a", MqttQualityOfServiceLevel.AtLeastOnce).Build());
            await first.DisconnectAsync();
        }
        // As in the expiry test below: a message sent while the gateway still delivers to the old connection is in
        // flight there and comes back only after ack_wait.
        Assert.True(await SessionDetachedAsync(s, id, TimeSpan.FromSeconds(15)), "the session was not detached\n" + s.Server.OutputTail());
        using (var publisher = await V5Async(Id("sxpub")))
        {
            Assert.True((await publisher.PublishAsync(Message("sx/a", "queued"))).IsSuccess);
        }
        using var again = new MqttClientFactory().CreateMqttClient();
        var received = new Received(again);
        var result = await s.ConnectAsync(again, id, MqttProtocolVersion.V500, b => b.WithCleanStart(false).WithSessionExpiryInterval(1));
        Assert.True(result.IsSessionPresent, "the kept session was not resumed\n" + s.Server.OutputTail());
        Assert.Equal("queued", (await received.NextAsync(30)).ConvertPayloadToString());
        await again.DisconnectAsync(); // now kept for 1 s only

        await Task.Delay(2500);
        using var late = new MqttClientFactory().CreateMqttClient();
        var lateResult = await s.ConnectAsync(late, id, MqttProtocolVersion.V500, b => b.WithCleanStart(false).WithSessionExpiryInterval(60));
        Assert.False(lateResult.IsSessionPresent, "the session outlived its 1 s expiry by 1.5 s\n" + s.Server.OutputTail());
        await late.DisconnectAsync();

        // A DISCONNECT raises the interval; a session resumed with interval 0 ends with that connection.
        using (var kept = new MqttClientFactory().CreateMqttClient())
        {
            await s.ConnectAsync(kept, id, MqttProtocolVersion.V500, b => b.WithCleanStart(false).WithSessionExpiryInterval(1));
            await kept.DisconnectAsync(new MqttClientDisconnectOptionsBuilder().WithSessionExpiryInterval(60).Build());
        }
        await Task.Delay(1500);
        using var ended = new MqttClientFactory().CreateMqttClient();
        Assert.True((await s.ConnectAsync(ended, id, MqttProtocolVersion.V500, b => b.WithCleanStart(false))).IsSessionPresent,
            "the session kept for 60 s by DISCONNECT was gone 1.5 s later\n" + s.Server.OutputTail());
        await ended.DisconnectAsync();
        // The session ends with that connection: its record is purged from $MQTT_sess. Wait for that (the gateway
        // ends the old connection asynchronously; a CONNECT that overtakes it would take over a live session,
        // [MQTT-3.1.4-3]), then a new connection finds no session.
        string? left = null;
        Assert.True(await PollSessionRecordAsync(s, id, TimeSpan.FromSeconds(15), record => (left = record) is null),
            $"the ended session's record is still stored: {left}\n{s.Server.OutputTail()}");
        using var after = new MqttClientFactory().CreateMqttClient();
        Assert.False((await s.ConnectAsync(after, id, MqttProtocolVersion.V500, b => b.WithCleanStart(false))).IsSessionPresent);
    }

    /// <summary>
    /// A client that sends CONNECT and DISCONNECT and resets the connection without reading the CONNACK (MQTTnet can
    /// close this early when its DisconnectAsync follows the connect at once): the gateway's CONNACK write fails, and
    /// the DISCONNECT it has already received still ends the connection as a DISCONNECT, with no will
    /// ([MQTT-3.1.2-10]) and, in MQTT 5, its Session Expiry Interval. Before, the write failure ended it as a vanished
    /// client: the will was published, and the session expired by CONNECT's interval (the cause of the test above
    /// failing ~1 run in 50: its session, kept for 60 s by DISCONNECT, gone 1.5 s later).
    /// </summary>
    [SkippableFact]
    public async Task A_disconnect_sent_before_the_connack_is_read_still_counts_when_the_connack_write_fails()
    {
        var s = S;
        string id = Id("hasty");
        await using var nats = s.Nats();
        await using var wills = await nats.SubscribeCoreAsync<byte[]>("hasty.will");
        using (var hasty = await RawMqtt.ConnectAsync(s.MqttPort, id, willTopic: "hasty/will", willMessage: "gone", cleanSession: false))
        {
            await hasty.DisconnectAsync();
            hasty.Vanish();
        }
        string ended = $"mqtt client {id} ended (DISCONNECT: ";
        await s.Server.WaitForOutputAsync(ended, TimeSpan.FromSeconds(15));
        Assert.True(s.Server.Output.Contains(ended + "True", StringComparison.Ordinal), "the DISCONNECT was not taken as one\n" + s.Server.OutputTail());
        // The will, were it published, follows that line once the session's records are written.
        using var quiet = new CancellationTokenSource(TimeSpan.FromSeconds(2));
        await Assert.ThrowsAnyAsync<OperationCanceledException>(async () => await wills.Msgs.ReadAsync(quiet.Token));
        // The reset reaches the gateway long before its CONNACK (a core link and a session lookup come first); if the
        // client was held up so long that the CONNACK went out, the DISCONNECT took the ordinary path and this run
        // proved nothing about the failed write.
        Skip.IfNot(s.Server.Output.Contains($"mqtt client {id}: connection failed after its session was restored", StringComparison.Ordinal),
            "the gateway's CONNACK write did not fail this time: the client's reset came after it");
    }

    /// <summary>
    /// Polls until the client's session record carries <c>"expires"</c>: the gateway writes it when the connection's
    /// end is processed (deliveries to it stopped), which a client's DISCONNECT does not wait for.
    /// </summary>
    private static Task<bool> SessionDetachedAsync(MqttTestServer s, string clientId, TimeSpan limit) =>
        PollSessionRecordAsync(s, clientId, limit, record => record is not null && record.Contains("\"expires\"", StringComparison.Ordinal));

    /// <summary>
    /// Polls the session stream's record of the client (subject <c>$MQTT.sess.&lt;8 base-62 digits of its
    /// SHA-256&gt;</c>, gateways/mqtt MqttSession.Durable.cs; null when there is none) until <paramref name="done"/>.
    /// </summary>
    internal static async Task<bool> PollSessionRecordAsync(MqttTestServer s, string clientId, TimeSpan limit, Func<string?, bool> done)
    {
        const string digits = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
        var sha = System.Security.Cryptography.SHA256.HashData(Encoding.UTF8.GetBytes(clientId));
        var subject = "$MQTT.sess." + new string([.. sha.Take(8).Select(b => digits[b % 62])]);
        await using var nats = s.Nats();
        var until = DateTime.UtcNow + limit;
        while (DateTime.UtcNow < until)
        {
            var reply = await nats.RequestAsync<string, string>("$JS.API.STREAM.MSG.GET.$MQTT_sess", $$"""{"last_by_subj":"{{subject}}"}""");
            string? record = null;
            if (reply.Data is { } json && !json.Contains("\"code\":404", StringComparison.Ordinal))
            {
                using var doc = System.Text.Json.JsonDocument.Parse(json);
                record = Encoding.UTF8.GetString(doc.RootElement.GetProperty("message").GetProperty("data").GetBytesFromBase64());
            }
            if (done(record)) return true;
            await Task.Delay(100);
        }
        return false;
    }

    [SkippableFact]
    public async Task Expired_messages_are_not_delivered_and_the_rest_carry_the_time_left()
    {
        var s = S;
        string id = Id("mx");
        using (var first = await V5Async(id, b => b.WithSessionExpiryInterval(300)))
        {
            await first.SubscribeAsync(new MqttClientSubscribeOptionsBuilder().WithTopicFilter("mx/#", MqttQualityOfServiceLevel.AtLeastOnce).Build());
            await first.DisconnectAsync();
        }
        // Published only once the gateway has processed the DISCONNECT: a message sent to the still attached session
        // is in flight, and an in-flight QoS 1 message is sent again on resumption even when expired by then
        // ([MQTT-4.4.0-1]; [MQTT-3.3.2-5] drops only what was not yet on its way).
        Assert.True(await SessionDetachedAsync(s, id, TimeSpan.FromSeconds(15)), "the session was not detached\n" + s.Server.OutputTail());
        using (var publisher = await V5Async(Id("mxpub")))
        {
            await publisher.PublishAsync(Message("mx/a", "short", expiry: 1));
            await publisher.PublishAsync(Message("mx/a", "long", expiry: 60));
            await publisher.PublishAsync(Message("mx/r", "retained short", MqttQualityOfServiceLevel.AtMostOnce, retain: true, expiry: 1));
        }
        await Task.Delay(2500);
        using var again = new MqttClientFactory().CreateMqttClient();
        var received = new Received(again);
        Assert.True((await s.ConnectAsync(again, id, MqttProtocolVersion.V500, b => b.WithCleanStart(false).WithSessionExpiryInterval(300))).IsSessionPresent);
        var m = await received.NextAsync(30);
        Assert.Equal("long", m.ConvertPayloadToString());
        Assert.InRange(m.MessageExpiryInterval, 1u, 58u); // counted down by the time it spent waiting
        // The expired retained message is not sent to a new subscriber either.
        await again.SubscribeAsync("mx/r");
        Assert.True(await received.NothingWithinAsync(1000));
        await again.DisconnectAsync(new MqttClientDisconnectOptionsBuilder().WithSessionExpiryInterval(0).Build());
    }

    [SkippableFact]
    public async Task No_local_retain_as_published_and_retain_handling()
    {
        using var a = await V5Async(Id("nla"));
        using var b = await V5Async(Id("nlb"));
        var atA = new Received(a);
        var atB = new Received(b);
        string topic = "opts/" + Guid.NewGuid().ToString("N")[..8];
        await a.SubscribeAsync(new MqttClientSubscribeOptionsBuilder().WithTopicFilter(f => f.WithTopic(topic + "/nl").WithNoLocal()).Build());
        await b.SubscribeAsync(new MqttClientSubscribeOptionsBuilder().WithTopicFilter(f => f.WithTopic(topic + "/nl").WithNoLocal()).Build());
        await a.PublishAsync(Message(topic + "/nl", "not to myself"));
        Assert.Equal("not to myself", (await atB.NextAsync()).ConvertPayloadToString());
        Assert.True(await atA.NothingWithinAsync(500));

        // Retain As Published: the RETAIN flag of a live message as it was published (else 0).
        await a.SubscribeAsync(new MqttClientSubscribeOptionsBuilder().WithTopicFilter(f => f.WithTopic(topic + "/rap").WithRetainAsPublished()).Build());
        await b.SubscribeAsync(topic + "/rap");
        await b.PublishAsync(Message(topic + "/rap", "kept", retain: true));
        Assert.True((await atA.NextAsync()).Retain);
        Assert.False((await atB.NextAsync()).Retain);

        // Retain Handling 1: retained messages only for a new subscription; 2: never; 0: every time.
        var onlyNew = new MqttClientSubscribeOptionsBuilder().WithTopicFilter(f => f.WithTopic(topic + "/+")
            .WithRetainHandling(MqttRetainHandling.SendAtSubscribeIfNewSubscriptionOnly)).Build();
        await a.SubscribeAsync(onlyNew);
        Assert.Equal("kept", (await atA.NextAsync()).ConvertPayloadToString());
        await a.SubscribeAsync(onlyNew);
        Assert.True(await atA.NothingWithinAsync(500));
        await b.SubscribeAsync(new MqttClientSubscribeOptionsBuilder().WithTopicFilter(f => f.WithTopic(topic + "/#")
            .WithRetainHandling(MqttRetainHandling.DoNotSendOnSubscribe)).Build());
        Assert.True(await atB.NothingWithinAsync(500));
        await b.SubscribeAsync(topic + "/#");
        var again = await atB.NextAsync();
        Assert.True(again.Retain);
        Assert.Equal("kept", again.ConvertPayloadToString());
        await b.PublishAsync(Message(topic + "/rap", "", retain: true)); // clean up
    }

    [SkippableFact]
    public async Task A_resumed_session_keeps_its_subscription_options_and_identifiers()
    {
        var s = S;
        string id = Id("so");
        string topic = "so/" + Guid.NewGuid().ToString("N")[..8];
        using (var first = await V5Async(id, b => b.WithSessionExpiryInterval(300)))
        {
            await first.SubscribeAsync(new MqttClientSubscribeOptionsBuilder().WithSubscriptionIdentifier(7)
                .WithTopicFilter(f => f.WithTopic(topic + "/nl").WithQualityOfServiceLevel(MqttQualityOfServiceLevel.AtLeastOnce).WithNoLocal()).Build());
            await first.SubscribeAsync(new MqttClientSubscribeOptionsBuilder().WithSubscriptionIdentifier(8)
                .WithTopicFilter(f => f.WithTopic(topic + "/rap").WithRetainAsPublished()).Build());
            await first.DisconnectAsync();
        }
        Assert.True(await SessionDetachedAsync(s, id, TimeSpan.FromSeconds(15)), "the session was not detached\n" + s.Server.OutputTail());

        using var again = new MqttClientFactory().CreateMqttClient();
        var received = new Received(again);
        Assert.True((await s.ConnectAsync(again, id, MqttProtocolVersion.V500, b => b.WithCleanStart(false).WithSessionExpiryInterval(300))).IsSessionPresent);
        // Its own message (PUBACKed, so processed after the restored subscriptions) is not delivered to it: No Local
        // was restored, for the QoS 1 subscription's durable consumer as for live delivery.
        Assert.True((await again.PublishAsync(Message(topic + "/nl", "mine"))).IsSuccess);
        using (var other = await V5Async(Id("sopub")))
        {
            await other.PublishAsync(Message(topic + "/nl", "theirs"));
            await other.PublishAsync(Message(topic + "/rap", "kept", MqttQualityOfServiceLevel.AtMostOnce, retain: true));
            // Two paths (the QoS 1 one through JetStream), so in either order.
            var got = new[] { await received.NextAsync(30), await received.NextAsync(30) }.OrderBy(m => m.Topic, StringComparer.Ordinal).ToArray();
            Assert.Equal(("theirs", 7u), (got[0].ConvertPayloadToString(), Assert.Single(got[0].SubscriptionIdentifiers)));
            Assert.Equal(("kept", 8u, true), (got[1].ConvertPayloadToString(), Assert.Single(got[1].SubscriptionIdentifiers), got[1].Retain));
            Assert.True(await received.NothingWithinAsync(1000));
            await other.PublishAsync(Message(topic + "/rap", "", MqttQualityOfServiceLevel.AtMostOnce, retain: true)); // clean up
        }
        await again.DisconnectAsync(new MqttClientDisconnectOptionsBuilder().WithSessionExpiryInterval(0).Build());
    }

    [SkippableFact]
    public async Task Overlapping_subscriptions_get_one_message_with_every_identifier_at_the_highest_qos()
    {
        using var client = await V5Async(Id("ov"));
        var received = new Received(client);
        string topic = "ov/" + Guid.NewGuid().ToString("N")[..8];
        await client.SubscribeAsync(new MqttClientSubscribeOptionsBuilder().WithSubscriptionIdentifier(2).WithTopicFilter(topic + "/a").Build());
        await client.SubscribeAsync(new MqttClientSubscribeOptionsBuilder().WithSubscriptionIdentifier(3)
            .WithTopicFilter(topic + "/#", MqttQualityOfServiceLevel.AtLeastOnce).Build());
        using var publisher = await V5Async(Id("ovpub"));
        await publisher.PublishAsync(Message(topic + "/a", "both"));
        var m = await received.NextAsync();
        Assert.Equal("both", m.ConvertPayloadToString());
        Assert.Equal([2u, 3u], m.SubscriptionIdentifiers.Order());
        Assert.Equal(MqttQualityOfServiceLevel.AtLeastOnce, m.QualityOfServiceLevel);
        // The parent level of x/# overlaps too; a topic only one filter matches carries only its identifier.
        await publisher.PublishAsync(Message(topic + "/b", "one"));
        m = await received.NextAsync();
        Assert.Equal(("one", 3u), (m.ConvertPayloadToString(), Assert.Single(m.SubscriptionIdentifiers)));
        Assert.True(await received.NothingWithinAsync(500));
    }

    [SkippableFact]
    public async Task Topic_aliases_both_ways()
    {
        var s = S;
        // Server → client: the client allows 4 aliases; the gateway sets one on the first message and uses it after.
        using var sub = new MqttClientFactory().CreateMqttClient();
        var received = new Received(sub);
        var connack = await s.ConnectAsync(sub, Id("ta"), MqttProtocolVersion.V500, b => b.WithTopicAliasMaximum(4));
        Assert.True(connack.TopicAliasMaximum > 0);
        string topic = "alias/" + Guid.NewGuid().ToString("N")[..8];
        await sub.SubscribeAsync(topic);

        // Client → server: alias 1 set with the topic, then used alone.
        using var pub = await V5Async(Id("tapub"));
        await pub.PublishAsync(new MqttApplicationMessageBuilder().WithTopic(topic).WithTopicAlias(1).WithPayload("one").Build());
        await pub.PublishAsync(new MqttApplicationMessageBuilder().WithTopic("").WithTopicAlias(1).WithPayload("two").Build());
        var first = await received.NextAsync();
        var second = await received.NextAsync();
        Assert.Equal((topic, "one"), (first.Topic, first.ConvertPayloadToString()));
        Assert.True(first.TopicAlias > 0);
        // MQTTnet 5.2 hands the packet's topic and alias through as they came: the second names only the alias.
        Assert.Equal(("", "two", first.TopicAlias), (second.Topic, second.ConvertPayloadToString(), second.TopicAlias));
    }

    [SkippableFact]
    public async Task The_gateway_sends_no_more_unacknowledged_messages_than_the_receive_maximum()
    {
        var s = S;
        using var client = new MqttClientFactory().CreateMqttClient();
        var held = new System.Collections.Concurrent.ConcurrentQueue<MqttApplicationMessageReceivedEventArgs>();
        client.ApplicationMessageReceivedAsync += e =>
        {
            e.AutoAcknowledge = false;
            held.Enqueue(e);
            return Task.CompletedTask;
        };
        await s.ConnectAsync(client, Id("rm"), MqttProtocolVersion.V500, b => b.WithReceiveMaximum(2));
        string topic = "rm/" + Guid.NewGuid().ToString("N")[..8];
        await client.SubscribeAsync(topic, MqttQualityOfServiceLevel.AtLeastOnce);
        // The client publishes to its own subscription while it does not acknowledge: its own PUBACKs must still come
        // (the gateway must not stop serving it while its window is full).
        using var timeout = new CancellationTokenSource(TimeSpan.FromSeconds(20));
        for (int i = 0; i < 4; i++) Assert.True((await client.PublishAsync(Message(topic, "m" + i), timeout.Token)).IsSuccess);
        await Task.Delay(500);
        Assert.Equal(2, held.Count);

        // Each acknowledgement lets one more in, in order.
        Assert.True(held.TryDequeue(out var e0));
        await e0.AcknowledgeAsync(timeout.Token);
        var sw = System.Diagnostics.Stopwatch.StartNew();
        while (held.Count < 2 && sw.Elapsed < TimeSpan.FromSeconds(15)) await Task.Delay(20);
        Assert.Equal(["m1", "m2"], held.Select(h => h.ApplicationMessage.ConvertPayloadToString()));
        foreach (var h in held) await h.AcknowledgeAsync(timeout.Token);
    }

    [SkippableFact]
    public async Task Server_keep_alive_caps_the_clients_keep_alive()
    {
        using var client = new MqttClientFactory().CreateMqttClient();
        var result = await S.ConnectAsync(client, Id("ka"), MqttProtocolVersion.V500, b => b.WithKeepAlivePeriod(TimeSpan.FromSeconds(120)));
        Assert.Equal(30, result.ServerKeepAlive);
        using var shorter = new MqttClientFactory().CreateMqttClient();
        var asked = await S.ConnectAsync(shorter, Id("ka2"), MqttProtocolVersion.V500, b => b.WithKeepAlivePeriod(TimeSpan.FromSeconds(10)));
        Assert.Equal(0, asked.ServerKeepAlive); // not sent: the client's own value stands
    }

    /// <summary>MQTT 5 section 4.12 [MQTT-4.12.0-1]: a method not offered (SCRAM-SHA-256 and the hook's are: MqttEnhancedAuthTests) is refused with 0x8C.</summary>
    [SkippableFact]
    public async Task A_connect_naming_an_authentication_method_is_refused_with_bad_authentication_method()
    {
        using var client = new MqttClientFactory().CreateMqttClient();
        var refused = await S.ConnectAsync(client, Id("scram"), MqttProtocolVersion.V500,
            b => b.WithEnhancedAuthentication("GS2-KRB5", Encoding.UTF8.GetBytes("n,,n=alice,r=abc")));
        Assert.Equal(MqttClientConnectResultCode.BadAuthenticationMethod, refused.ResultCode);
        Assert.False(client.IsConnected);
        // Without a method the same client ID connects.
        using var plain = await V5Async(Id("scram"));
        Assert.True(plain.IsConnected);
    }

    [SkippableFact]
    public async Task A_subscription_the_core_refuses_is_not_authorized_in_mqtt5_and_a_failure_in_311()
    {
        using var v5 = await S.ConnectAsync(Id("deny5"), MqttProtocolVersion.V500, b => b.WithCredentials("bob", "pw"));
        var suback = await v5.SubscribeAsync(new MqttClientSubscribeOptionsBuilder().WithTopicFilter("secret/x").WithTopicFilter("open/x").Build());
        Assert.Equal(MqttClientSubscribeResultCode.NotAuthorized, suback.Items.First(i => i.TopicFilter.Topic == "secret/x").ResultCode);
        Assert.Equal(MqttClientSubscribeResultCode.GrantedQoS0, suback.Items.First(i => i.TopicFilter.Topic == "open/x").ResultCode);
        using var v311 = await S.ConnectAsync(Id("deny3"), MqttProtocolVersion.V311, b => b.WithCredentials("bob", "pw"));
        suback = await v311.SubscribeAsync("secret/x");
        Assert.Equal(MqttClientSubscribeResultCode.UnspecifiedError, Assert.Single(suback.Items).ResultCode);
    }

    [SkippableFact]
    public async Task A_return_within_the_will_delay_cancels_the_will()
    {
        var s = S;
        using var watcher = await V5Async(Id("wdw"));
        var received = new Received(watcher);
        string topic = "will/" + Guid.NewGuid().ToString("N")[..8];
        await watcher.SubscribeAsync(topic);
        string id = Id("wd");

        // Vanishes (no DISCONNECT: "Disconnect with Will Message"), comes back within the delay: no will.
        using (var first = await V5Async(id, b => b.WithSessionExpiryInterval(60).WithWillTopic(topic).WithWillPayload(Encoding.UTF8.GetBytes("gone"))
            .WithWillDelayInterval(3)))
        {
            await first.DisconnectAsync(new MqttClientDisconnectOptionsBuilder().WithReason(MqttClientDisconnectOptionsReason.DisconnectWithWillMessage).Build());
        }
        using (var back = await V5Async(id, b => b.WithCleanStart(false).WithSessionExpiryInterval(60)))
        {
            Assert.True(await received.NothingWithinAsync(4000));
            await back.DisconnectAsync(new MqttClientDisconnectOptionsBuilder().WithSessionExpiryInterval(0).Build());
        }
    }

    /// <summary>
    /// Known defect, not fixed yet: in about one run of three of the MQTT test group (and once in a CI run) the delayed
    /// will never arrives. Skipped so that it does not hide other failures; gateways/mqtt/README.md "Not done".
    /// </summary>
    [SkippableFact]
    public async Task A_will_is_published_after_its_delay_when_the_client_does_not_return()
    {
        using var watcher = await V5Async(Id("wdw2"));
        var received = new Received(watcher);
        string topic = "will/" + Guid.NewGuid().ToString("N")[..8];
        await watcher.SubscribeAsync(topic);
        // Not back: the will comes after its delay (bounded by a 1 s session expiry here).
        using (var second = await V5Async(Id("wd2"), b => b.WithSessionExpiryInterval(1).WithWillTopic(topic).WithWillPayload(Encoding.UTF8.GetBytes("gone"))
            .WithWillDelayInterval(30)))
        {
            await second.DisconnectAsync(new MqttClientDisconnectOptionsBuilder().WithReason(MqttClientDisconnectOptionsReason.DisconnectWithWillMessage).Build());
        }
        var sw = System.Diagnostics.Stopwatch.StartNew();
        MqttApplicationMessage will;
        try
        {
            will = await received.NextAsync(20);
        }
        catch (OperationCanceledException)
        {
            throw new Xunit.Sdk.XunitException("no will within 20 s\n" + S.Server.OutputTail());
        }
        Assert.Equal("gone", will.ConvertPayloadToString());
        Assert.InRange(sw.Elapsed, TimeSpan.FromMilliseconds(500), TimeSpan.FromSeconds(20));
    }
}
