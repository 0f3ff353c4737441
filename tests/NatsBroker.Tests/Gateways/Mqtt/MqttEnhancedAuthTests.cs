using System.Collections.Concurrent;
using System.Diagnostics;
using System.Net.Sockets;
using System.Text;
using System.Text.Json.Nodes;
using MQTTnet;
using MQTTnet.Formatter;
using MQTTnet.Packets;
using MQTTnet.Protocol;
using NATS.Client.Core;
using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Gateways.Mqtt;

/// <summary>
/// One core with its MQTT gateway offering SCRAM-SHA-256 (built in) and two hook methods answered on
/// <c>mqtt.auth.step</c> within 1 s, for <see cref="MqttEnhancedAuthTests"/>. Users: alice and bob (plaintext, bob
/// denied <c>secret.&gt;</c>), carol (bcrypt); MQTT clients without credentials become alice.
/// </summary>
public sealed class MqttEnhancedAuthFixture() : MqttServerFixture(
    """
    no_auth_user: alice
      enhanced_authentication {
        methods: ["X-TOKEN", "X-SLOW"]
        subject: "mqtt.auth.step"
        timeout: "1s"
      }
    """,
    $$"""
    authorization {
      users = [
        { user: alice, password: secret }
        { user: bob, password: pw, permissions: { publish: { deny: "secret.>" }, subscribe: { deny: "secret.>" } } }
        { user: carol, password: "{{Clients.NatsJs.BcryptHash}}" }
      ]
    }
    debug: true
    """);

/// <summary>
/// MQTT 5 enhanced authentication (OASIS mqtt-v5.0 section 4.12, AUTH section 3.15) through the gateway, driven by
/// MQTTnet 5's client (its IMqttEnhancedAuthenticationHandler) with an RFC 5802/7677 SCRAM-SHA-256 client written
/// for the test, and by a NATS.Net service answering the hook's requests.
/// </summary>
[Collection("Gateways")]
public sealed class MqttEnhancedAuthTests(MqttEnhancedAuthFixture fixture, ITestOutputHelper output) : IClassFixture<MqttEnhancedAuthFixture>
{
    private const string Scram = "SCRAM-SHA-256";

    private MqttTestServer S
    {
        get
        {
            Prerequisites.RequireServer(ServerKind.Ours, output);
            return fixture.Server!;
        }
    }

    private static string Id(string name) => MqttServerFixture.Id(name);

    private Task<MqttClientConnectResult> ScramConnectAsync(IMqttClient client, string id, ScramAuthHandler handler) =>
        S.ConnectAsync(client, id, MqttProtocolVersion.V500, b => b.WithEnhancedAuthentication(Scram, handler.Start()).WithEnhancedAuthenticationHandler(handler));

    /// <summary>Completes with the reason of the server's DISCONNECT (or of the connection's end).</summary>
    private static Task<MqttClientDisconnectReason> DisconnectReason(IMqttClient client)
    {
        var reason = new TaskCompletionSource<MqttClientDisconnectReason>(TaskCreationOptions.RunContinuationsAsynchronously);
        client.DisconnectedAsync += e =>
        {
            reason.TrySetResult(e.Reason);
            return Task.CompletedTask;
        };
        return reason.Task;
    }

    [SkippableFact]
    public async Task Scram_sha_256_logs_in_as_the_user_with_its_permissions_and_the_server_proves_the_password()
    {
        using var client = new MqttClientFactory().CreateMqttClient();
        var handler = new ScramAuthHandler("bob", "pw");
        var result = await ScramConnectAsync(client, Id("scram"), handler);
        Assert.Equal(MqttClientConnectResultCode.Success, result.ResultCode);
        Assert.Equal(1, handler.Rounds); // one server AUTH 0x18 (server-first-message)
        Assert.Equal(Scram, result.AuthenticationMethod);
        Assert.True(handler.VerifyServerFinal(result.AuthenticationData), "CONNACK's data is not the server-final-message for this exchange: "
            + (result.AuthenticationData is null ? "none" : Encoding.UTF8.GetString(result.AuthenticationData)));
        // bob's permissions, not the no_auth_user alice's: secret.> is denied to bob only.
        var suback = await client.SubscribeAsync(new MqttClientSubscribeOptionsBuilder().WithTopicFilter("secret/x").WithTopicFilter("open/x").Build());
        Assert.Equal(MqttClientSubscribeResultCode.NotAuthorized, suback.Items.First(i => i.TopicFilter.Topic == "secret/x").ResultCode);
        Assert.Equal(MqttClientSubscribeResultCode.GrantedQoS0, suback.Items.First(i => i.TopicFilter.Topic == "open/x").ResultCode);
    }

