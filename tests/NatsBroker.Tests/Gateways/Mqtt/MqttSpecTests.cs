using System.Diagnostics;
using System.Text;
using NATS.Client.Core;
using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Gateways.Mqtt;

/// <summary>
/// Issue 40: the MQTT 3.1.1 MUSTs a server enforces, as raw bytes over a socket (library clients will not send
/// malformed packets), each case run against ours and nats-server 2.14.5 with the same expected outcome; MQTT 5
/// cases (nats-server has no MQTT 5) against ours and the spec. gateways/mqtt/README.md lists the statements.
/// </summary>
[Collection("Gateways")]
public sealed class MqttSpecTests(ITestOutputHelper output)
{
    private const string Users = """
        authorization { users = [
          { user: alice, password: secret }
          { user: nojs, password: p, permissions: { publish: { deny: "$JS.API.>" }, subscribe: { deny: "$JS.API.>" } } }
          { user: lim, password: p, permissions: { publish: ["fm.>"], subscribe: ["fm.>"] } }
        ] }
        """;

    /// <summary>A CONNECT body (3.1.1 level 4, or 5 with empty property blocks), fields present as given; flags exactly as given.</summary>
    private static byte[] Connect(byte flags, string clientId = "spec", string? willTopic = null, string? user = null, string? password = null,
        byte level = 4, byte[]? rawClientId = null)
    {
        var body = new List<byte>();
        body.AddRange(RawMqtt.Str("MQTT"));
        body.Add(level);
        body.Add(flags);
        body.AddRange(new byte[] { 0, 60 });
        if (level == 5) body.Add(0);
        if (rawClientId is not null) body.AddRange([(byte)(rawClientId.Length >> 8), (byte)rawClientId.Length, .. rawClientId]);
        else body.AddRange(RawMqtt.Str(clientId));
        if (willTopic is not null)
        {
            if (level == 5) body.Add(0);
            body.AddRange(RawMqtt.Str(willTopic));
            body.AddRange(RawMqtt.Str("gone"));
        }
        if (user is not null) body.AddRange(RawMqtt.Str(user));
        if (password is not null) body.AddRange(RawMqtt.Str(password));
        return RawMqtt.Packet(0x10, [.. body]);
    }

    private static string Id() => "spec" + Guid.NewGuid().ToString("N")[..8];

    public static TheoryData<string, string> ConnectCases()
    {
        var data = new TheoryData<string, string>();
        foreach (var server in new[] { "ours", "2.14.5" })
        {
            foreach (var name in new[] { "reserved flag", "password without user name", "will QoS without will flag", "will retain without will flag",
                "will QoS 3", "empty client ID without clean session", "zero-length user name", "ill-formed UTF-8 client ID", "well formed" })
            {
                data.Add(server, name);
            }
        }
        return data;
    }

    private static (byte[] Packet, string Expected) ConnectCase(string name) => name switch
    {
        // [MQTT-3.1.2-3], [MQTT-3.1.2-22], [MQTT-3.1.2-13], [MQTT-3.1.2-15], [MQTT-3.1.2-14]: closed without CONNACK.
        "reserved flag" => (Connect(0x03, Id()), "closed"),
        "password without user name" => (Connect(0x42, Id(), password: "secret"), "closed"),
        "will QoS without will flag" => (Connect(0x0A, Id()), "closed"),
        "will retain without will flag" => (Connect(0x22, Id()), "closed"),
        "will QoS 3" => (Connect(0x1E, Id(), willTopic: "w/t"), "closed"),
        // [MQTT-3.1.3-8]: CONNACK 0x02, then closed.
        "empty client ID without clean session" => (Connect(0x00, ""), "20 0002"),
        // nats-server: CONNACK 0x04 for a zero-length user name.
        "zero-length user name" => (Connect(0xC2, Id(), user: "", password: "secret"), "20 0004"),
        // [MQTT-1.5.3-1] / [MQTT-3.1.3-4]: nats-server answers CONNACK 0x02.
        "ill-formed UTF-8 client ID" => (Connect(0x02, rawClientId: [0x61, 0xC3, 0x28]), "20 0002"),
        "well formed" => (Connect(0xC2, Id(), user: "alice", password: "secret"), "20 0000"),
        _ => throw new ArgumentOutOfRangeException(nameof(name)),
    };

