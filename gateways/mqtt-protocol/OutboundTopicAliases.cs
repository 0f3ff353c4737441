using MQTTnet.Packets;

namespace NatsBroker.MqttGateway;

/// <summary>
/// Server → client topic aliases of one connection (MQTT 5 section 3.3.2.3.4): the first PUBLISH on a topic sends the
/// topic with a new alias, later ones the alias and an empty topic, up to the client's Topic Alias Maximum
/// ([MQTT-3.3.2-9]); topics past that go out in full. Aliases live as long as the connection ([MQTT-3.3.2-7]).
/// </summary>
internal sealed class OutboundTopicAliases(ushort maximum)
{
    private readonly Dictionary<string, ushort> _byTopic = new(StringComparer.Ordinal);

    public void Apply(MqttPublishPacket packet)
    {
        if (string.IsNullOrEmpty(packet.Topic)) return;
        if (_byTopic.TryGetValue(packet.Topic, out ushort alias))
        {
            packet.TopicAlias = alias;
            packet.Topic = "";
            return;
        }
        if (_byTopic.Count >= maximum) return;
        alias = (ushort)(_byTopic.Count + 1);
        _byTopic[packet.Topic] = alias;
        packet.TopicAlias = alias;
    }
}
