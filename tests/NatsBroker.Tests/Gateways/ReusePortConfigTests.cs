using NatsBroker.Configuration;
using NatsBroker.MqttGateway;
using NatsBroker.WebSocketGateway;

namespace NatsBroker.Tests.Gateways;

/// <summary>
/// <c>reuse_port</c> (ours, not nats-server's) in the blocks of the gateways that serve a port: off unless set, a
/// boolean only. Two WebSocket gateways or TLS terminators sharing a port run in ExternalGatewayTests.
/// </summary>
public sealed class ReusePortConfigTests
{
    [Fact]
    public void WebSocket_block()
    {
        Assert.False(WebSocketConfig.Load(ConfigParser.Parse("websocket { port: 8080, no_tls: true }")).ReusePort);
        Assert.True(WebSocketConfig.Load(ConfigParser.Parse("websocket { port: 8080, no_tls: true, reuse_port: true }")).ReusePort);
        var ex = Assert.Throws<ConfigException>(() => WebSocketConfig.Load(ConfigParser.Parse("websocket { port: 8080, no_tls: true, reuse_port: 3 }")));
        Assert.Contains("reuse_port", ex.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void Mqtt_block()
    {
        Assert.False(MqttConfig.Load(ConfigParser.Parse("mqtt { port: 1883 }")).ReusePort);
        Assert.True(MqttConfig.Load(ConfigParser.Parse("mqtt { port: 1883, reuse_port: true }")).ReusePort);
        var ex = Assert.Throws<ConfigException>(() => MqttConfig.Load(ConfigParser.Parse("mqtt { port: 1883, reuse_port: \"yes\" }")));
        Assert.Contains("reuse_port", ex.Message, StringComparison.Ordinal);
    }
}
