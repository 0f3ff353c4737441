using System.Buffers.Binary;

namespace NatsBroker.WebSocketGateway;

/// <summary>RFC 6455 section 5.2 opcodes and bits.</summary>
public static class WsOpcode
{
    public const byte Continuation = 0, Text = 1, Binary = 2, Close = 8, Ping = 9, Pong = 10;
    public const byte Fin = 0x80, Rsv1 = 0x40, Rsv2 = 0x20, Rsv3 = 0x10, MaskBit = 0x80;
    /// <summary>Server frames carry no mask: at most 10 header bytes.</summary>
    public const int MaxServerHeader = 10;
    public const int MaxControlPayload = 125;
}

/// <summary>Close status codes (RFC 6455 section 7.4.1) as nats-server uses them.</summary>
public static class WsCloseStatus
{
    public const ushort Normal = 1000, GoingAway = 1001, ProtocolError = 1002, NoStatus = 1005, Abnormal = 1006,
        InvalidPayload = 1007, PolicyViolation = 1008, MessageTooBig = 1009, InternalError = 1011;
}

/// <summary>Writes an unmasked (server) frame header.</summary>
public static class FrameHeader
{
    /// <summary>Length of the header for a payload of <paramref name="length"/> bytes.</summary>
    public static int Size(long length) => length <= 125 ? 2 : length < 65536 ? 4 : 10;

    /// <summary>Writes the header so that it ends exactly at <paramref name="end"/> in <paramref name="buffer"/>; returns its start.</summary>
    public static int WriteBefore(Span<byte> buffer, int end, byte opcode, bool compressed, long length)
    {
        int size = Size(length);
        var h = buffer.Slice(end - size, size);
        h[0] = (byte)(WsOpcode.Fin | opcode | (compressed ? WsOpcode.Rsv1 : 0));
        if (size == 2)
        {
            h[1] = (byte)length;
        }
        else if (size == 4)
        {
            h[1] = 126;
            BinaryPrimitives.WriteUInt16BigEndian(h[2..], (ushort)length);
        }
        else
        {
            h[1] = 127;
            BinaryPrimitives.WriteUInt64BigEndian(h[2..], (ulong)length);
        }
        return end - size;
    }

    /// <summary>
    /// Frames <paramref name="payload"/> as consecutive binary frames of at most <paramref name="maxFrame"/> payload
    /// bytes each, written back to back into <paramref name="output"/> (sized by <see cref="FramedSize"/>); returns the
    /// bytes written. One write of many small frames, as nats-server hands browsers their 4 KB frames in one writev
    /// (server/websocket.go wsCollapsePtoNB).
    /// </summary>
    public static int WriteFrames(ReadOnlySpan<byte> payload, Span<byte> output, int maxFrame)
    {
        int at = 0;
        while (!payload.IsEmpty)
        {
            int len = Math.Min(payload.Length, maxFrame);
            at = WriteBefore(output, at + Size(len), WsOpcode.Binary, false, len) + Size(len);
            payload[..len].CopyTo(output[at..]);
            at += len;
            payload = payload[len..];
        }
        return at;
    }

    /// <summary>Appends one unmasked, final frame (header and payload) to <paramref name="to"/>.</summary>
    public static void Append(System.Buffers.ArrayBufferWriter<byte> to, byte opcode, ReadOnlySpan<byte> payload)
    {
        ArgumentNullException.ThrowIfNull(to);
        int size = Size(payload.Length);
        var span = to.GetSpan(size + payload.Length);
        WriteBefore(span, size, opcode, false, payload.Length);
        payload.CopyTo(span[size..]);
        to.Advance(size + payload.Length);
    }

    /// <summary>
    /// A close frame's body (RFC 6455 section 5.5.1): the status, then the reason, cut to fit the 125-byte control
    /// payload; empty for "no status" without a reason.
    /// </summary>
    public static byte[] CloseBody(ushort status, string text)
    {
        ArgumentNullException.ThrowIfNull(text);
        if (status == WsCloseStatus.NoStatus && text.Length == 0) return [];
        if (text.Length > WsOpcode.MaxControlPayload - 2) text = text[..(WsOpcode.MaxControlPayload - 5)] + "...";
        var body = new byte[2 + System.Text.Encoding.UTF8.GetByteCount(text)];
        BinaryPrimitives.WriteUInt16BigEndian(body, status);
        System.Text.Encoding.UTF8.GetBytes(text, body.AsSpan(2));
        return body;
    }

    /// <summary>Bytes <see cref="WriteFrames"/> needs for <paramref name="length"/> payload bytes.</summary>
    public static int FramedSize(int length, int maxFrame)
    {
        int full = length / maxFrame, rest = length % maxFrame;
        return full * (Size(maxFrame) + maxFrame) + (rest > 0 ? Size(rest) + rest : 0);
    }
}
