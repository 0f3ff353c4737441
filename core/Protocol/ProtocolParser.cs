using System.Buffers;
using System.Runtime.CompilerServices;

namespace NatsBroker.Protocol;

/// <summary>
/// The client protocol parser (https://docs.nats.io/reference/reference-protocols/nats-protocol).
/// <para>
/// Works on the <see cref="ReadOnlySequence{T}"/> a <c>PipeReader</c> hands over: complete control lines are
/// parsed straight from the first segment when it holds the whole line (the common case), and copied into a
/// scratch buffer only when a line straddles segments. A PUB/HPUB whose payload has not fully arrived leaves the
/// parser in the <c>awaiting payload</c> state with its subject and reply saved, so the control line is parsed
/// (and checked, and answered) exactly once however the input is split.
/// </para>
/// <para>
/// Ops are matched case-insensitively by their first bytes, as nats-server's byte-state machine does
/// (server/parser.go): <c>PING</c>/<c>PONG</c>/<c>+OK</c> ignore anything after the op up to the newline;
/// <c>PUB</c>, <c>HPUB</c>, <c>SUB</c>, <c>UNSUB</c> need a space or tab after the op; arguments are separated by
/// any run of spaces and tabs; lines end in <c>\n</c> with an optional <c>\r</c>.
/// Nothing is allocated per op.
/// </para>
/// </summary>
public sealed class ProtocolParser
{
    // Longest op name plus separators that may precede the arguments counted against max_control_line.
    private const int OpSlack = 16;

    private readonly int _maxControlLine;

    // A control line that straddles segments is copied here. Parsing is synchronous, so one buffer per thread
    // serves every connection.
    [ThreadStatic] private static byte[]? t_lineScratch;

    // Saved PUB/HPUB arguments while waiting for the payload (subject then reply, back to back); allocated the
    // first time a message arrives split, sized to fit, so idle connections carry no parse buffers.
    private byte[] _pubArgs = [];
    private bool _awaitingPayload;
    // The awaited "payload" is the empty one after a client's HMSG: checked, then dropped (SkipClientHmsg).
    private bool _discardPayload;
    private int _subjectLength;
    private int _replyLength;
    private int _headerSize;
    private int _totalSize;

    public ProtocolParser(int maxControlLine)
    {
        _maxControlLine = maxControlLine;
    }

    /// <summary>Parses as many complete ops as <paramref name="buffer"/> holds, or until the handler reports
    /// <see cref="IProtocolHandler.IsClosing"/> (checked before each op).</summary>
    /// <returns>The position up to which input was consumed; <paramref name="examined"/> is where the
    /// reader should resume waiting (the end of the buffer when an op is incomplete).</returns>
    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    public SequencePosition Parse<THandler>(in ReadOnlySequence<byte> buffer, THandler handler, out SequencePosition examined)
        where THandler : IProtocolHandler
    {
        var buf = buffer;
        examined = buffer.End;
        while (true)
        {
            if (handler.IsClosing)
            {
                // Stopped by the handler (closing, or waiting for an asynchronous decision such as a CONNECT's
                // password check): nothing past here was looked at, so the reader must hand it back at once.
                examined = buf.Start;
                break;
            }
            if (_awaitingPayload)
            {
                if (!TryCompletePayload(ref buf, handler)) break;
                continue;
            }
            if (buf.IsEmpty) break;

            ReadOnlySpan<byte> first = buf.FirstSpan;
            int run = ParsePubRun(buf, first, handler, out bool stop);
            if (run > 0) buf = buf.Slice(run);
            if (stop) break;
            if (run > 0) continue;

            ReadOnlySpan<byte> line;
            long lineLength;
            int nl = first.IndexOf((byte)'\n');
            if (nl >= 0)
            {
                line = first[..nl];
                lineLength = nl + 1;
            }
            else
            {
                SequencePosition? pos = buf.IsSingleSegment ? null : buf.PositionOf((byte)'\n');
                if (pos is null)
                {
                    // Incomplete line: fail early on what nats-server would already reject byte by byte.
                    if (!CheckPartialLine(buf, handler)) break;
                    return buf.Start;
                }
                var lineSeq = buf.Slice(0, pos.Value);
                if (lineSeq.Length > _maxControlLine + OpSlack)
                {
                    handler.OnProtocolError(ProtocolError.MaxControlLineExceeded);
                    break;
                }
                var scratch = t_lineScratch;
                if (scratch is null || scratch.Length < _maxControlLine + OpSlack) t_lineScratch = scratch = new byte[_maxControlLine + OpSlack];
                lineSeq.CopyTo(scratch);
                line = scratch.AsSpan(0, (int)lineSeq.Length);
                lineLength = lineSeq.Length + 1;
            }
            if (!line.IsEmpty && line[^1] == '\r') line = line[..^1];

            if (!ProcessLine(line, handler, ref buf, lineLength)) break;
        }
        return buf.Start;
    }

