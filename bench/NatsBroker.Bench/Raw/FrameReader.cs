using System.Buffers.Text;
using System.Net.Sockets;

namespace NatsBroker.Bench.Raw;

internal enum FrameKind
{
    Msg,
    HMsg,
    Pong,
    Ok,
    Err,
    Info,
}

/// <summary>
/// Incremental parser of server-to-client NATS frames over a blocking transport (TCP, WebSocket or TLS). It scans bytes in a reusable buffer
/// (no allocation per frame); the fields of the last frame refer into that buffer and stay valid until the next
/// call. PING is answered with PONG by the reader itself.
/// </summary>
internal sealed class FrameReader
{
    private static readonly byte[] PongFrame = "PONG\r\n"u8.ToArray();
    private readonly RawTransport _transport;
    private readonly RawConnection _conn;
    private byte[] _buf;
    private int _start;
    private int _end;

    public FrameReader(RawTransport transport, RawConnection conn, int bufferSize)
    {
        _transport = transport;
        _conn = conn;
        _buf = new byte[bufferSize];
    }

    /// <summary>Called just before the reader blocks in a receive: flush pending outbound batches here.</summary>
    public Action? BeforeBlockingRead { get; set; }

    public long BytesReceived { get; private set; }

    /// <summary>With batched reads a receive timeout only means "nothing yet": keep reading.</summary>
    public bool TimeoutIsIdle { get; set; }

    // Fields of the last frame (offsets into the buffer).
    private int _lineStart;
    private int _lineLen;
    private int _subjStart;
    private int _subjLen;
    private int _replyStart;
    private int _replyLen;
    private int _headLen;
    private bool _tokenized;
    private int _hdrStart;
    private int _hdrLen;
    private int _payStart;
    private int _payLen;

    public ReadOnlySpan<byte> Line => _buf.AsSpan(_lineStart, _lineLen);

    public ReadOnlySpan<byte> Subject
    {
        get
        {
            TokenizeHead();
            return _buf.AsSpan(_subjStart, _subjLen);
        }
    }

    public ReadOnlySpan<byte> Reply
    {
        get
        {
            TokenizeHead();
            return _buf.AsSpan(_replyStart, _replyLen);
        }
    }

    public ReadOnlySpan<byte> Headers => _buf.AsSpan(_hdrStart, _hdrLen);

    public ReadOnlySpan<byte> Payload => _buf.AsSpan(_payStart, _payLen);

    public int PayloadLength => _payLen;

    /// <summary>True if the last HMSG carried a status line (e.g. "NATS/1.0 100 ..."), i.e. a control message.</summary>
    public int Status
    {
        get
        {
            // "NATS/1.0 503" -> 503 ; "NATS/1.0\r\n" -> 0
            var h = Headers;
            if (h.Length < 12 || h[8] != (byte)' ')
            {
                return 0;
            }

            return Utf8Parser.TryParse(h.Slice(9, 3), out int code, out _) ? code : 0;
        }
    }

    public string LineText => System.Text.Encoding.ASCII.GetString(Line);

    /// <summary>Blocks until the next frame (other than PING) is complete and returns its kind.</summary>
    public FrameKind Next()
    {
        while (true)
        {
            var avail = _buf.AsSpan(_start, _end - _start);
            int nl = avail.IndexOf((byte)'\n');
            if (nl < 0)
            {
                if (avail.Length > 64 * 1024)
                {
                    throw new InvalidDataException("protocol line longer than 64 KB");
                }

                Fill(avail.Length + 1);
                continue;
            }

            int lineLen = nl > 0 && avail[nl - 1] == (byte)'\r' ? nl - 1 : nl;
            var line = avail[..lineLen];
            if (line.Length < 2)
            {
                throw new InvalidDataException("empty protocol line");
            }

            byte c0 = (byte)(line[0] | 0x20);
            if (c0 == (byte)'m' || c0 == (byte)'h')
            {
                // Fast path: sizes are the trailing tokens; subject and reply are tokenized only on demand.
                bool h = c0 == (byte)'h';
                int p = line.Length;
                int total = ParseTrailingInt(line, ref p);
                int hdr = h ? ParseTrailingInt(line, ref p) : 0;
                int need = nl + 1 + total + 2;
                if (avail.Length < need)
                {
                    Fill(need);
                    continue;
                }

                int body = _start + nl + 1;
                if (_buf[body + total] != (byte)'\r' || _buf[body + total + 1] != (byte)'\n' || hdr > total)
                {
                    throw new InvalidDataException("message payload not terminated by CRLF (size mismatch)");
                }

                _lineStart = _start;
                _lineLen = lineLen;
                _headLen = p;
                _tokenized = false;
                _hdrStart = body;
                _hdrLen = hdr;
                _payStart = body + hdr;
                _payLen = total - hdr;
                _start += need;
                return h ? FrameKind.HMsg : FrameKind.Msg;
            }

            _lineStart = _start;
            _lineLen = lineLen;
            _start += nl + 1;
            switch (c0)
            {
                case (byte)'p':
                    if ((line[1] | 0x20) == 'i')
                    {
                        _conn.Send(PongFrame);
                        continue;
                    }

                    return FrameKind.Pong;
                case (byte)'+':
                    return FrameKind.Ok;
                case (byte)'-':
                    return FrameKind.Err;
                case (byte)'i':
                    return FrameKind.Info;
                default:
                    throw new InvalidDataException("unknown protocol line: " + System.Text.Encoding.ASCII.GetString(line));
            }
        }
    }

