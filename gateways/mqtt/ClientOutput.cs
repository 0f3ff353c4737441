using System.Buffers;
using MQTTnet.Formatter;
using MQTTnet.Packets;

namespace NatsBroker.MqttGateway;

/// <summary>
/// Everything sent to one MQTT client goes through here, one packet at a time (one lock): control packets are
/// encoded by MQTTnet's formatter; PUBLISH packets without properties (the hot path: every NATS message delivered
/// to a 3.1.1 client, or to an MQTT 5 client when the message has no headers to carry) are encoded by hand into a
/// reused buffer. Those delivered from one read of the core's link are written together, with one WriteAsync when
/// the link has handled everything it read (<see cref="FlushAsync"/>), as nats-server flushes a client's outbound
/// once per read of the producer; anything else sent writes what is pending first, so the order is kept.
/// </summary>
internal sealed class ClientOutput(Stream client, MqttPacketFormatterAdapter codec, bool v5) : IDisposable
{
    private readonly SemaphoreSlim _lock = new(1, 1);
    private ArrayBufferWriter<byte> _buffer = new(4096);
    /// <summary>_buffer holds PUBLISH / PUBACK packets not written yet (under _lock; read without it only as a hint).</summary>
    private bool _pending;
    /// <summary>Pending bytes past which a batched PUBLISH is written at once (bounds the buffer).</summary>
    private const int MaxPendingBytes = 64 * 1024;

    private OutboundTopicAliases? _aliases;

    /// <summary>MQTT 5: the client accepts this many topic aliases from us (its CONNECT's Topic Alias Maximum).</summary>
    public void UseTopicAliases(ushort maximum) => _aliases = maximum > 0 ? new OutboundTopicAliases(maximum) : null;

    /// <summary>Whether PUBLISH packets go through <see cref="SendAsync"/> to get topic aliases.</summary>
    public bool UsesTopicAliases => _aliases is not null;

    public async Task SendAsync(MqttPacket packet, CancellationToken ct)
    {
        await _lock.WaitAsync(ct).ConfigureAwait(false);
        try
        {
            // Under the lock: an alias is only used after the packet that set it was written.
            if (_aliases is not null && packet is MqttPublishPacket publish) _aliases.Apply(publish);
            await WritePendingAsync(ct).ConfigureAwait(false);
            var encoded = codec.Encode(packet);
            await client.WriteAsync(encoded.Packet, ct).ConfigureAwait(false);
            foreach (var segment in encoded.Payload) await client.WriteAsync(segment, ct).ConfigureAwait(false);
            codec.Cleanup();
        }
        finally
        {
            _lock.Release();
        }
    }

    /// <summary>Raw bytes of a packet already encoded (CONNACK for a version MQTTnet was not set up for, PINGRESP).</summary>
    public async Task SendRawAsync(ReadOnlyMemory<byte> bytes, CancellationToken ct)
    {
        await _lock.WaitAsync(ct).ConfigureAwait(false);
        try
        {
            await WritePendingAsync(ct).ConfigureAwait(false);
            await client.WriteAsync(bytes, ct).ConfigureAwait(false);
        }
        finally
        {
            _lock.Release();
        }
    }

    /// <summary>
    /// A PUBLISH with no properties (MQTT 3.1.1 section 3.3; MQTT 5 with a zero property length). With
    /// <paramref name="batch"/> it may stay in the buffer until <see cref="FlushAsync"/> or the next other send.
    /// </summary>
    public async Task SendPublishAsync(ReadOnlyMemory<byte> topic, ReadOnlyMemory<byte> payload, byte qos, ushort packetId, bool retain, bool dup, CancellationToken ct, bool batch = false)
    {
        await _lock.WaitAsync(ct).ConfigureAwait(false);
        try
        {
            if (!_pending) _buffer.ResetWrittenCount();
            int remaining = 2 + topic.Length + (qos > 0 ? 2 : 0) + (v5 ? 1 : 0) + payload.Length;
            var head = _buffer.GetSpan(5 + 2);
            head[0] = (byte)(0x30 | (dup ? 0x08 : 0) | (qos << 1) | (retain ? 1 : 0));
            int n = 1 + WriteVarInt(head[1..], remaining);
            head[n++] = (byte)(topic.Length >> 8);
            head[n++] = (byte)topic.Length;
            _buffer.Advance(n);
            _buffer.Write(topic.Span);
            if (qos > 0)
            {
                var pi = _buffer.GetSpan(2);
                pi[0] = (byte)(packetId >> 8);
                pi[1] = (byte)packetId;
                _buffer.Advance(2);
            }
            if (v5)
            {
                _buffer.GetSpan(1)[0] = 0;
                _buffer.Advance(1);
            }
            _buffer.Write(payload.Span);
            _pending = true;
            if (!batch || _buffer.WrittenCount >= MaxPendingBytes) await WritePendingAsync(ct).ConfigureAwait(false);
        }
        finally
        {
            _lock.Release();
        }
    }

    /// <summary>
    /// PUBACK: 0x40, remaining length 2, the packet identifier (MQTT 3.1.1 section 3.4; MQTT 5 section 3.4.2.1 lets a
    /// Success reason code without properties be left out). With <paramref name="batch"/> it may stay in the buffer
    /// until <see cref="FlushAsync"/>, as a batched PUBLISH.
    /// </summary>
    public async Task SendPubAckAsync(ushort packetId, CancellationToken ct, bool batch = false)
    {
        await _lock.WaitAsync(ct).ConfigureAwait(false);
        try
        {
            if (!_pending) _buffer.ResetWrittenCount();
            var ack = _buffer.GetSpan(4);
            ack[0] = 0x40;
            ack[1] = 2;
            ack[2] = (byte)(packetId >> 8);
            ack[3] = (byte)packetId;
            _buffer.Advance(4);
            _pending = true;
            if (!batch || _buffer.WrittenCount >= MaxPendingBytes) await WritePendingAsync(ct).ConfigureAwait(false);
        }
        finally
        {
            _lock.Release();
        }
    }

    /// <summary>Writes the batched PUBLISH packets, if any (called when the link has handled a whole read).</summary>
    public async Task FlushAsync(CancellationToken ct)
    {
        if (!Volatile.Read(ref _pending)) return;
        await _lock.WaitAsync(ct).ConfigureAwait(false);
        try
        {
            await WritePendingAsync(ct).ConfigureAwait(false);
        }
        finally
        {
            _lock.Release();
        }
    }

    /// <summary>Caller holds _lock.</summary>
    private async ValueTask WritePendingAsync(CancellationToken ct)
    {
        if (!_pending) return;
        _pending = false;
        await client.WriteAsync(_buffer.WrittenMemory, ct).ConfigureAwait(false);
        _buffer.ResetWrittenCount();
        // A large message must not pin a large buffer for the life of the connection.
        if (_buffer.Capacity > 256 * 1024) _buffer = new ArrayBufferWriter<byte>(4096);
    }

    public static int WriteVarInt(Span<byte> to, int value)
    {
        int i = 0;
        do
        {
            byte b = (byte)(value & 0x7F);
            value >>= 7;
            if (value > 0) b |= 0x80;
            to[i++] = b;
        }
        while (value > 0);
        return i;
    }

    public void Dispose() => _lock.Dispose();
}