    /// <summary>Dispatches one control line. Returns false when parsing must stop (error or close).</summary>
    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    private bool ProcessLine<THandler>(ReadOnlySpan<byte> line, THandler handler, ref ReadOnlySequence<byte> buf, long lineLength)
        where THandler : IProtocolHandler
    {
        if (line.IsEmpty)
        {
            // A bare newline: nats-server's OP_START sees '\n' as an unknown op.
            return Fail(handler, handler.RejectBeforeConnect() ? ProtocolError.AuthorizationViolation : ProtocolError.UnknownOperation);
        }
        byte op = Lower(line[0]);
        if (op != 'c' && handler.RejectBeforeConnect())
        {
            return Fail(handler, ProtocolError.AuthorizationViolation);
        }

        switch (op)
        {
            case (byte)'p':
                if (line.Length >= 4 && Lower(line[1]) == 'u' && Lower(line[2]) == 'b' && IsSpace(line[3]))
                {
                    return ParsePub(line[4..], -1, handler, ref buf, lineLength);
                }
                if (line.Length >= 4 && Lower(line[1]) == 'i' && Lower(line[2]) == 'n' && Lower(line[3]) == 'g')
                {
                    buf = buf.Slice(lineLength);
                    handler.OnPing();
                    return true;
                }
                if (line.Length >= 4 && Lower(line[1]) == 'o' && Lower(line[2]) == 'n' && Lower(line[3]) == 'g')
                {
                    buf = buf.Slice(lineLength);
                    handler.OnPong();
                    return true;
                }
                break;
            case (byte)'h':
                if (line.Length >= 5 && Lower(line[1]) == 'p' && Lower(line[2]) == 'u' && Lower(line[3]) == 'b' && IsSpace(line[4]))
                {
                    return ParsePub(line[5..], 0, handler, ref buf, lineLength);
                }
                if (line.Length >= 5 && Lower(line[1]) == 'm' && Lower(line[2]) == 's' && Lower(line[3]) == 'g' && IsSpace(line[4]))
                {
                    return SkipClientHmsg(line[5..], handler, ref buf, lineLength);
                }
                break;
            case (byte)'s':
                if (line.Length >= 4 && Lower(line[1]) == 'u' && Lower(line[2]) == 'b' && IsSpace(line[3]))
                {
                    var args = TrimStart(line[4..]);
                    if (args.Length > _maxControlLine) return Fail(handler, ProtocolError.MaxControlLineExceeded);
                    Span<Range> r = stackalloc Range[4];
                    int n = SplitArgs(args, r);
                    if (n == 2) handler.OnSub(args[r[0]], default, args[r[1]]);
                    else if (n == 3) handler.OnSub(args[r[0]], args[r[1]], args[r[2]]);
                    else return Fail(handler, ProtocolError.BadArguments);
                    buf = buf.Slice(lineLength);
                    return true;
                }
                break;
            case (byte)'u':
                if (line.Length >= 6 && Lower(line[1]) == 'n' && Lower(line[2]) == 's' && Lower(line[3]) == 'u'
                    && Lower(line[4]) == 'b' && IsSpace(line[5]))
                {
                    var args = TrimStart(line[6..]);
                    if (args.Length > _maxControlLine) return Fail(handler, ProtocolError.MaxControlLineExceeded);
                    Span<Range> r = stackalloc Range[3];
                    int n = SplitArgs(args, r);
                    if (n == 1) handler.OnUnsub(args[r[0]], -1);
                    else if (n == 2) handler.OnUnsub(args[r[0]], ParseSize(args[r[1]]));
                    else return Fail(handler, ProtocolError.BadArguments);
                    buf = buf.Slice(lineLength);
                    return true;
                }
                break;
            case (byte)'c':
                if (line.Length >= 7 && Lower(line[1]) == 'o' && Lower(line[2]) == 'n' && Lower(line[3]) == 'n'
                    && Lower(line[4]) == 'e' && Lower(line[5]) == 'c' && Lower(line[6]) == 't')
                {
                    var json = TrimStart(line[7..]);
                    if (json.Length > _maxControlLine) return Fail(handler, ProtocolError.MaxControlLineExceeded);
                    buf = buf.Slice(lineLength);
                    handler.OnConnect(json);
                    return true;
                }
                break;
            case (byte)'i':
                if (line.Length >= 4 && Lower(line[1]) == 'n' && Lower(line[2]) == 'f' && Lower(line[3]) == 'o')
                {
                    var json = TrimStart(line[4..]);
                    if (json.Length > _maxControlLine) return Fail(handler, ProtocolError.MaxControlLineExceeded);
                    buf = buf.Slice(lineLength);
                    handler.OnInfo(json);
                    return true;
                }
                break;
            case (byte)'+':
                if (line.Length >= 3 && Lower(line[1]) == 'o' && Lower(line[2]) == 'k')
                {
                    buf = buf.Slice(lineLength);
                    return true;
                }
                break;
            case (byte)'-':
                if (line.Length >= 4 && Lower(line[1]) == 'e' && Lower(line[2]) == 'r' && Lower(line[3]) == 'r')
                {
                    buf = buf.Slice(lineLength);
                    handler.OnClientError(TrimStart(line[4..]));
                    return true;
                }
                break;
        }
        return Fail(handler, ProtocolError.UnknownOperation);
    }

    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    private bool ParsePub<THandler>(ReadOnlySpan<byte> rawArgs, int headerMarker, THandler handler,
        ref ReadOnlySequence<byte> buf, long lineLength)
        where THandler : IProtocolHandler
    {
        var error = ReadPubArgs(rawArgs, headerMarker >= 0, handler.HeadersEnabled, handler.MaxPayload,
            out var subject, out var reply, out int headerSize, out int totalSize);
        if (error is { } e) return Fail(handler, e);

        handler.OnPubArgs(subject, reply, headerSize, totalSize);
        if (handler.IsClosing) return false;

        buf = buf.Slice(lineLength);
        long need = (long)totalSize + 2;
        if (buf.Length >= need)
        {
            // Fast path: the whole message is here; no copy of the arguments.
            if (!IsTerminator(buf, totalSize)) return Fail(handler, ProtocolError.UnknownOperation);
            handler.OnPub(subject, reply, headerSize, buf.Slice(0, totalSize));
            buf = buf.Slice(need);
            return true;
        }

        // nats-server checks the byte after the payload as soon as it arrives.
        if (buf.Length > totalSize && !IsCarriageReturnAt(buf, totalSize)) return Fail(handler, ProtocolError.UnknownOperation);

        // Split message: keep the arguments until the payload arrives.
        if (_pubArgs.Length < subject.Length + reply.Length) _pubArgs = new byte[Math.Max(256, subject.Length + reply.Length)];
        subject.CopyTo(_pubArgs);
        reply.CopyTo(_pubArgs.AsSpan(subject.Length));
        _subjectLength = subject.Length;
        _replyLength = reply.Length;
        _headerSize = headerSize;
        _totalSize = totalSize;
        _awaitingPayload = true;
        return true;
    }