    /// <summary>The CONNECT MUSTs of MQTT 3.1.1 section 3.1: what the client gets is what nats-server 2.14.5 gives.</summary>
    [SkippableTheory]
    [MemberData(nameof(ConnectCases))]
    public async Task A_malformed_3_1_1_CONNECT_is_closed_or_refused_as_nats_server_does(string server, string name)
    {
        await using var s = await MqttOracle.StartAsync(server, output, Users);
        var (packet, expected) = ConnectCase(name);
        using var raw = await RawMqtt.OpenAsync(s.MqttPort);
        await raw.SendRawAsync(packet);
        string outcome = await raw.OutcomeAsync();
        output.WriteLine($"{server}: {name}: {outcome}");
        Assert.Equal(expected, outcome);
        if (expected != "20 0000") Assert.Equal("closed", await raw.OutcomeAsync()); // refused: the connection is closed after CONNACK
    }

    /// <summary>MQTT 5 (ours; nats-server has no MQTT 5): a malformed CONNECT gets CONNACK 0x81, then the close.</summary>
    [SkippableTheory]
    [InlineData(0x03, "reserved flag", "20 0081")] // [MQTT-3.1.2-3]
    [InlineData(0x0A, "will QoS without will flag", "20 0081")] // [MQTT-3.1.2-11]
    [InlineData(0x22, "will retain without will flag", "20 0081")] // [MQTT-3.1.2-13]
    [InlineData(0x1E, "will QoS 3", "20 0081")] // [MQTT-3.1.2-12]
    [InlineData(0xC2, "zero-length user name", "20 0086")] // as nats-server's 3.1.1 0x04
    public async Task A_malformed_MQTT_5_CONNECT_gets_its_reason_code(byte flags, string name, string expected)
    {
        await using var s = await MqttOracle.StartAsync("ours", output, Users);
        using var raw = await RawMqtt.OpenAsync(s.MqttPort);
        await raw.SendRawAsync(Connect(flags, Id(), willTopic: (flags & 0x04) != 0 ? "w/t" : null,
            user: (flags & 0x80) != 0 ? "" : null, password: (flags & 0x40) != 0 ? "secret" : null, level: 5));
        string outcome = await raw.OutcomeAsync();
        output.WriteLine($"{name}: {outcome}");
        Assert.StartsWith(expected, outcome, StringComparison.Ordinal);
        Assert.Equal("closed", await raw.OutcomeAsync());
    }

    /// <summary>MQTT 5 allows a password without a user name (section 3.1.2.9, unlike 3.1.1's [MQTT-3.1.2-22]).</summary>
    [SkippableFact]
    public async Task An_MQTT_5_CONNECT_with_a_password_and_no_user_name_is_accepted()
    {
        // The block's own token: the password alone is the credential (nats-server's mqtt { authorization { token } }).
        await using var s = await MqttOracle.StartAsync("ours", output, Users, "authorization { token: \"s3cret\" }\nno_auth_user: alice");
        using var raw = await RawMqtt.OpenAsync(s.MqttPort);
        await raw.SendRawAsync(Connect(0x42, Id(), password: "s3cret", level: 5));
        string outcome = await raw.OutcomeAsync();
        Assert.StartsWith("20 0000", outcome, StringComparison.Ordinal);
    }

    public static TheoryData<string, string> PacketCases()
    {
        var data = new TheoryData<string, string>();
        foreach (var server in new[] { "ours", "2.14.5" })
        {
            foreach (var name in new[] { "SUBSCRIBE flags 0", "SUBSCRIBE flags 0x3", "SUBSCRIBE without filters", "SUBSCRIBE empty filter", "SUBSCRIBE QoS 3",
                "SUBSCRIBE truncated packet identifier", "SUBSCRIBE packet identifier 0", "UNSUBSCRIBE flags 0", "UNSUBSCRIBE without filters",
                "UNSUBSCRIBE truncated packet identifier", "PUBLISH QoS 3", "PUBREL flags 0", "PINGREQ flags 1", "SUBSCRIBE well formed", "UNSUBSCRIBE well formed" })
            {
                data.Add(server, name);
            }
        }
        return data;
    }

