using System.Buffers.Binary;

namespace NatsBroker.MqttGateway;

/// <summary>
/// Reads one MQTT 5 property straight from a packet's property block (MQTT 5 section 2.2.2), for the cases where
/// MQTTnet's decoded packet cannot tell an absent property from a zero one: a DISCONNECT's Session Expiry
/// Interval of 0 (section 3.14.2.2.2) and a PUBLISH's Topic Alias of 0, which is a protocol error ([MQTT-3.3.2-8]).
/// </summary>
internal static class Mqtt5Properties
{
    public const byte SessionExpiryInterval = 0x11;
    public const byte TopicAlias = 0x23;

    /// <summary>The value of the integer property <paramref name="id"/> in <paramref name="block"/> (the bytes after the property length).</summary>
    public static bool TryFind(ReadOnlySpan<byte> block, byte id, out uint value)
    {
        value = 0;
        int i = 0;
        while (i < block.Length)
        {
            byte p = block[i++];
            int size = p switch
            {
                0x01 or 0x17 or 0x19 or 0x24 or 0x25 or 0x28 or 0x29 or 0x2A => 1,
                0x13 or 0x21 or 0x22 or 0x23 => 2,
                0x02 or 0x11 or 0x18 or 0x27 => 4,
                0x03 or 0x08 or 0x09 or 0x12 or 0x15 or 0x16 or 0x1A or 0x1C or 0x1F => -1, // two-byte length + bytes
                0x26 => -2, // a string pair
                0x0B => -3, // variable byte integer
                _ => 0,
            };
            if (size == 0) return false; // unknown property: the block cannot be walked further
            if (size > 0)
            {
                if (i + size > block.Length) return false;
                if (p == id)
                {
                    var v = block.Slice(i, size);
                    value = size switch { 1 => v[0], 2 => BinaryPrimitives.ReadUInt16BigEndian(v), _ => BinaryPrimitives.ReadUInt32BigEndian(v) };
                    return true;
                }
                i += size;
            }
            else if (size == -3)
            {
                while (i < block.Length && (block[i] & 0x80) != 0) i++;
                i++;
            }
            else
            {
                for (int n = size == -1 ? 1 : 2; n > 0; n--)
                {
                    if (i + 2 > block.Length) return false;
                    i += 2 + BinaryPrimitives.ReadUInt16BigEndian(block[i..]);
                }
            }
        }
        return false;
    }

    /// <summary>The property block that starts at <paramref name="at"/> (its variable byte integer length first).</summary>
    public static ReadOnlySpan<byte> Block(ReadOnlySpan<byte> packet, int at)
    {
        int length = 0, shift = 0;
        while (at < packet.Length && shift <= 21)
        {
            byte b = packet[at++];
            length |= (b & 0x7F) << shift;
            if ((b & 0x80) == 0) return at + length <= packet.Length ? packet.Slice(at, length) : default;
            shift += 7;
        }
        return default;
    }
}