    /// <summary>MQTT over WebSocket runs the same sessions in the websocket gateway's process, which offers the same methods.</summary>
    [SkippableFact]
    public async Task Scram_sha_256_works_for_mqtt_over_websocket()
    {
        Prerequisites.RequireServer(ServerKind.Ours, output);
        int wsPort = TestPorts.Next();
        await using var s = await MqttTestServer.StartAsync(ServerKind.Ours, output, "no_auth_user: alice",
            MqttTestServer.Users + $"\nwebsocket {{ host: \"127.0.0.1\", port: {wsPort}, no_tls: true }}\n");
        await GatewayTestHelpers.WaitListeningAsync(wsPort);
        using var client = new MqttClientFactory().CreateMqttClient();
        var handler = new ScramAuthHandler("bob", "pw");
        var options = new MqttClientOptionsBuilder().WithWebSocketServer(o => o.WithUri($"ws://127.0.0.1:{wsPort}/mqtt"))
            .WithClientId(Id("wsscram")).WithProtocolVersion(MqttProtocolVersion.V500).WithTimeout(TimeSpan.FromSeconds(15))
            .WithEnhancedAuthentication(Scram, handler.Start()).WithEnhancedAuthenticationHandler(handler).Build();
        var result = await client.ConnectAsync(options);
        Assert.Equal(MqttClientConnectResultCode.Success, result.ResultCode);
        Assert.True(handler.VerifyServerFinal(result.AuthenticationData));
        var suback = await client.SubscribeAsync("secret/x");
        Assert.Equal(MqttClientSubscribeResultCode.NotAuthorized, Assert.Single(suback.Items).ResultCode);
    }

    [SkippableTheory]
    [InlineData("bob", "wrong")]
    [InlineData("nobody", "pw")]
    public async Task Scram_with_a_wrong_password_or_an_unknown_user_is_not_authorized(string user, string password)
    {
        using var client = new MqttClientFactory().CreateMqttClient();
        var handler = new ScramAuthHandler(user, password);
        var result = await ScramConnectAsync(client, Id("scramno"), handler);
        Assert.Equal(MqttClientConnectResultCode.NotAuthorized, result.ResultCode);
        // An unknown user gets a made-up salt and fails at the proof, as a wrong password does.
        Assert.Equal(1, handler.Rounds);
        Assert.False(client.IsConnected);
    }

    [SkippableFact]
    public async Task Scram_for_a_user_with_a_bcrypt_password_is_a_bad_authentication_method_but_its_password_still_works()
    {
        using var client = new MqttClientFactory().CreateMqttClient();
        var result = await ScramConnectAsync(client, Id("scrambc"), new ScramAuthHandler("carol", Clients.NatsJs.BcryptPassword));
        Assert.Equal(MqttClientConnectResultCode.BadAuthenticationMethod, result.ResultCode);
        using var plain = await S.ConnectAsync(Id("scrambc"), MqttProtocolVersion.V500, b => b.WithCredentials("carol", Clients.NatsJs.BcryptPassword));
        Assert.True(plain.IsConnected);
    }

    [SkippableFact]
    public async Task An_unknown_method_is_a_bad_authentication_method()
    {
        using var client = new MqttClientFactory().CreateMqttClient();
        var result = await S.ConnectAsync(client, Id("unknown"), MqttProtocolVersion.V500,
            b => b.WithEnhancedAuthentication("GS2-KRB5", [1, 2, 3]).WithEnhancedAuthenticationHandler(new ScramAuthHandler("bob", "pw")));
        Assert.Equal(MqttClientConnectResultCode.BadAuthenticationMethod, result.ResultCode);
        Assert.False(client.IsConnected);
    }

