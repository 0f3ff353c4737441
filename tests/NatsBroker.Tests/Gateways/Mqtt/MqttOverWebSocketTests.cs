using System.Text;
using NATS.Client.Core;
using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Gateways.Mqtt;

/// <summary>
/// MQTT over WebSocket: an MQTTnet client on the websocket port's <c>/mqtt</c> path (subprotocol <c>mqtt</c>)
/// publishes to and receives from NATS clients, as on nats-server (which serves it when both blocks are configured).
/// </summary>
[Collection("Gateways")]
public sealed class MqttOverWebSocketTests(ITestOutputHelper output)
{
    [SkippableTheory]
    [InlineData(ServerKind.Ours)]
    [InlineData(ServerKind.Go)]
    public async Task Mqtt_client_over_websocket_exchanges_messages_with_nats_clients(ServerKind kind)
    {
        Prerequisites.RequireServer(kind, output);
        int wsPort = TestPorts.Next();
        await using var s = await MqttTestServer.StartAsync(kind, output, rest: MqttTestServer.Users + $"\nwebsocket {{ host: \"127.0.0.1\", port: {wsPort}, no_tls: true }}\n");
        await GatewayTestHelpers.WaitListeningAsync(wsPort);
        await using var nats = s.Nats();
        await using var fromMqtt = await nats.SubscribeCoreAsync<byte[]>("wsmqtt.up");

        // A raw MQTT 3.1.1 client over System.Net.WebSockets (binary messages, subprotocol "mqtt").
        using var ws = new System.Net.WebSockets.ClientWebSocket();
        ws.Options.AddSubProtocol("mqtt");
        using var cts = new CancellationTokenSource(TimeSpan.FromSeconds(20));
        await ws.ConnectAsync(new Uri($"ws://127.0.0.1:{wsPort}/mqtt"), cts.Token);
        Assert.Equal("mqtt", ws.SubProtocol);
        string clientId = "ws-" + Guid.NewGuid().ToString("N")[..8];
        await SendAsync(ws, Packet(0x10, [.. Str("MQTT"), 4, 0x02, 0, 60, .. Str(clientId)]), cts.Token);
        Assert.Equal(new byte[] { 0x20, 2, 0, 0 }, await ReceiveAsync(ws, 4, cts.Token)); // CONNACK accepted
        await SendAsync(ws, Packet(0x82, [0, 1, .. Str("wsmqtt/down"), 0]), cts.Token);
        Assert.Equal(new byte[] { 0x90, 3, 0, 1, 0 }, await ReceiveAsync(ws, 5, cts.Token)); // SUBACK QoS 0
        await SendAsync(ws, Packet(0x30, [.. Str("wsmqtt/up"), .. "hello from ws"u8]), cts.Token);
        var up = await fromMqtt.Msgs.ReadAsync(cts.Token);
        Assert.Equal("hello from ws", Encoding.UTF8.GetString(up.Data!));
        await nats.PublishAsync("wsmqtt.down", Encoding.UTF8.GetBytes("hello from nats"));
        byte[] expected = Packet(0x30, [.. Str("wsmqtt/down"), .. "hello from nats"u8]);
        Assert.Equal(expected, await ReceiveAsync(ws, expected.Length, cts.Token));
        await SendAsync(ws, [0xE0, 0], cts.Token); // DISCONNECT
    }

    private static byte[] Str(string s) => [(byte)(s.Length >> 8), (byte)s.Length, .. Encoding.UTF8.GetBytes(s)];

    /// <summary>A packet with a one-byte remaining length (all packets here are short).</summary>
    private static byte[] Packet(byte type, byte[] body) => [type, (byte)body.Length, .. body];

    private static Task SendAsync(System.Net.WebSockets.ClientWebSocket ws, byte[] bytes, CancellationToken ct) =>
        ws.SendAsync(bytes, System.Net.WebSockets.WebSocketMessageType.Binary, true, ct);

    /// <summary>Exactly <paramref name="count"/> MQTT bytes, across as many WebSocket messages as they come in.</summary>
    private static async Task<byte[]> ReceiveAsync(System.Net.WebSockets.ClientWebSocket ws, int count, CancellationToken ct)
    {
        var buffer = new byte[count];
        int have = 0;
        while (have < count)
        {
            var r = await ws.ReceiveAsync(buffer.AsMemory(have), ct);
            if (r.MessageType == System.Net.WebSockets.WebSocketMessageType.Close) throw new IOException("websocket closed");
            have += r.Count;
        }
        return buffer;
    }
}
