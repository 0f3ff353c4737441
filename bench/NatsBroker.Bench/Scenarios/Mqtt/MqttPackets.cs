using System.Text;
using NatsBroker.Bench.Raw;

namespace NatsBroker.Bench.Scenarios.Mqtt;

/// <summary>
/// Hand-encoded MQTT 3.1.1 control packets (OASIS MQTT 3.1.1, section 3), built once per connection or row, never per
/// message: the generator must cost far less than the brokers it drives.
/// </summary>
internal static class MqttPackets
{
    /// <summary>Fixed-header first bytes (section 2.2.1: packet type in the high nibble, flags in the low one).</summary>
    public const byte Connect = 0x10;
    public const byte ConnAck = 0x20;
    public const byte Publish = 0x30;
    public const byte PubAck = 0x40;
    public const byte Subscribe = 0x82; // flags 0010 are mandatory [MQTT-3.8.1-1]
    public const byte SubAck = 0x90;
    public const byte PingResp = 0xD0;

    public static ReadOnlySpan<byte> PingReq => [0xC0, 0x00];

    public static ReadOnlySpan<byte> Disconnect => [0xE0, 0x00];

    /// <summary>CONNECT (3.1): protocol "MQTT" level 4, clean session, the given keep-alive, no will, no credentials.</summary>
    public static byte[] ConnectPacket(string clientId, ushort keepAliveSeconds)
    {
        var id = Encoding.UTF8.GetBytes(clientId);
        var body = new List<byte> { 0x00, 0x04, (byte)'M', (byte)'Q', (byte)'T', (byte)'T', 0x04, 0x02, (byte)(keepAliveSeconds >> 8), (byte)keepAliveSeconds };
        AddString(body, id);
        return Frame(Connect, body);
    }

    /// <summary>SUBSCRIBE (3.8) of one topic filter with packet identifier 1.</summary>
    public static byte[] SubscribePacket(string topicFilter, int qos)
    {
        var body = new List<byte> { 0x00, 0x01 };
        AddString(body, Encoding.UTF8.GetBytes(topicFilter));
        body.Add((byte)qos);
        return Frame(Subscribe, body);
    }

    /// <summary>
    /// PUBLISH (3.3) of <paramref name="payloadBytes"/> bytes on <paramref name="topic"/>; with QoS 1 its packet
    /// identifier is 0 here and patched at <paramref name="packetIdOffset"/> before each send.
    /// </summary>
    public static byte[] PublishPacket(string topic, int qos, int payloadBytes, out int packetIdOffset)
    {
        var body = new List<byte>();
        AddString(body, Encoding.UTF8.GetBytes(topic));
        int idInBody = body.Count;
        if (qos > 0)
        {
            body.Add(0);
            body.Add(0);
        }

        body.AddRange(Frames.Payload(payloadBytes));
        var frame = Frame((byte)(Publish | (qos << 1)), body);
        packetIdOffset = qos > 0 ? frame.Length - body.Count + idInBody : -1;
        return frame;
    }

    /// <summary>Writes PUBACK (3.4) for <paramref name="packetId"/> into <paramref name="into"/> (4 bytes).</summary>
    public static void WritePubAck(Span<byte> into, int packetId)
    {
        into[0] = PubAck;
        into[1] = 2;
        into[2] = (byte)(packetId >> 8);
        into[3] = (byte)packetId;
    }

    private static void AddString(List<byte> body, byte[] utf8)
    {
        body.Add((byte)(utf8.Length >> 8));
        body.Add((byte)utf8.Length);
        body.AddRange(utf8);
    }

    /// <summary>Fixed header with the Remaining Length as a variable byte integer (2.2.3), then the body.</summary>
    private static byte[] Frame(byte first, List<byte> body)
    {
        var f = new List<byte>(body.Count + 5) { first };
        int len = body.Count;
        do
        {
            byte b = (byte)(len % 128);
            len /= 128;
            f.Add(len > 0 ? (byte)(b | 0x80) : b);
        }
        while (len > 0);

        f.AddRange(body);
        return [.. f];
    }
}