    /// <summary>
    /// A client's HMSG. nats-server does not gate <c>H</c>-<c>M</c> by kind (parser.go OP_H), and HMSG_ARG processes
    /// arguments only for ROUTER, GATEWAY and LEAF, so for a client the line is dropped with a zero size: the next two
    /// bytes must be <c>\r\n</c> (MSG_END_R, MSG_END_N) and the empty message reaches no subscriber. Seen on
    /// 2.14.5: <c>HMSG foo 0 0\r\n\r\nPING\r\n</c> gets PONG; <c>HMSG foo 0 0\r\nPING\r\n</c> gets
    /// -ERR 'Unknown Protocol Operation'. (When nats-server's read ends right after the line it fails in clonePubArg
    /// instead, depending on how the bytes were read; this parser waits for the two bytes.)
    /// </summary>
    private bool SkipClientHmsg<THandler>(ReadOnlySpan<byte> rawArgs, THandler handler, ref ReadOnlySequence<byte> buf, long lineLength)
        where THandler : IProtocolHandler
    {
        if (TrimStart(rawArgs).Length > _maxControlLine) return Fail(handler, ProtocolError.MaxControlLineExceeded);
        buf = buf.Slice(lineLength);
        if (buf.Length >= 2)
        {
            if (!IsTerminator(buf, 0)) return Fail(handler, ProtocolError.UnknownOperation);
            buf = buf.Slice(2);
            return true;
        }
        if (buf.Length == 1 && !IsCarriageReturnAt(buf, 0)) return Fail(handler, ProtocolError.UnknownOperation);
        _subjectLength = 0;
        _replyLength = 0;
        _headerSize = 0;
        _totalSize = 0;
        _discardPayload = true;
        _awaitingPayload = true;
        return true;
    }