    private static (byte[] Packet, string Expected) PacketCase(string name) => name switch
    {
        "SUBSCRIBE flags 0" => (RawMqtt.Packet(0x80, [0, 1, .. RawMqtt.Str("a/b"), 0]), "closed"), // [MQTT-3.8.1-1]
        "SUBSCRIBE flags 0x3" => (RawMqtt.Packet(0x83, [0, 1, .. RawMqtt.Str("a/b"), 0]), "closed"),
        "SUBSCRIBE without filters" => (RawMqtt.Packet(0x82, [0, 1]), "closed"), // [MQTT-3.8.3-3]
        "SUBSCRIBE empty filter" => (RawMqtt.Packet(0x82, [0, 1, 0, 0, 0]), "closed"), // [MQTT-4.7.3-1]
        "SUBSCRIBE QoS 3" => (RawMqtt.Packet(0x82, [0, 1, .. RawMqtt.Str("a/b"), 3]), "closed"), // [MQTT-3-8.3-4]
        "SUBSCRIBE truncated packet identifier" => (RawMqtt.Packet(0x82, [0]), "closed"),
        "SUBSCRIBE packet identifier 0" => (RawMqtt.Packet(0x82, [0, 0, .. RawMqtt.Str("a/b"), 0]), "closed"), // [MQTT-2.3.1-1]
        "UNSUBSCRIBE flags 0" => (RawMqtt.Packet(0xA0, [0, 1, .. RawMqtt.Str("a/b")]), "closed"), // [MQTT-3.10.1-1]
        "UNSUBSCRIBE without filters" => (RawMqtt.Packet(0xA2, [0, 1]), "closed"), // [MQTT-3.10.3-2]
        "UNSUBSCRIBE truncated packet identifier" => (RawMqtt.Packet(0xA2, [1]), "closed"),
        "PUBLISH QoS 3" => (RawMqtt.Packet(0x36, [.. RawMqtt.Str("a/b"), 0, 1, (byte)'x']), "closed"), // [MQTT-3.3.1-4]
        "PUBREL flags 0" => (RawMqtt.Packet(0x60, [0, 1]), "closed"), // [MQTT-3.6.1-1]
        "PINGREQ flags 1" => (RawMqtt.Packet(0xC1, []), "closed"), // [MQTT-2.2.2-2]
        "SUBSCRIBE well formed" => (RawMqtt.Packet(0x82, [0, 1, .. RawMqtt.Str("a/b"), 1]), "90 000101"),
        "UNSUBSCRIBE well formed" => (RawMqtt.Packet(0xA2, [0, 7, .. RawMqtt.Str("a/b")]), "B0 0007"),
        _ => throw new ArgumentOutOfRangeException(nameof(name)),
    };

    /// <summary>Packets after CONNECT that MQTT 3.1.1 says close the connection: as nats-server 2.14.5 does.</summary>
    [SkippableTheory]
    [MemberData(nameof(PacketCases))]
    public async Task A_malformed_packet_after_CONNECT_closes_the_connection_as_nats_server_does(string server, string name)
    {
        await using var s = await MqttOracle.StartAsync(server, output, Users);
        var (packet, expected) = PacketCase(name);
        using var raw = await RawMqtt.OpenAsync(s.MqttPort);
        await raw.SendRawAsync(Connect(0xC2, Id(), user: "alice", password: "secret"));
        Assert.Equal("20 0000", await raw.OutcomeAsync());
        await raw.SendRawAsync(packet);
        string outcome = await raw.OutcomeAsync();
        output.WriteLine($"{server}: {name}: {outcome}");
        Assert.Equal(expected, outcome);
    }

