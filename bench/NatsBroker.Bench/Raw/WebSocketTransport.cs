using System.Buffers.Binary;
using System.Net;
using System.Net.Sockets;
using System.Numerics;
using System.Text;

namespace NatsBroker.Bench.Raw;

/// <summary>
/// NATS over a WebSocket (RFC 6455) for the raw generator, so the WebSocket rows measure the servers and not a
/// client library's framing: the upgrade, then every send becomes one masked binary frame (client frames must be
/// masked, RFC 6455 section 5.3; masked a vector at a time) and received frames are unwrapped back into the NATS
/// byte stream. No extensions are offered (no permessage-deflate), so frames are never compressed.
/// Allocation-free after connect; one connection's sends are serialized by <see cref="RawConnection"/>.
/// </summary>
internal sealed class WebSocketTransport : RawTransport
{
    /// <summary>Largest frame a send produces; a larger send becomes several frames.</summary>
    private const int MaxFramePayload = 64 * 1024;

    private readonly byte[] _out = new byte[14 + MaxFramePayload];
    private readonly byte[] _in;
    private readonly Vector<byte> _maskVector;
    private readonly uint _maskKey;
    private int _inStart;
    private int _inEnd;
    private long _payloadLeft;

    private WebSocketTransport(Socket socket, int bufferSize, byte[] leftover)
        : base(socket)
    {
        _in = new byte[Math.Max(bufferSize, 64 * 1024)];
        leftover.CopyTo(_in, 0);
        _inEnd = leftover.Length;
        _maskKey = (uint)Random.Shared.Next() | 1u; // any key; a non-zero one keeps the server's unmasking honest
        Span<byte> key = stackalloc byte[4];
        BinaryPrimitives.WriteUInt32LittleEndian(key, _maskKey);
        Span<byte> pattern = stackalloc byte[Vector<byte>.Count];
        for (int i = 0; i < pattern.Length; i++) pattern[i] = key[i & 3];
        _maskVector = new Vector<byte>(pattern);
    }

    /// <summary>
    /// Upgrades a connected blocking socket: GET / with the RFC's headers, then waits for the 101. Bytes that follow
    /// the response head (the server's first frames) are kept for <see cref="Receive"/>.
    /// </summary>
    public static WebSocketTransport Upgrade(Socket socket, IPEndPoint ep, int bufferSize)
    {
        Span<byte> nonce = stackalloc byte[16];
        Random.Shared.NextBytes(nonce);
        string request = "GET / HTTP/1.1\r\nHost: " + ep + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
                         "Sec-WebSocket-Key: " + Convert.ToBase64String(nonce) + "\r\nSec-WebSocket-Version: 13\r\n\r\n";
        byte[] req = Encoding.ASCII.GetBytes(request);
        socket.Send(req);

        var head = new byte[8192];
        int have = 0;
        while (true)
        {
            int n = socket.Receive(head, have, head.Length - have, SocketFlags.None);
            if (n <= 0) throw new EndOfStreamException("server closed during the WebSocket upgrade");
            have += n;
            int end = head.AsSpan(0, have).IndexOf("\r\n\r\n"u8);
            if (end >= 0)
            {
                string status = Encoding.ASCII.GetString(head, 0, head.AsSpan(0, have).IndexOf("\r\n"u8));
                if (!status.StartsWith("HTTP/1.1 101", StringComparison.Ordinal))
                {
                    throw new InvalidDataException("WebSocket upgrade refused: " + status);
                }

                return new WebSocketTransport(socket, bufferSize, head.AsSpan(end + 4, have - end - 4).ToArray());
            }

            if (have == head.Length) throw new InvalidDataException("WebSocket upgrade response head too large");
        }
    }

    public override void Send(ReadOnlySpan<byte> data)
    {
        while (!data.IsEmpty)
        {
            int len = Math.Min(data.Length, MaxFramePayload);
            int headerLen = WriteHeader(_out, opcode: 0x2, len);
            Mask(data[..len], _out.AsSpan(headerLen, len));
            SendAll(_out.AsSpan(0, headerLen + len));
            data = data[len..];
        }
    }