    /// <summary>
    /// Reads the arguments of a PUB (<paramref name="isHeaderPub"/> false) or HPUB line, after the op, in nats-server's
    /// order of checks. Pure: the caller reports the error, so a line can be looked at again.
    /// </summary>
    /// <returns>null when the arguments are good, else the error to report.</returns>
    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    private ProtocolError? ReadPubArgs(ReadOnlySpan<byte> rawArgs, bool isHeaderPub, bool headersEnabled, int maxPayload,
        out ReadOnlySpan<byte> subject, out ReadOnlySpan<byte> reply, out int headerSize, out int totalSize)
    {
        subject = default;
        reply = default;
        headerSize = -1;
        totalSize = -1;
        // nats-server checks header support before anything else for HPUB (client.go processHeaderPub).
        if (isHeaderPub && !headersEnabled) return ProtocolError.BadArguments;

        var args = TrimStart(rawArgs);
        if (args.Length > _maxControlLine) return ProtocolError.MaxControlLineExceeded;

        Span<Range> r = stackalloc Range[5];
        int n = SplitArgs(args, r);
        if (!isHeaderPub)
        {
            if (n == 2) { subject = args[r[0]]; totalSize = ParseSize(args[r[1]]); }
            else if (n == 3) { subject = args[r[0]]; reply = args[r[1]]; totalSize = ParseSize(args[r[2]]); }
            else return ProtocolError.BadArguments;
        }
        else
        {
            if (n == 3) { subject = args[r[0]]; headerSize = ParseSize(args[r[1]]); totalSize = ParseSize(args[r[2]]); }
            else if (n == 4)
            {
                subject = args[r[0]]; reply = args[r[1]];
                headerSize = ParseSize(args[r[2]]); totalSize = ParseSize(args[r[3]]);
            }
            else return ProtocolError.BadArguments;
            if (headerSize < 0 || headerSize > totalSize) return ProtocolError.BadArguments;
        }
        if (totalSize < 0) return ProtocolError.BadArguments;
        if (totalSize > maxPayload) return ProtocolError.MaxPayloadViolation;
        return null;
    }

    /// <summary>
    /// The common case, parsed off the span: consecutive PUB/HPUB ops whose line, payload and terminator all lie in
    /// <paramref name="first"/> (the first segment of <paramref name="buf"/>), with one sequence slice per message
    /// for the payload instead of the general path's four. Stops at anything else (another op, a split or
    /// incomplete message, bad arguments, a missing terminator, not yet connected) and leaves it to the general
    /// path, which parses it again from its first byte and reports any error: nothing here has a side effect
    /// before a message is known to be complete and well-formed.
    /// </summary>
    /// <returns>Bytes of <paramref name="first"/> consumed; <paramref name="stop"/> when parsing must stop (closing).</returns>
    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    private int ParsePubRun<THandler>(in ReadOnlySequence<byte> buf, ReadOnlySpan<byte> first, THandler handler, out bool stop)
        where THandler : IProtocolHandler
    {
        stop = false;
        int pos = 0;
        while (true)
        {
            var rest = first[pos..];
            int opLength;
            if (rest.Length >= 4 && Lower(rest[0]) == 'p' && Lower(rest[1]) == 'u' && Lower(rest[2]) == 'b' && IsSpace(rest[3])) opLength = 4;
            else if (rest.Length >= 5 && Lower(rest[0]) == 'h' && Lower(rest[1]) == 'p' && Lower(rest[2]) == 'u' && Lower(rest[3]) == 'b' && IsSpace(rest[4])) opLength = 5;
            else return pos;
            if (handler.IsClosing || handler.RejectBeforeConnect()) return pos;
            int nl = rest.IndexOf((byte)'\n');
            if (nl < 0) return pos;
            var line = rest[..nl];
            if (line[^1] == '\r') line = line[..^1];
            if (ReadPubArgs(line[opLength..], opLength == 5, handler.HeadersEnabled, handler.MaxPayload,
                out var subject, out var reply, out int headerSize, out int totalSize) is not null) return pos;
            int payloadStart = nl + 1;
            if (rest.Length - payloadStart < totalSize + 2
                || rest[payloadStart + totalSize] != '\r' || rest[payloadStart + totalSize + 1] != '\n') return pos;

            handler.OnPubArgs(subject, reply, headerSize, totalSize);
            if (handler.IsClosing)
            {
                stop = true;
                return pos;
            }
            handler.OnPub(subject, reply, headerSize, buf.Slice(pos + payloadStart, totalSize));
            pos += payloadStart + totalSize + 2;
        }
    }

    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    private bool TryCompletePayload<THandler>(ref ReadOnlySequence<byte> buf, THandler handler)
        where THandler : IProtocolHandler
    {
        long need = (long)_totalSize + 2;
        if (buf.Length < need)
        {
            if (buf.Length > _totalSize && !IsCarriageReturnAt(buf, _totalSize))
            {
                _awaitingPayload = false;
                Fail(handler, ProtocolError.UnknownOperation);
            }
            return false;
        }
        _awaitingPayload = false;
        if (!IsTerminator(buf, _totalSize))
        {
            Fail(handler, ProtocolError.UnknownOperation);
            return false;
        }
        if (_discardPayload)
        {
            _discardPayload = false;
            buf = buf.Slice(need);
            return true;
        }
        var subject = _pubArgs.AsSpan(0, _subjectLength);
        var reply = _pubArgs.AsSpan(_subjectLength, _replyLength);
        handler.OnPub(subject, reply, _headerSize, buf.Slice(0, _totalSize));
        buf = buf.Slice(need);
        return true;
    }