    /// <summary>MQTT 5: the same packets end with DISCONNECT 0x81 Malformed Packet / 0x82 Protocol Error, then the close.</summary>
    [SkippableTheory]
    [InlineData("SUBSCRIBE flags 0", "E0 81")]
    [InlineData("SUBSCRIBE without filters", "E0 82")] // [MQTT-3.8.3-2]
    [InlineData("SUBSCRIBE retain handling 3", "E0 82")]
    [InlineData("SUBSCRIBE reserved option bits", "E0 81")] // [MQTT-3.8.3-5]
    [InlineData("PUBLISH QoS 3", "E0 81")]
    public async Task A_malformed_MQTT_5_packet_gets_DISCONNECT_with_its_reason(string name, string expected)
    {
        await using var s = await MqttOracle.StartAsync("ours", output, Users);
        byte[] packet = name switch
        {
            "SUBSCRIBE flags 0" => RawMqtt.Packet(0x80, [0, 1, 0, .. RawMqtt.Str("a/b"), 0]),
            "SUBSCRIBE without filters" => RawMqtt.Packet(0x82, [0, 1, 0]),
            "SUBSCRIBE retain handling 3" => RawMqtt.Packet(0x82, [0, 1, 0, .. RawMqtt.Str("a/b"), 0x30]),
            "SUBSCRIBE reserved option bits" => RawMqtt.Packet(0x82, [0, 1, 0, .. RawMqtt.Str("a/b"), 0x40]),
            "PUBLISH QoS 3" => RawMqtt.Packet(0x36, [.. RawMqtt.Str("a/b"), 0, 1, 0, (byte)'x']),
            _ => throw new ArgumentOutOfRangeException(nameof(name)),
        };
        using var raw = await RawMqtt.OpenAsync(s.MqttPort);
        await raw.SendRawAsync(Connect(0xC2, Id(), user: "alice", password: "secret", level: 5));
        Assert.StartsWith("20 0000", await raw.OutcomeAsync(), StringComparison.Ordinal);
        await raw.SendRawAsync(packet);
        string outcome = await raw.OutcomeAsync();
        output.WriteLine($"{name}: {outcome}");
        Assert.StartsWith(expected, outcome, StringComparison.Ordinal);
        Assert.Equal("closed", await raw.OutcomeAsync());
    }

    /// <summary>
    /// A QoS 0 PUBLISH and DISCONNECT in one write: the message is delivered (nats-server handles each packet as it
    /// parses it; ours batched the publish and dropped it at the DISCONNECT, 0 of 10).
    /// </summary>
    [SkippableTheory]
    [InlineData("ours")]
    [InlineData("2.14.5")]
    public async Task A_QoS_0_PUBLISH_followed_by_DISCONNECT_in_the_same_write_is_delivered(string server)
    {
        await using var s = await MqttOracle.StartAsync(server, output, Users);
        await using var nats = new NatsConnection(new NatsOpts
        {
            Url = $"nats://127.0.0.1:{s.NatsPort}",
            AuthOpts = new NatsAuthOpts { Username = "alice", Password = "secret" },
        });
        await using var sub = await nats.SubscribeCoreAsync<string>("last.words");
        await nats.PingAsync();
        const int Runs = 10;
        for (int i = 0; i < Runs; i++)
        {
            using var raw = await RawMqtt.OpenAsync(s.MqttPort);
            await raw.SendRawAsync(Connect(0xC2, Id(), user: "alice", password: "secret"));
            Assert.Equal("20 0000", await raw.OutcomeAsync());
            await raw.SendRawAsync([.. RawMqtt.Packet(0x30, [.. RawMqtt.Str("last/words"), .. Encoding.ASCII.GetBytes(i.ToString(System.Globalization.CultureInfo.InvariantCulture))]), 0xE0, 0x00]);
            Assert.Equal("closed", await raw.OutcomeAsync());
        }
        var got = new List<string>();
        using var cts = new CancellationTokenSource(TimeSpan.FromSeconds(5));
        try
        {
            while (got.Count < Runs) got.Add((await sub.Msgs.ReadAsync(cts.Token)).Data!);
        }
        catch (OperationCanceledException)
        {
        }
        output.WriteLine($"{server}: {got.Count} of {Runs}");
        Assert.Equal(Enumerable.Range(0, Runs).Select(i => i.ToString(System.Globalization.CultureInfo.InvariantCulture)), got.Order());
    }