    /// <summary>Parses the decimal token that ends at <paramref name="p"/> (exclusive), moving p before it and its separator.</summary>
    private static int ParseTrailingInt(ReadOnlySpan<byte> line, ref int p)
    {
        int end = p;
        while (end > 0 && line[end - 1] == (byte)' ')
        {
            end--;
        }

        int i = end;
        int v = 0;
        int mul = 1;
        while (i > 0 && (uint)(line[i - 1] - '0') <= 9)
        {
            v += (line[i - 1] - '0') * mul;
            mul *= 10;
            i--;
        }

        if (i == end || i == 0 || end - i > 9)
        {
            throw new InvalidDataException("bad size in MSG line: " + System.Text.Encoding.ASCII.GetString(line));
        }

        p = i;
        return v;
    }

    /// <summary>Finds subject and reply in "MSG subj sid [reply]" (the part before the sizes).</summary>
    private void TokenizeHead()
    {
        if (_tokenized)
        {
            return;
        }

        var head = _buf.AsSpan(_lineStart, _headLen);
        Span<int> ts = stackalloc int[10];
        int n = 0;
        int i = 0;
        while (i < head.Length && n < 5)
        {
            while (i < head.Length && (head[i] == (byte)' ' || head[i] == (byte)'\t'))
            {
                i++;
            }

            if (i >= head.Length)
            {
                break;
            }

            int st = i;
            while (i < head.Length && head[i] != (byte)' ' && head[i] != (byte)'\t')
            {
                i++;
            }

            ts[n * 2] = st;
            ts[(n * 2) + 1] = i;
            n++;
        }

        // tokens: [0]=MSG/HMSG [1]=subject [2]=sid [3]=reply?
        if (n < 3)
        {
            throw new InvalidDataException("bad MSG line: " + LineText);
        }

        _subjStart = _lineStart + ts[2];
        _subjLen = ts[3] - ts[2];
        if (n >= 4)
        {
            _replyStart = _lineStart + ts[6];
            _replyLen = ts[7] - ts[6];
        }
        else
        {
            _replyStart = 0;
            _replyLen = 0;
        }

        _tokenized = true;
    }

    /// <summary>Receives until at least <paramref name="need"/> bytes from _start are buffered.</summary>
    private void Fill(int need)
    {
        if (_buf.Length < need)
        {
            var nb = new byte[Math.Max(need, _buf.Length * 2)];
            _buf.AsSpan(_start, _end - _start).CopyTo(nb);
            _end -= _start;
            _start = 0;
            _buf = nb;
        }
        else if (_start + need > _buf.Length || _buf.Length - _end < _buf.Length / 4)
        {
            int len = _end - _start;
            _buf.AsSpan(_start, len).CopyTo(_buf);
            _start = 0;
            _end = len;
        }

        while (_end - _start < need)
        {
            if (_end == _start)
            {
                _start = _end = 0;
            }

            BeforeBlockingRead?.Invoke();
            int r = _transport.Receive(_buf.AsSpan(_end), out var err);
            if (err != SocketError.Success)
            {
                if (TimeoutIsIdle && err is SocketError.TimedOut or SocketError.WouldBlock)
                {
                    continue;
                }

                throw new SocketException((int)err);
            }

            if (r <= 0)
            {
                throw new EndOfStreamException("connection closed by server");
            }

            _end += r;
            BytesReceived += r;
        }
    }
}