    [SkippableFact]
    public async Task Reauthentication_with_scram_succeeds_and_the_connection_goes_on()
    {
        using var client = new MqttClientFactory().CreateMqttClient();
        var handler = new ScramAuthHandler("bob", "pw");
        Assert.Equal(MqttClientConnectResultCode.Success, (await ScramConnectAsync(client, Id("reauth"), handler)).ResultCode);
        var received = new Received(client);
        await client.SubscribeAsync("reauth/ok");
        await client.SendEnhancedAuthenticationExchangeDataAsync(new MqttEnhancedAuthenticationExchangeData
        {
            ReasonCode = MqttAuthenticateReasonCode.ReAuthenticate,
            AuthenticationData = handler.Start(),
        });
        Assert.True(await handler.Reauthenticated.WaitAsync(TimeSpan.FromSeconds(15)), "AUTH 0x00 did not carry this exchange's server signature");
        Assert.Equal(2, handler.Rounds);
        Assert.True(client.IsConnected);
        await client.PublishStringAsync("reauth/ok", "still here");
        Assert.Equal("still here", (await received.NextAsync()).ConvertPayloadToString());
    }

    [SkippableFact]
    public async Task Reauthentication_with_a_wrong_password_is_disconnected_not_authorized()
    {
        using var client = new MqttClientFactory().CreateMqttClient();
        var handler = new ScramAuthHandler("bob", "pw");
        Assert.Equal(MqttClientConnectResultCode.Success, (await ScramConnectAsync(client, Id("reauthno"), handler)).ResultCode);
        var disconnected = DisconnectReason(client);
        handler.Password = "wrong";
        await client.SendEnhancedAuthenticationExchangeDataAsync(new MqttEnhancedAuthenticationExchangeData
        {
            ReasonCode = MqttAuthenticateReasonCode.ReAuthenticate,
            AuthenticationData = handler.Start(),
        });
        Assert.Equal(MqttClientDisconnectReason.NotAuthorized, await disconnected.WaitAsync(TimeSpan.FromSeconds(15)));
        Assert.False(handler.Reauthenticated.IsCompleted);
    }

    [SkippableFact]
    public async Task Auth_from_a_client_that_did_not_use_enhanced_authentication_is_a_protocol_error()
    {
        using var client = await S.ConnectAsync(Id("noauth"), MqttProtocolVersion.V500);
        var disconnected = DisconnectReason(client);
        await client.SendEnhancedAuthenticationExchangeDataAsync(new MqttEnhancedAuthenticationExchangeData
        {
            ReasonCode = MqttAuthenticateReasonCode.ReAuthenticate,
            AuthenticationData = [1],
        });
        Assert.Equal(MqttClientDisconnectReason.ProtocolError, await disconnected.WaitAsync(TimeSpan.FromSeconds(15)));
    }

    [SkippableFact]
    public async Task Reauthentication_naming_another_method_is_a_protocol_error()
    {
        using var client = new MqttClientFactory().CreateMqttClient();
        var handler = new ScramAuthHandler("bob", "pw");
        Assert.Equal(MqttClientConnectResultCode.Success, (await ScramConnectAsync(client, Id("othermethod"), handler)).ResultCode);
        var disconnected = DisconnectReason(client);
        // MQTTnet sends the method of its options ([MQTT-4.12.1-1]); changed here to break that rule on purpose.
        client.Options.AuthenticationMethod = "X-TOKEN";
        await client.SendEnhancedAuthenticationExchangeDataAsync(new MqttEnhancedAuthenticationExchangeData
        {
            ReasonCode = MqttAuthenticateReasonCode.ReAuthenticate,
            AuthenticationData = handler.Start(),
        });
        Assert.Equal(MqttClientDisconnectReason.ProtocolError, await disconnected.WaitAsync(TimeSpan.FromSeconds(15)));
    }

