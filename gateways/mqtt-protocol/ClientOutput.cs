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
/// The batch buffer is rented from the shared pool when a packet is batched and returned once it is written: an idle
/// client holds none, and the 1,000 clients of a fan-out, served one after the other by the link poller's thread,
/// reuse the same few arrays instead of each growing its own (4 -> 8 -> ... -> 64 KiB, garbage the collector copied).
/// </summary>
internal sealed class ClientOutput(Stream client, MqttPacketFormatterAdapter codec, bool v5) : IDisposable
{
    private readonly AsyncMutex _lock = new();
    /// <summary>Pending packets (under _lock): rented while <see cref="_pending"/> and returned when written.</summary>
    private byte[]? _buffer;
    private int _written;
    /// <summary>What a batch rents first: a whole batch fits (<see cref="MaxPendingBytes"/> plus one ordinary packet).</summary>
    private const int BatchBuffer = 128 * 1024;
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
        await _lock.EnterAsync(ct).ConfigureAwait(false);
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
            _lock.Exit();
        }
    }

    /// <summary>Raw bytes of a packet already encoded (CONNACK for a version MQTTnet was not set up for, PINGRESP).</summary>
    public async Task SendRawAsync(ReadOnlyMemory<byte> bytes, CancellationToken ct)
    {
        await _lock.EnterAsync(ct).ConfigureAwait(false);
        try
        {
            await WritePendingAsync(ct).ConfigureAwait(false);
            await client.WriteAsync(bytes, ct).ConfigureAwait(false);
        }
        finally
        {
            _lock.Exit();
        }
    }

    /// <summary>
    /// A PUBLISH with no properties (MQTT 3.1.1 section 3.3; MQTT 5 with a zero property length). With
    /// <paramref name="batch"/> it may stay in the buffer until <see cref="FlushAsync"/> or the next other send.
    /// </summary>
    public async Task SendPublishAsync(ReadOnlyMemory<byte> topic, ReadOnlyMemory<byte> payload, byte qos, ushort packetId, bool retain, bool dup, CancellationToken ct, bool batch = false)
    {
        await _lock.EnterAsync(ct).ConfigureAwait(false);
        try
        {
            BufferPublishLocked(topic.Span, payload.Span, qos, packetId, retain, dup);
            if (!batch || _written >= MaxPendingBytes) await WritePendingAsync(ct).ConfigureAwait(false);
        }
        finally
        {
            _lock.Exit();
        }
    }

    /// <summary>
    /// A batched QoS 0 PUBLISH without properties, buffered with no await (a fan-out's deliveries, one per
    /// subscriber link read, each went through three async methods): false, with nothing written, when the output
    /// is busy or the batch would reach its write threshold; the caller then takes <see cref="SendPublishAsync"/>.
    /// </summary>
    public bool TryBufferQos0Publish(ReadOnlySpan<byte> topic, ReadOnlySpan<byte> payload, bool retain)
    {
        if (!_lock.TryEnter()) return false;
        try
        {
            if (_written + 5 + PublishRemaining(topic.Length, payload.Length, 0) >= MaxPendingBytes) return false;
            BufferPublishLocked(topic, payload, 0, 0, retain, dup: false);
            return true;
        }
        finally
        {
            _lock.Exit();
        }
    }

    /// <summary>A PUBLISH's remaining length: topic length and topic, packet identifier at QoS 1/2, MQTT 5's empty property length, payload.</summary>
    private int PublishRemaining(int topicLength, int payloadLength, byte qos) => 2 + topicLength + (qos > 0 ? 2 : 0) + (v5 ? 1 : 0) + payloadLength;

    /// <summary>Appends one PUBLISH to the pending output (under the output lock).</summary>
    private void BufferPublishLocked(ReadOnlySpan<byte> topic, ReadOnlySpan<byte> payload, byte qos, ushort packetId, bool retain, bool dup)
    {
        int remaining = PublishRemaining(topic.Length, payload.Length, qos);
        var packet = Reserve(5 + remaining);
        packet[0] = (byte)(0x30 | (dup ? 0x08 : 0) | (qos << 1) | (retain ? 1 : 0));
        int n = 1 + WriteVarInt(packet[1..], remaining);
        packet[n++] = (byte)(topic.Length >> 8);
        packet[n++] = (byte)topic.Length;
        topic.CopyTo(packet[n..]);
        n += topic.Length;
        if (qos > 0)
        {
            packet[n++] = (byte)(packetId >> 8);
            packet[n++] = (byte)packetId;
        }
        if (v5) packet[n++] = 0;
        payload.CopyTo(packet[n..]);
        _written += n + payload.Length;
        _pending = true;
    }

    /// <summary>
    /// PUBACK: 0x40, remaining length 2, the packet identifier (MQTT 3.1.1 section 3.4; MQTT 5 section 3.4.2.1 lets a
    /// Success reason code without properties be left out). With <paramref name="batch"/> it may stay in the buffer
    /// until <see cref="FlushAsync"/>, as a batched PUBLISH.
    /// </summary>
    public async Task SendPubAckAsync(ushort packetId, CancellationToken ct, bool batch = false)
    {
        await _lock.EnterAsync(ct).ConfigureAwait(false);
        try
        {
            var ack = Reserve(4);
            ack[0] = 0x40;
            ack[1] = 2;
            ack[2] = (byte)(packetId >> 8);
            ack[3] = (byte)packetId;
            _written += 4;
            _pending = true;
            if (!batch || _written >= MaxPendingBytes) await WritePendingAsync(ct).ConfigureAwait(false);
        }
        finally
        {
            _lock.Exit();
        }
    }

    /// <summary>Writes the batched PUBLISH packets, if any (called when the link has handled a whole read).</summary>
    public async Task FlushAsync(CancellationToken ct)
    {
        if (!Volatile.Read(ref _pending)) return;
        await _lock.EnterAsync(ct).ConfigureAwait(false);
        try
        {
            await WritePendingAsync(ct).ConfigureAwait(false);
        }
        finally
        {
            _lock.Exit();
        }
    }

    /// <summary>Caller holds _lock. Room for <paramref name="size"/> more bytes after the pending ones (renting or
    /// growing the batch buffer); the caller writes there and adds what it wrote to _written.</summary>
    private Span<byte> Reserve(int size)
    {
        if (_buffer is null)
        {
            _buffer = ArrayPool<byte>.Shared.Rent(Math.Max(BatchBuffer, size));
            _written = 0;
        }
        else if (_buffer.Length - _written < size)
        {
            var bigger = ArrayPool<byte>.Shared.Rent(Math.Max(_buffer.Length * 2, _written + size));
            _buffer.AsSpan(0, _written).CopyTo(bigger);
            ArrayPool<byte>.Shared.Return(_buffer);
            _buffer = bigger;
        }
        return _buffer.AsSpan(_written, size);
    }

    /// <summary>Caller holds _lock. Writes the pending packets and returns the buffer to the pool (also when the
    /// write fails: the connection is over then, and the bytes are not kept).</summary>
    private async ValueTask WritePendingAsync(CancellationToken ct)
    {
        if (!_pending) return;
        _pending = false;
        var buffer = _buffer!;
        int written = _written;
        _buffer = null;
        _written = 0;
        try
        {
            await client.WriteAsync(buffer.AsMemory(0, written), ct).ConfigureAwait(false);
        }
        finally
        {
            ArrayPool<byte>.Shared.Return(buffer);
        }
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

    /// <summary>A batch left unwritten (the connection ended) is not returned to the pool: the link's loop may still
    /// be writing into it (the session waits for that loop a bounded time), and a pooled array goes to other clients.</summary>
    public void Dispose() => _lock.Dispose();
}
