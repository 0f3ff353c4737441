using System.Runtime.CompilerServices;
using MQTTnet.Adapter;
using MQTTnet.Formatter;
using NatsBroker.MqttGateway;

namespace NatsBroker.Tests.Gateways.Mqtt;

/// <summary>
/// MQTTnet's decoders keep the last packet body they decoded; CodecBufferRelease makes them let go (an idle session's
/// read buffer went back to the pool but stayed reachable through the decoder). Its field names are MQTTnet 5.2's:
/// this test fails when an MQTTnet upgrade renames them.
/// </summary>
public sealed class CodecBufferReleaseTests
{
    [Theory]
    [InlineData(MqttProtocolVersion.V311)]
    [InlineData(MqttProtocolVersion.V500)]
    public void Release_lets_the_last_decoded_body_be_collected(MqttProtocolVersion version)
    {
        var codec = new MqttPacketFormatterAdapter(version, new MqttBufferWriter(256, 64 * 1024));
        var body = DecodePubAckFromFreshArray(codec);

        Collect();
        Assert.True(body.IsAlive); // the decoder still holds it: what Release is for

        CodecBufferRelease.Release(codec);
        Collect();
        Assert.True(CodecBufferRelease.Available);
        Assert.False(body.IsAlive);

        // The codec still decodes after a release.
        var again = new ReceivedMqttPacket(0x40, new ArraySegment<byte>([0, 7]), 4);
        Assert.Equal(7, ((MQTTnet.Packets.MqttPubAckPacket)codec.Decode(again)).PacketIdentifier);
        GC.KeepAlive(codec);
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static WeakReference DecodePubAckFromFreshArray(MqttPacketFormatterAdapter codec)
    {
        var buffer = new byte[8 * 1024];
        buffer[100] = 0;
        buffer[101] = 42; // PUBACK, packet identifier 42
        var packet = new ReceivedMqttPacket(0x40, new ArraySegment<byte>(buffer, 100, 2), 4);
        Assert.Equal(42, ((MQTTnet.Packets.MqttPubAckPacket)codec.Decode(packet)).PacketIdentifier);
        return new WeakReference(buffer);
    }

    private static void Collect()
    {
        GC.Collect();
        GC.WaitForPendingFinalizers();
        GC.Collect();
    }
}
