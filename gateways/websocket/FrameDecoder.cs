using System.Buffers;
using System.Buffers.Binary;

namespace NatsBroker.WebSocketGateway;

/// <summary>Receives what <see cref="FrameDecoder"/> decodes.</summary>
public interface IFrameSink
{
    /// <summary>Application bytes (text and binary frames alike: NATS is a byte stream), unmasked, decompressed.</summary>
    void Data(ReadOnlySpan<byte> payload);

    /// <summary>A complete ping, pong or close frame.</summary>
    void Control(byte opcode, ReadOnlySpan<byte> payload);
}

/// <summary>
/// Incremental decoder of client frames (RFC 6455 section 5, rules and error texts as server/websocket.go wsRead):
/// any number of frames per read and any frame split across reads; payloads unmasked in place a vector at a
/// time; text, binary and continuation frames are all just NATS bytes; control frames are gathered (at most
/// 125 bytes) and handed over whole; a permessage-deflate message (RSV1 on its first frame) is collected and
/// inflated when its last frame ends. Nothing is allocated per frame for uncompressed traffic.
/// </summary>
public sealed class FrameDecoder(bool requireMask, bool compressionNegotiated, int maxCompressedMessage = 64 * 1024 * 1024) : IDisposable
{
    /// <summary>RFC 7692 section 7.2.2: the tail the sender removed, plus an empty final block so inflate ends.</summary>
    private static readonly byte[] DeflateTail = [0x00, 0x00, 0xff, 0xff, 0x01, 0x00, 0x00, 0xff, 0xff];

    private readonly byte[] _header = new byte[14];
    private readonly byte[] _control = new byte[WsOpcode.MaxControlPayload];
    private int _headerLength;
    private bool _inPayload;
    private long _remaining;
    private byte _opcode;
    private bool _masked;
    private uint _key;
    private int _keyPosition;
    private int _controlLength;
    /// <summary>A data message has started and its final frame has not come yet.</summary>
    private bool _fragmented;
    private bool _compressedMessage;
    private byte[]? _compressed;
    private int _compressedLength;

    /// <summary>Set when <see cref="Decode"/> returns false: the close status and text to send before closing.</summary>
    public ushort ErrorStatus { get; private set; }
    public string? Error { get; private set; }

    /// <summary>Decodes <paramref name="data"/> (modified in place). False on a protocol error (<see cref="Error"/>).</summary>
    public bool Decode(Span<byte> data, IFrameSink sink)
    {
        ArgumentNullException.ThrowIfNull(sink);
        while (data.Length > 0)
        {
            if (!_inPayload)
            {
                int used = ReadHeader(data, out bool complete);
                if (used < 0) return false;
                data = data[used..];
                if (!complete) return true;
                if (!StartFrame()) return false;
                if (_remaining == 0 && !EndFrame(sink)) return false;
                continue;
            }
            int n = (int)Math.Min(_remaining, data.Length);
            var chunk = data[..n];
            data = data[n..];
            if (_masked) Masking.Apply(chunk, _key, ref _keyPosition);
            _remaining -= n;
            if (_opcode >= WsOpcode.Close)
            {
                chunk.CopyTo(_control.AsSpan(_controlLength));
                _controlLength += n;
            }
            else if (_compressedMessage)
            {
                if (!AppendCompressed(chunk)) return false;
            }
            else
            {
                sink.Data(chunk);
            }
            if (_remaining == 0 && !EndFrame(sink)) return false;
        }
        return true;
    }

    /// <summary>Collects header bytes; returns bytes used, or -1 on an error found in the first two bytes.</summary>
    private int ReadHeader(ReadOnlySpan<byte> data, out bool complete)
    {
        int used = 0;
        complete = false;
        while (used < data.Length)
        {
            _header[_headerLength++] = data[used++];
            if (_headerLength == 2 && requireMask && (_header[1] & WsOpcode.MaskBit) == 0) return Fail(WsCloseStatus.ProtocolError, "mask bit missing");
            if (_headerLength >= 2 && _headerLength == HeaderSize())
            {
                complete = true;
                return used;
            }
        }
        return used;
    }

    private int HeaderSize()
    {
        int len7 = _header[1] & 0x7f;
        int size = 2 + (len7 == 126 ? 2 : len7 == 127 ? 8 : 0);
        return (_header[1] & WsOpcode.MaskBit) != 0 ? size + 4 : size;
    }

