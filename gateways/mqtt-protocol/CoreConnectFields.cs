using System.Text.Json.Nodes;

namespace NatsBroker.MqttGateway;

/// <summary>The NATS CONNECT fields every link from this gateway to the core starts with (server/mqtt.go sends the same kind).</summary>
internal static class CoreConnectFields
{
    public static JsonObject Create(string name) => new()
    {
        ["verbose"] = false,
        ["pedantic"] = false,
        ["lang"] = "mqtt",
        ["version"] = "natsbroker-mqtt",
        ["protocol"] = 1,
        ["headers"] = true,
        ["no_responders"] = true,
        ["echo"] = true,
        ["name"] = name,
    };
}