    /// <summary>nats-server checks the two bytes after the payload positionally: '\r' then '\n'.</summary>
    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    private static bool IsTerminator(in ReadOnlySequence<byte> buf, int size)
    {
        var first = buf.FirstSpan;
        if (first.Length >= size + 2) return first[size] == '\r' && first[size + 1] == '\n';
        Span<byte> two = stackalloc byte[2];
        buf.Slice(size, 2).CopyTo(two);
        return two[0] == '\r' && two[1] == '\n';
    }

    private static bool IsCarriageReturnAt(in ReadOnlySequence<byte> buf, int index)
    {
        var first = buf.FirstSpan;
        if (first.Length > index) return first[index] == '\r';
        return buf.Slice(index, 1).FirstSpan[0] == '\r';
    }

    /// <summary>Checks an incomplete line: a bad first byte or an over-long line fails now, not at the newline.</summary>
    private bool CheckPartialLine<THandler>(in ReadOnlySequence<byte> buf, THandler handler)
        where THandler : IProtocolHandler
    {
        byte op = Lower(buf.FirstSpan[0]);
        if (op != 'c' && handler.RejectBeforeConnect())
        {
            Fail(handler, ProtocolError.AuthorizationViolation);
            return false;
        }
        if (op is not ((byte)'p' or (byte)'h' or (byte)'s' or (byte)'u' or (byte)'c' or (byte)'i' or (byte)'+' or (byte)'-'))
        {
            Fail(handler, ProtocolError.UnknownOperation);
            return false;
        }
        if (buf.Length > _maxControlLine + OpSlack)
        {
            Fail(handler, ProtocolError.MaxControlLineExceeded);
            return false;
        }
        return true;
    }

    private static bool Fail<THandler>(THandler handler, ProtocolError error) where THandler : IProtocolHandler
    {
        handler.OnProtocolError(error);
        return false;
    }

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private static byte Lower(byte b) => (byte)(b | 0x20);

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private static bool IsSpace(byte b) => b is (byte)' ' or (byte)'\t';

    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    private static ReadOnlySpan<byte> TrimStart(ReadOnlySpan<byte> s)
    {
        int i = 0;
        while (i < s.Length && IsSpace(s[i])) i++;
        return s[i..];
    }

    /// <summary>Splits on runs of spaces/tabs. Returns the token count, or ranges.Length + 1 if there are more.</summary>
    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    internal static int SplitArgs(ReadOnlySpan<byte> s, Span<Range> ranges)
    {
        int count = 0, i = 0;
        while (i < s.Length)
        {
            while (i < s.Length && IsSpace(s[i])) i++;
            if (i == s.Length) break;
            int start = i;
            while (i < s.Length && !IsSpace(s[i])) i++;
            if (count == ranges.Length) return ranges.Length + 1;
            ranges[count++] = new Range(start, i);
        }
        return count;
    }

    /// <summary>nats-server's parseSize: 1 to 9 ASCII digits, otherwise -1.</summary>
    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    internal static int ParseSize(ReadOnlySpan<byte> d)
    {
        if (d.IsEmpty || d.Length > 9) return -1;
        int n = 0;
        foreach (byte c in d)
        {
            if ((uint)(c - '0') > 9) return -1;
            n = n * 10 + (c - '0');
        }
        return n;
    }
}