    /// <summary>
    /// A packet other than AUTH while the exchange runs: CONNACK 0x82 Protocol Error (the server may not send
    /// DISCONNECT before a success CONNACK, [MQTT-3.14.0-1]). A raw socket: MQTTnet's client cannot send it.
    /// </summary>
    [SkippableFact]
    public async Task A_packet_other_than_auth_during_the_exchange_is_refused_with_protocol_error()
    {
        var s = S;
        using var socket = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
        await socket.ConnectAsync("127.0.0.1", s.MqttPort);
        await using var stream = new NetworkStream(socket, ownsSocket: false);
        var codec = new MqttPacketFormatterAdapter(MqttProtocolVersion.V500, new MqttBufferWriter(4096, 65536));
        var connect = codec.Encode(new MqttConnectPacket
        {
            ClientId = Id("raw"),
            CleanSession = true,
            KeepAlivePeriod = 30,
            AuthenticationMethod = Scram,
            AuthenticationData = new ScramClient("bob", "pw").First(),
        });
        await stream.WriteAsync(connect.ToArray());
        using var timeout = new CancellationTokenSource(TimeSpan.FromSeconds(15));
        var (type, body) = await ReadPacketAsync(stream, timeout.Token);
        Assert.Equal(0xF0, type); // AUTH
        Assert.Equal(0x18, body[0]); // Continue authentication
        await stream.WriteAsync(new byte[] { 0xC0, 0x00 }, timeout.Token); // PINGREQ
        (type, body) = await ReadPacketAsync(stream, timeout.Token);
        Assert.Equal(0x20, type); // CONNACK
        Assert.Equal(0x82, body[1]); // Protocol Error
    }

    private static async Task<(int Type, byte[] Body)> ReadPacketAsync(Stream stream, CancellationToken ct)
    {
        var one = new byte[1];
        await stream.ReadExactlyAsync(one, ct);
        int type = one[0];
        int length = 0, shift = 0;
        do
        {
            await stream.ReadExactlyAsync(one, ct);
            length |= (one[0] & 0x7F) << shift;
            shift += 7;
        }
        while ((one[0] & 0x80) != 0);
        var body = new byte[length];
        await stream.ReadExactlyAsync(body, ct);
        return (type, body);
    }

    /// <summary>
    /// The hook's service: X-TOKEN asks for a challenge's answer ("hello" → "challenge", "answer-bob" → success as
    /// bob, "answer-carol" / "answer-ghost" → success as carol / the unknown ghost, anything else → fail 0x86); X-SLOW
    /// is never answered. Every request's JSON is kept.
    /// </summary>
    private sealed class AuthService : IAsyncDisposable
    {
        private readonly NatsConnection _nats;
        private readonly INatsSub<byte[]> _sub;
        private readonly Task _serving;

        private AuthService(NatsConnection nats, INatsSub<byte[]> sub)
        {
            _nats = nats;
            _sub = sub;
            _serving = ServeAsync();
        }

        public ConcurrentQueue<JsonObject> Requests { get; } = new();

        public static async Task<AuthService> StartAsync(MqttTestServer s)
        {
            var nats = s.Nats();
            var sub = await nats.SubscribeCoreAsync<byte[]>("mqtt.auth.step");
            await nats.PingAsync();
            return new AuthService(nats, sub);
        }

        private async Task ServeAsync()
        {
            await foreach (var msg in _sub.Msgs.ReadAllAsync())
            {
                var request = (JsonObject)JsonNode.Parse(msg.Data!)!;
                Requests.Enqueue(request);
                if ((string?)request["method"] != "X-TOKEN") continue;
                string data = request["data"] is { } d ? Encoding.UTF8.GetString(Convert.FromBase64String((string)d!)) : "";
                JsonObject reply = data switch
                {
                    "hello" => new JsonObject { ["result"] = "continue", ["data"] = Convert.ToBase64String("challenge"u8) },
                    "answer-bob" => new JsonObject { ["result"] = "success", ["user"] = "bob", ["data"] = Convert.ToBase64String("welcome"u8) },
                    "answer-carol" => new JsonObject { ["result"] = "success", ["user"] = "carol" },
                    "answer-ghost" => new JsonObject { ["result"] = "success", ["user"] = "ghost" },
                    _ => new JsonObject { ["result"] = "fail", ["reason_code"] = 0x86 },
                };
                await msg.ReplyAsync(Encoding.UTF8.GetBytes(reply.ToJsonString()));
            }
        }

