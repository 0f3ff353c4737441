using System.Runtime.CompilerServices;
using MQTTnet.Formatter;
using MQTTnet.Formatter.V3;
using MQTTnet.Formatter.V5;

namespace NatsBroker.MqttGateway;

/// <summary>
/// Makes MQTTnet's decoders let go of the last packet they decoded.
/// </summary>
/// <remarks>
/// A decoder's <see cref="MqttBufferReader"/> keeps the body it was given until the next decode. The body is a
/// slice of <see cref="PacketReader"/>'s 8 KiB read buffer, which the reader gives back to the pool when the session
/// goes idle: the reference kept that buffer alive past the pool's capacity, 6.4 KiB per idle session (a heap dump of
/// 8,000 idle sessions: 6,274 read buffers reachable only through MqttV3PacketFormatter._bufferReader), and pointed
/// at an array the pool may already have handed to another session. MQTTnet has no public way to reset its
/// readers, so the fields are reached with <see cref="UnsafeAccessorAttribute"/> (no reflection, Native AOT safe);
/// the names are MQTTnet 5.2's. If a later MQTTnet renames them the accessors throw
/// <see cref="MissingFieldException"/>: releasing is then skipped for the rest of the process (memory only, nothing
/// breaks), and CodecBufferReleaseTests fails so the upgrade is noticed.
/// </remarks>
internal static class CodecBufferRelease
{
    private static bool s_unavailable;

    /// <summary>Points every reader of <paramref name="codec"/> at an empty buffer.</summary>
    public static void Release(MqttPacketFormatterAdapter codec)
    {
        if (s_unavailable) return;
        try
        {
            AdapterReader(codec)?.SetBuffer([], 0, 0);
            switch (Formatter(codec))
            {
                case MqttV3PacketFormatter v3:
                    V3Reader(v3)?.SetBuffer([], 0, 0);
                    break;
                case MqttV5PacketFormatter v5 when V5Decoder(v5) is { } decoder:
                    V5Reader(decoder)?.SetBuffer([], 0, 0);
                    break;
            }
        }
        catch (MissingFieldException)
        {
            s_unavailable = true;
        }
    }

    /// <summary>Whether the accessors match the MQTTnet in use (tests).</summary>
    internal static bool Available => !s_unavailable;

    [UnsafeAccessor(UnsafeAccessorKind.Field, Name = "_bufferReader")]
    private static extern ref MqttBufferReader AdapterReader(MqttPacketFormatterAdapter adapter);

    [UnsafeAccessor(UnsafeAccessorKind.Field, Name = "_formatter")]
    private static extern ref IMqttPacketFormatter Formatter(MqttPacketFormatterAdapter adapter);

    [UnsafeAccessor(UnsafeAccessorKind.Field, Name = "_bufferReader")]
    private static extern ref MqttBufferReader V3Reader(MqttV3PacketFormatter formatter);

    [UnsafeAccessor(UnsafeAccessorKind.Field, Name = "_decoder")]
    private static extern ref MqttV5PacketDecoder V5Decoder(MqttV5PacketFormatter formatter);

    [UnsafeAccessor(UnsafeAccessorKind.Field, Name = "_bufferReader")]
    private static extern ref MqttBufferReader V5Reader(MqttV5PacketDecoder decoder);
}
