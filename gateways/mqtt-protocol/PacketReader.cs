using System.Buffers;
using MQTTnet.Adapter;
using MQTTnet.Formatter;

namespace NatsBroker.MqttGateway;

/// <summary>
/// Splits the client's byte stream into MQTT control packets (fixed header byte, variable-length remaining length,
/// body: MQTT 3.1.1 section 2.2, MQTT 5 section 2.1) for MQTTnet's decoder. A packet's body is valid until the next
/// <see cref="ReadAsync"/>.
/// <para>
/// An idle client holds no buffer: when everything read was consumed, the buffer goes back to the pool and the reader
/// waits for the next bytes with a zero-byte read (NetworkStream and SslStream wait for data without a buffer, as
/// Kestrel's transports do), then rents one. IoT fleets keep thousands of sessions that send a PINGREQ a minute; the
/// 8 KiB each held was a fifth of the gateway's memory per idle session.
/// </para>
/// </summary>
internal sealed class PacketReader(Stream input, int maxPacketSize)
{
    private const int BufferSize = 8 * 1024;
    private const int FirstBufferSize = 1024;

    // What the next rent asks for: 1 KiB until a read fills the buffer, then 8 KiB. A CONNECT and an idle
    // session's PINGREQ fit in 1 KiB; with 8 KiB from the start, a storm of connects turned most of those buffers into
    // garbage the pool had no room for (2,280 dead 8 KiB arrays after 8,000 connects, a heap dump).
    private int _rentSize = FirstBufferSize;

    private byte[] _buffer = [];
    private bool _pooled;
    private int _start, _end;

    /// <summary>The session's decoder once it has one: it is made to drop its last packet body when the buffer goes back to the pool.</summary>
    public MqttPacketFormatterAdapter? Codec { get; set; }

    /// <summary>The next packet, or null at end of input. Throws <see cref="InvalidDataException"/> on a malformed length or an oversized packet.</summary>
    public async ValueTask<ReceivedMqttPacket?> ReadAsync(CancellationToken ct)
    {
        while (true)
        {
            if (TryFrame(out var packet)) return packet;
            if (_start == _end)
            {
                _start = _end = 0;
                Release();
                if (Codec is { } codec) CodecBufferRelease.Release(codec);
                // Wait for the client without a buffer (a stream that cannot wait this way returns at once).
                await input.ReadAsync(Memory<byte>.Empty, ct).ConfigureAwait(false);
                _buffer = ArrayPool<byte>.Shared.Rent(_rentSize);
                _pooled = true;
            }
            else if (_start > 0)
            {
                _buffer.AsSpan(_start, _end - _start).CopyTo(_buffer);
                _end -= _start;
                _start = 0;
            }
            if (_end == _buffer.Length) Grow(_buffer.Length * 2);
            int free = _buffer.Length - _end;
            int n = await input.ReadAsync(_buffer.AsMemory(_end), ct).ConfigureAwait(false);
            if (n == free) _rentSize = BufferSize; // the client had more: read in 8 KiB from the next rent on
            if (n == 0)
            {
                if (_end > _start) throw new EndOfStreamException("the client closed in the middle of a packet");
                return null;
            }
            _end += n;
        }
    }

    /// <summary>Whether a whole packet is already buffered, so the next <see cref="ReadAsync"/> will not wait for the client.</summary>
    public bool HasBufferedPacket
    {
        get
        {
            try
            {
                return TryFixedHeader(out int bodyAt, out int remaining) && _end - bodyAt >= remaining;
            }
            catch (InvalidDataException)
            {
                return true; // the next read reports it without waiting
            }
        }
    }

    /// <summary>The fixed header's remaining length and where the body starts; false while it is incomplete.</summary>
    private bool TryFixedHeader(out int bodyAt, out int remaining)
    {
        remaining = 0;
        bodyAt = 0;
        if (_end - _start < 2) return false;
        int multiplier = 1, i = _start + 1;
        while (true)
        {
            if (i >= _end) return false;
            byte b = _buffer[i++];
            remaining += (b & 0x7F) * multiplier;
            if ((b & 0x80) == 0) break;
            multiplier *= 128;
            if (multiplier > 128 * 128 * 128) throw new InvalidDataException("malformed variable int");
        }
        bodyAt = i;
        return true;
    }

    private bool TryFrame(out ReceivedMqttPacket packet)
    {
        packet = default;
        if (!TryFixedHeader(out int i, out int remaining)) return false;
        int avail = _end - _start;
        if (remaining > maxPacketSize) throw new InvalidDataException($"packet of {remaining} bytes exceeds the maximum of {maxPacketSize}");
        int headerLength = i - _start;
        if (_end - i < remaining)
        {
            int needed = headerLength + remaining;
            if (needed > _buffer.Length)
            {
                _buffer.AsSpan(_start, avail).CopyTo(_buffer);
                _end = avail;
                _start = 0;
                Grow(needed);
            }
            return false;
        }
        packet = new ReceivedMqttPacket(_buffer[_start], new ArraySegment<byte>(_buffer, i, remaining), headerLength + remaining);
        _start = i + remaining;
        return true;
    }

    /// <summary>A bigger buffer for a large packet (not pooled: it is dropped once the packet is consumed).</summary>
    private void Grow(int size)
    {
        var bigger = new byte[size];
        _buffer.AsSpan(0, _end).CopyTo(bigger);
        Release();
        _buffer = bigger;
    }

    /// <summary>Gives the buffer back to the pool (nothing unconsumed may be in it).</summary>
    private void Release()
    {
        if (_pooled) ArrayPool<byte>.Shared.Return(_buffer);
        _pooled = false;
        _buffer = [];
    }
}