        public async ValueTask DisposeAsync()
        {
            await _sub.DisposeAsync();
            await _serving;
            await _nats.DisposeAsync();
        }
    }

    /// <summary>Answers the gateway's AUTH 0x18 "challenge" with <paramref name="answer"/>; AUTH 0x00 (re-authentication's end) completes <see cref="Succeeded"/>.</summary>
    private sealed class TokenHandler(string answer) : IMqttEnhancedAuthenticationHandler
    {
        private readonly TaskCompletionSource<string> _succeeded = new(TaskCreationOptions.RunContinuationsAsynchronously);

        public ConcurrentQueue<string> Challenges { get; } = new();

        /// <summary>The data of the server's AUTH 0x00.</summary>
        public Task<string> Succeeded => _succeeded.Task;

        public async Task HandleEnhancedAuthenticationAsync(MqttEnhancedAuthenticationEventArgs eventArgs)
        {
            string data = Encoding.UTF8.GetString(eventArgs.AuthenticationData ?? []);
            if (eventArgs.ReasonCode == MqttAuthenticateReasonCode.Success)
            {
                _succeeded.TrySetResult(data);
                return;
            }
            Challenges.Enqueue(data);
            await eventArgs.SendAsync(new SendMqttEnhancedAuthenticationDataOptions { Data = Encoding.UTF8.GetBytes(answer) }, eventArgs.CancellationToken);
        }
    }

    [SkippableFact]
    public async Task Reauthentication_with_a_hook_method_asks_the_service_again()
    {
        var s = S;
        await using var service = await AuthService.StartAsync(s);
        using var client = new MqttClientFactory().CreateMqttClient();
        var handler = new TokenHandler("answer-bob");
        var result = await s.ConnectAsync(client, Id("hookre"), MqttProtocolVersion.V500,
            b => b.WithEnhancedAuthentication("X-TOKEN", "hello"u8.ToArray()).WithEnhancedAuthenticationHandler(handler));
        Assert.Equal(MqttClientConnectResultCode.Success, result.ResultCode);
        await client.SendEnhancedAuthenticationExchangeDataAsync(new MqttEnhancedAuthenticationExchangeData
        {
            ReasonCode = MqttAuthenticateReasonCode.ReAuthenticate,
            AuthenticationData = "hello"u8.ToArray(),
        });
        Assert.Equal("welcome", await handler.Succeeded.WaitAsync(TimeSpan.FromSeconds(15)));
        Assert.Equal(["challenge", "challenge"], handler.Challenges);
        var requests = service.Requests.ToArray();
        Assert.Equal([false, false, true, true], requests.Select(r => (bool)r["reauth"]!));
        Assert.Equal([1, 2, 1, 2], requests.Select(r => (int)r["step"]!));
        Assert.True(client.IsConnected);
    }

    [SkippableFact]
    public async Task Authentication_data_without_a_method_is_a_protocol_error()
    {
        using var client = new MqttClientFactory().CreateMqttClient();
        var result = await S.ConnectAsync(client, Id("nomethod"), MqttProtocolVersion.V500, b => b.WithEnhancedAuthentication(null, [1, 2]));
        Assert.Equal(MqttClientConnectResultCode.ProtocolError, result.ResultCode);
    }