    /// <summary>
    /// NATS subjects with '/' and empty levels reach MQTT subscribers with the topics nats-server 2.14.5 gives them
    /// (natsSubjectToMQTTTopic: "/." → "/", "//" → ".", a lone '/' dropped). Issue 40 said <c>fm.a/b</c> should be
    /// <c>fm/a/b</c>; 2.14.5 gives <c>fm/ab</c>, and that is what this pins.
    /// </summary>
    [SkippableTheory]
    [InlineData("ours")]
    [InlineData("2.14.5")]
    public async Task NATS_subjects_with_slashes_map_to_the_topics_nats_server_gives(string server)
    {
        await using var s = await MqttOracle.StartAsync(server, output, Users);
        using var raw = await RawMqtt.OpenAsync(s.MqttPort);
        await raw.SendRawAsync(Connect(0xC2, Id(), user: "alice", password: "secret"));
        Assert.Equal("20 0000", await raw.OutcomeAsync());
        Assert.Equal(0, await raw.SubscribeAsync("fm/#", 0));
        await using var nats = new NatsConnection(new NatsOpts
        {
            Url = $"nats://127.0.0.1:{s.NatsPort}",
            AuthOpts = new NatsAuthOpts { Username = "alice", Password = "secret" },
        });
        string[] subjects = ["fm.a/b", "fm.a//b", "fm./.a", "fm.a/.b", "fm.a/", "fm.a.b"];
        foreach (var subject in subjects) await nats.PublishAsync(subject, subject);
        var topics = new List<string>();
        foreach (var subject in subjects)
        {
            var (header, body) = await raw.ReadPacketAsync();
            var (topic, _, _, payload) = RawMqtt.ParsePublish(header, body);
            Assert.Equal(subject, payload);
            topics.Add(topic);
        }
        output.WriteLine($"{server}: {string.Join(" ", topics)}");
        Assert.Equal(["fm/ab", "fm/a.b", "fm//a", "fm/a/b", "fm/a", "fm/a/b"], topics);
    }

    /// <summary>
    /// A user who may not use the JetStream API (a deny on $JS.API.>, or an allow list without it) gets CONNACK at
    /// once and a SUBACK granting what it may subscribe to, as on nats-server 2.14.5 (ours waited 5 s for a
    /// JetStream request the core had refused, then answered 0x80).
    /// </summary>
    [SkippableTheory]
    [InlineData("ours", "nojs")]
    [InlineData("2.14.5", "nojs")]
    [InlineData("ours", "lim")]
    [InlineData("2.14.5", "lim")]
    public async Task A_user_without_JetStream_API_permission_gets_CONNACK_at_once_and_its_subscription(string server, string user)
    {
        await using var s = await MqttOracle.StartAsync(server, output, Users);
        using var raw = await RawMqtt.OpenAsync(s.MqttPort);
        var watch = Stopwatch.StartNew();
        await raw.SendRawAsync(Connect(0xC2, Id(), user: user, password: "p"));
        Assert.Equal("20 0000", await raw.OutcomeAsync());
        var connack = watch.Elapsed;
        byte q0 = await raw.SubscribeAsync("fm/x", 0);
        byte q1 = await raw.SubscribeAsync("fm/y", 1);
        output.WriteLine($"{server} {user}: CONNACK after {connack.TotalMilliseconds:F0} ms, SUBACK {q0} {q1}");
        Assert.True(connack < TimeSpan.FromSeconds(2), $"CONNACK took {connack}");
        Assert.Equal(0, q0);
        Assert.Equal(1, q1);
    }
}