    public override int Receive(Span<byte> into, out SocketError error)
    {
        error = SocketError.Success;
        while (true)
        {
            int buffered = _inEnd - _inStart;
            if (_payloadLeft > 0)
            {
                if (buffered == 0)
                {
                    // Nothing buffered: read the frame's payload straight into the caller's buffer (no copy).
                    int want = (int)Math.Min(_payloadLeft, into.Length);
                    int r = Socket.Receive(into[..want], SocketFlags.None, out error);
                    if (error != SocketError.Success) return -1;
                    if (r == 0) return 0;
                    _payloadLeft -= r;
                    return r;
                }

                int n = (int)Math.Min(Math.Min(_payloadLeft, buffered), into.Length);
                _in.AsSpan(_inStart, n).CopyTo(into);
                _inStart += n;
                _payloadLeft -= n;
                return n;
            }

            // At a frame boundary: parse the next header (server frames are not masked, RFC 6455 section 5.1).
            if (!TryReadHeader(out byte opcode, out long payloadLen, out int headerLen))
            {
                int r = Fill(out error);
                if (r <= 0) return r;
                continue;
            }

            switch (opcode)
            {
                case 0x0 or 0x1 or 0x2: // continuation, text, binary: NATS bytes
                    _inStart += headerLen;
                    _payloadLeft = payloadLen;
                    continue;
                case 0x8: // close: the end of the NATS stream
                    return 0;
                case 0x9 or 0xA: // ping or pong: control payloads are at most 125 bytes, wait for all of them
                    if (buffered < headerLen + payloadLen)
                    {
                        int r = Fill(out error);
                        if (r <= 0) return r;
                        continue;
                    }

                    if (opcode == 0x9)
                    {
                        int h = WriteHeader(_out, opcode: 0xA, (int)payloadLen);
                        Mask(_in.AsSpan(_inStart + headerLen, (int)payloadLen), _out.AsSpan(h, (int)payloadLen));
                        SendAll(_out.AsSpan(0, h + (int)payloadLen));
                    }

                    _inStart += headerLen + (int)payloadLen;
                    continue;
                default:
                    throw new InvalidDataException($"unexpected WebSocket opcode {opcode}");
            }
        }
    }

    private bool TryReadHeader(out byte opcode, out long payloadLen, out int headerLen)
    {
        opcode = 0;
        payloadLen = 0;
        headerLen = 0;
        var b = _in.AsSpan(_inStart, _inEnd - _inStart);
        if (b.Length < 2) return false;
        opcode = (byte)(b[0] & 0x0F);
        bool masked = (b[1] & 0x80) != 0;
        int len7 = b[1] & 0x7F;
        int lenBytes = len7 == 126 ? 2 : len7 == 127 ? 8 : 0;
        headerLen = 2 + lenBytes + (masked ? 4 : 0);
        if (b.Length < headerLen) return false;
        if (masked) throw new InvalidDataException("server sent a masked frame (RFC 6455 section 5.1)");
        payloadLen = lenBytes switch
        {
            2 => BinaryPrimitives.ReadUInt16BigEndian(b[2..]),
            8 => (long)BinaryPrimitives.ReadUInt64BigEndian(b[2..]),
            _ => len7,
        };
        return true;
    }

    /// <summary>Reads more bytes after those buffered (compacting first): the count, 0 at end of stream, -1 on error.</summary>
    private int Fill(out SocketError error)
    {
        if (_inStart > 0)
        {
            int len = _inEnd - _inStart;
            _in.AsSpan(_inStart, len).CopyTo(_in);
            _inStart = 0;
            _inEnd = len;
        }

        int r = Socket.Receive(_in.AsSpan(_inEnd), SocketFlags.None, out error);
        if (error != SocketError.Success) return -1;
        _inEnd += r;
        return r;
    }

    /// <summary>FIN set, the opcode, the mask bit and key; returns the header length (6, 8 or 14 bytes).</summary>
    private int WriteHeader(byte[] to, byte opcode, int len)
    {
        to[0] = (byte)(0x80 | opcode);
        int at;
        if (len < 126)
        {
            to[1] = (byte)(0x80 | len);
            at = 2;
        }
        else if (len <= ushort.MaxValue)
        {
            to[1] = 0x80 | 126;
            BinaryPrimitives.WriteUInt16BigEndian(to.AsSpan(2), (ushort)len);
            at = 4;
        }
        else
        {
            to[1] = 0x80 | 127;
            BinaryPrimitives.WriteUInt64BigEndian(to.AsSpan(2), (ulong)len);
            at = 10;
        }

        BinaryPrimitives.WriteUInt32LittleEndian(to.AsSpan(at), _maskKey);
        return at + 4;
    }

    /// <summary>
    /// XORs <paramref name="src"/> with the key (byte i with key[i % 4]) into <paramref name="dst"/>. A vector starts
    /// at a multiple of its width (a power of two, at least 16), so one precomputed key vector fits every position.
    /// </summary>
    private void Mask(ReadOnlySpan<byte> src, Span<byte> dst)
    {
        int i = 0;
        int step = Vector<byte>.Count;
        for (; i + step <= src.Length; i += step)
        {
            (new Vector<byte>(src[i..]) ^ _maskVector).CopyTo(dst[i..]);
        }

        Span<byte> key = stackalloc byte[4];
        BinaryPrimitives.WriteUInt32LittleEndian(key, _maskKey);
        for (; i < src.Length; i++) dst[i] = (byte)(src[i] ^ key[i & 3]);
    }

    private void SendAll(ReadOnlySpan<byte> bytes)
    {
        while (!bytes.IsEmpty)
        {
            int n = Socket.Send(bytes, SocketFlags.None);
            bytes = bytes[n..];
        }
    }
}