    private bool StartFrame()
    {
        byte b0 = _header[0];
        byte opcode = (byte)(b0 & 0x0f);
        bool final = (b0 & WsOpcode.Fin) != 0, rsv1 = (b0 & WsOpcode.Rsv1) != 0;
        _masked = (_header[1] & WsOpcode.MaskBit) != 0;
        int len7 = _header[1] & 0x7f;
        int at = 2;
        _remaining = len7 switch
        {
            126 => BinaryPrimitives.ReadUInt16BigEndian(_header.AsSpan(2)),
            127 => (long)Math.Min(BinaryPrimitives.ReadUInt64BigEndian(_header.AsSpan(2)), long.MaxValue),
            _ => len7,
        };
        at += len7 == 126 ? 2 : len7 == 127 ? 8 : 0;
        if (_masked)
        {
            _key = BinaryPrimitives.ReadUInt32LittleEndian(_header.AsSpan(at));
            _keyPosition = 0;
        }
        _headerLength = 0;
        _inPayload = true;
        switch (opcode)
        {
            case WsOpcode.Ping or WsOpcode.Pong or WsOpcode.Close:
                if (_remaining > WsOpcode.MaxControlPayload)
                    return Fail(WsCloseStatus.ProtocolError, $"control frame length bigger than maximum allowed of {WsOpcode.MaxControlPayload} bytes") >= 0;
                if (!final) return Fail(WsCloseStatus.ProtocolError, "control frame does not have final bit set") >= 0;
                _controlLength = 0;
                break;
            case WsOpcode.Text or WsOpcode.Binary:
                if (_fragmented) return Fail(WsCloseStatus.ProtocolError, "new message started before final frame for previous message was received") >= 0;
                if (rsv1 && !compressionNegotiated) return Fail(WsCloseStatus.ProtocolError, "compressed frame received but compression was not negotiated") >= 0;
                _fragmented = !final;
                _compressedMessage = rsv1;
                _compressedLength = 0;
                break;
            case WsOpcode.Continuation:
                if (!_fragmented || rsv1) return Fail(WsCloseStatus.ProtocolError, "invalid continuation frame") >= 0;
                _fragmented = !final;
                break;
            default:
                return Fail(WsCloseStatus.ProtocolError, $"unknown opcode {opcode}") >= 0;
        }
        _opcode = opcode;
        return true;
    }

    private bool EndFrame(IFrameSink sink)
    {
        _inPayload = false;
        if (_opcode >= WsOpcode.Close)
        {
            sink.Control(_opcode, _control.AsSpan(0, _controlLength));
            return true;
        }
        if (_compressedMessage && !_fragmented)
        {
            _compressedMessage = false;
            return Inflate(sink);
        }
        return true;
    }

    private bool AppendCompressed(ReadOnlySpan<byte> chunk)
    {
        int need = _compressedLength + chunk.Length + DeflateTail.Length;
        if (need > maxCompressedMessage) return Fail(WsCloseStatus.MessageTooBig, "compressed message too big") >= 0;
        if (_compressed is null || _compressed.Length < need)
        {
            var bigger = ArrayPool<byte>.Shared.Rent(Math.Max(need, 4096));
            if (_compressed is not null)
            {
                _compressed.AsSpan(0, _compressedLength).CopyTo(bigger);
                ArrayPool<byte>.Shared.Return(_compressed);
            }
            _compressed = bigger;
        }
        chunk.CopyTo(_compressed.AsSpan(_compressedLength));
        _compressedLength += chunk.Length;
        return true;
    }

    /// <summary>Inflates the collected message (no context takeover: each message stands alone).</summary>
    private bool Inflate(IFrameSink sink)
    {
        if (_compressed is null) return true; // an empty compressed message
        DeflateTail.CopyTo(_compressed.AsSpan(_compressedLength));
        var output = ArrayPool<byte>.Shared.Rent(16 * 1024);
        var inflater = Zlib.RentInflater();
        try
        {
            long total = inflater.Decompress(_compressed.AsSpan(0, _compressedLength + DeflateTail.Length), output, sink, maxCompressedMessage);
            if (total < 0) return Fail(WsCloseStatus.InvalidPayload, "invalid compressed data") >= 0;
            if (total > maxCompressedMessage) return Fail(WsCloseStatus.MessageTooBig, "decompressed message too big") >= 0;
            return true;
        }
        finally
        {
            Zlib.Return(inflater);
            ArrayPool<byte>.Shared.Return(output);
            _compressedLength = 0;
        }
    }

    private int Fail(ushort status, string message)
    {
        ErrorStatus = status;
        Error = message;
        return -1;
    }

    public void Dispose()
    {
        if (_compressed is not null) ArrayPool<byte>.Shared.Return(_compressed);
        _compressed = null;
    }
}