    [SkippableFact]
    public async Task A_hook_method_continues_then_succeeds_as_the_user_the_service_names()
    {
        var s = S;
        await using var service = await AuthService.StartAsync(s);
        using var client = new MqttClientFactory().CreateMqttClient();
        var handler = new TokenHandler("answer-bob");
        string id = Id("hook");
        var result = await s.ConnectAsync(client, id, MqttProtocolVersion.V500,
            b => b.WithEnhancedAuthentication("X-TOKEN", "hello"u8.ToArray()).WithEnhancedAuthenticationHandler(handler));
        Assert.Equal(MqttClientConnectResultCode.Success, result.ResultCode);
        Assert.Equal(["challenge"], handler.Challenges);
        Assert.Equal("X-TOKEN", result.AuthenticationMethod);
        Assert.Equal("welcome", Encoding.UTF8.GetString(result.AuthenticationData ?? []));
        // The requests: one per step, numbered, with the client's data, ID and address.
        var requests = service.Requests.ToArray();
        Assert.Equal(2, requests.Length);
        Assert.Equal([1, 2], requests.Select(r => (int)r["step"]!));
        Assert.All(requests, r =>
        {
            Assert.Equal(id, (string?)r["client_id"]);
            Assert.Equal("X-TOKEN", (string?)r["method"]);
            Assert.StartsWith("127.0.0.1:", (string?)r["remote"], StringComparison.Ordinal);
            Assert.False((bool)r["reauth"]!);
        });
        Assert.Equal("answer-bob", Encoding.UTF8.GetString(Convert.FromBase64String((string)requests[1]["data"]!)));
        // Acting as bob: bob's deny applies (the no_auth_user alice may subscribe to secret/x).
        var suback = await client.SubscribeAsync("secret/x");
        Assert.Equal(MqttClientSubscribeResultCode.NotAuthorized, Assert.Single(suback.Items).ResultCode);
    }

    [SkippableFact]
    public async Task A_hook_method_the_service_refuses_gets_its_reason_code()
    {
        var s = S;
        await using var service = await AuthService.StartAsync(s);
        using var client = new MqttClientFactory().CreateMqttClient();
        var result = await s.ConnectAsync(client, Id("hookno"), MqttProtocolVersion.V500,
            b => b.WithEnhancedAuthentication("X-TOKEN", "hello"u8.ToArray()).WithEnhancedAuthenticationHandler(new TokenHandler("answer-mallory")));
        Assert.Equal(MqttClientConnectResultCode.BadUserNameOrPassword, result.ResultCode);
        Assert.False(client.IsConnected);
        Assert.Equal(2, service.Requests.Count);
    }

    /// <summary>The service names a user that is not configured, or one with a bcrypt password (which cannot be a
    /// no_auth_user): refused, not admitted as the block's no_auth_user alice.</summary>
    [SkippableTheory]
    [InlineData("answer-ghost")]
    [InlineData("answer-carol")]
    public async Task A_hook_success_naming_a_user_the_link_cannot_be_is_not_authorized(string answer)
    {
        var s = S;
        await using var service = await AuthService.StartAsync(s);
        using var client = new MqttClientFactory().CreateMqttClient();
        var result = await s.ConnectAsync(client, Id("hookuser"), MqttProtocolVersion.V500,
            b => b.WithEnhancedAuthentication("X-TOKEN", "hello"u8.ToArray()).WithEnhancedAuthenticationHandler(new TokenHandler(answer)));
        Assert.Equal(MqttClientConnectResultCode.NotAuthorized, result.ResultCode);
        Assert.Equal(2, service.Requests.Count);
    }

    [SkippableFact]
    public async Task A_hook_method_without_a_reply_in_time_is_not_authorized()
    {
        var s = S;
        await using var service = await AuthService.StartAsync(s);
        using var client = new MqttClientFactory().CreateMqttClient();
        var sw = Stopwatch.StartNew();
        var result = await s.ConnectAsync(client, Id("hookslow"), MqttProtocolVersion.V500,
            b => b.WithEnhancedAuthentication("X-SLOW", "hello"u8.ToArray()).WithEnhancedAuthenticationHandler(new TokenHandler("x")));
        Assert.Equal(MqttClientConnectResultCode.NotAuthorized, result.ResultCode);
        // The configured 1 s: the request reached the service, which never answered.
        Assert.True(sw.Elapsed >= TimeSpan.FromMilliseconds(900), $"refused after {sw.Elapsed}, before the timeout");
        Assert.Equal("X-SLOW", (string?)Assert.Single(service.Requests)["method"]);
    }
}
