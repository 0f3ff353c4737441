using System.Buffers;
using System.Runtime.CompilerServices;

namespace NatsBroker.Protocol;

/// <summary>
/// The parser of route and leaf node connections: the operations nats-server's parser admits for a ROUTER or LEAF
/// connection (server/parser.go, gated by <c>c.kind</c>; argument grammars in route.go and leafnode.go, v2.9.10 and
/// v2.14.5). Client connections keep <see cref="ProtocolParser"/>, so the client's hot path has no kind branch.
/// <para>
/// Same shape as the client parser: a control line is parsed straight from the first segment when it holds the line,
/// copied to a scratch buffer when it straddles segments; a message whose payload has not fully arrived keeps a copy
/// of its control line and parses it again when the payload is complete (as nats-server's <c>clonePubArg</c> does),
/// so nothing is allocated per message and every error is found, and reported, at the control line.
/// </para>
/// <para>
/// Ops are matched case-insensitively by their first bytes as nats-server's byte-state machine does. The arguments
/// of the route and leaf ops split on spaces, tabs, <c>\r</c> and <c>\n</c> (route.go "Unroll splitArgs").
/// Errors: an op not known for the kind, or a bad byte after a payload: <see cref="ProtocolError.UnknownOperation"/>
/// (<c>-ERR 'Unknown Protocol Operation'</c>, parser.go parseErr); wrong argument counts, bad sizes, a bad reply
/// indicator: <see cref="ProtocolError.BadArguments"/> (the process* functions return an error, the read loop
/// closes the connection with no -ERR, client.go readLoop).
/// </para>
/// </summary>
public sealed class RouteProtocolParser
{
    /// <summary>nats-server 2.14.5 allows route, leaf and gateway control lines 16 times max_control_line
    /// (parser.go overMaxControlLineLimit: <c>if c.kind != CLIENT { effective *= 16 }</c>); 2.9.10 had no limit for
    /// them. Callers pass <c>max_control_line * NonClientControlLineFactor</c>.</summary>
    public const int NonClientControlLineFactor = 16;

    private const int OpSlack = 16;

    private readonly ConnectionKind _kind;
    private readonly int _maxControlLine;

    [ThreadStatic] private static byte[]? t_lineScratch;

    // A message whose payload is split keeps its control line (after the op) here until the payload arrives.
    private byte[] _pendingLine = [];
    private int _pendingLineLength;
    private RouteOp _pendingOp;
    private int _pendingTotalSize;
    private bool _awaitingPayload;

    /// <param name="kind"><see cref="ConnectionKind.Route"/> or <see cref="ConnectionKind.Leaf"/>.</param>
    /// <param name="maxControlLine">Longest control line arguments accepted (see <see cref="NonClientControlLineFactor"/>).</param>
    public RouteProtocolParser(ConnectionKind kind, int maxControlLine)
    {
        if (kind == ConnectionKind.Client) throw new ArgumentException("client connections use ProtocolParser", nameof(kind));
        _kind = kind;
        _maxControlLine = maxControlLine;
    }

    public ConnectionKind Kind => _kind;

    /// <summary>Parses as many complete ops as <paramref name="buffer"/> holds, or until the handler reports
    /// <see cref="IRouteProtocolHandler.IsClosing"/> (checked before each op).</summary>
    /// <returns>The position up to which input was consumed; <paramref name="examined"/> is where the reader
    /// should resume waiting.</returns>
    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    public SequencePosition Parse<THandler>(in ReadOnlySequence<byte> buffer, THandler handler, out SequencePosition examined)
        where THandler : IRouteProtocolHandler
    {
        var buf = buffer;
        examined = buffer.End;
        while (true)
        {
            if (handler.IsClosing)
            {
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
                if (scratch is null || scratch.Length < lineSeq.Length) t_lineScratch = scratch = new byte[Math.Max(4096, (int)lineSeq.Length)];
                lineSeq.CopyTo(scratch);
                line = scratch.AsSpan(0, (int)lineSeq.Length);
                lineLength = lineSeq.Length + 1;
            }
            if (!line.IsEmpty && line[^1] == '\r') line = line[..^1];

            if (!ProcessLine(line, handler, ref buf, lineLength)) break;
        }
        return buf.Start;
    }

    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    private bool ProcessLine<THandler>(ReadOnlySpan<byte> line, THandler handler, ref ReadOnlySequence<byte> buf, long lineLength)
        where THandler : IRouteProtocolHandler
    {
        if (line.IsEmpty) return Fail(handler, handler.RejectBeforeConnect(false) ? ProtocolError.AuthorizationViolation : ProtocolError.UnknownOperation);
        byte op = Lower(line[0]);
        if (op != 'c' && handler.RejectBeforeConnect(op == 'i')) return Fail(handler, ProtocolError.AuthorizationViolation);

        bool leaf = _kind == ConnectionKind.Leaf;
        switch (op)
        {
            case (byte)'r':
                // RS+ RS- RMSG (parser.go OP_R, OP_RS: '+' -> OP_SUB, '-' -> OP_UNSUB, 'M' -> OP_M).
                if (line.Length >= 4 && Lower(line[1]) == 's' && IsSpace(line[3]))
                {
                    if (line[2] == '+') return Interest(RouteOp.Sub, line[4..], handler, ref buf, lineLength);
                    if (line[2] == '-') return Interest(RouteOp.Unsub, line[4..], handler, ref buf, lineLength);
                }
                else if (IsMsgOp(line))
                {
                    return Message(RouteOp.Msg, line[5..], handler, ref buf, lineLength);
                }
                break;
            case (byte)'l':
                // LS+ LS- LMSG (OP_L). On a leaf connection they are the leaf forms; on a route the origin forms.
                if (line.Length >= 4 && Lower(line[1]) == 's' && IsSpace(line[3]))
                {
                    if (line[2] == '+') return Interest(leaf ? RouteOp.Sub : RouteOp.LeafSub, line[4..], handler, ref buf, lineLength);
                    if (line[2] == '-') return Interest(leaf ? RouteOp.Unsub : RouteOp.LeafUnsub, line[4..], handler, ref buf, lineLength);
                }
                else if (IsMsgOp(line))
                {
                    return Message(leaf ? RouteOp.Msg : RouteOp.OriginMsg, line[5..], handler, ref buf, lineLength);
                }
                break;
            case (byte)'h':
                if (IsMsgOp(line)) return Message(RouteOp.HeaderMsg, line[5..], handler, ref buf, lineLength);
                if (line.Length >= 5 && Lower(line[1]) == 'p' && Lower(line[2]) == 'u' && Lower(line[3]) == 'b' && IsSpace(line[4]))
                {
                    // processHeaderPub checks header support before anything else.
                    if (!handler.HeadersEnabled) return Fail(handler, ProtocolError.BadArguments);
                    return Message(RouteOp.HeaderPub, line[5..], handler, ref buf, lineLength);
                }
                break;
            case (byte)'p':
                if (line.Length >= 4 && Lower(line[1]) == 'u' && Lower(line[2]) == 'b' && IsSpace(line[3]))
                {
                    return Message(RouteOp.Pub, line[4..], handler, ref buf, lineLength);
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
            case (byte)'s':
                if (line.Length >= 4 && Lower(line[1]) == 'u' && Lower(line[2]) == 'b' && IsSpace(line[3]))
                {
                    // SUB_ARG by kind: a leaf's SUB is processLeafSub; a route's matches no case and is dropped.
                    if (leaf) return Interest(RouteOp.Sub, line[4..], handler, ref buf, lineLength);
                    return Ignore(line[4..], handler, ref buf, lineLength);
                }
                break;
            case (byte)'u':
                if (line.Length >= 6 && Lower(line[1]) == 'n' && Lower(line[2]) == 's' && Lower(line[3]) == 'u'
                    && Lower(line[4]) == 'b' && IsSpace(line[5]))
                {
                    if (leaf) return Interest(RouteOp.Unsub, line[6..], handler, ref buf, lineLength);
                    return Ignore(line[6..], handler, ref buf, lineLength);
                }
                break;
            case (byte)'a':
                // A+ / A- / Au: gateway account interest (route.go processAccountSub), a no-op for routes and leafs.
                if (line.Length >= 3 && line[1] is (byte)'+' or (byte)'-' or (byte)'u' && IsSpace(line[2]))
                {
                    return Ignore(line[3..], handler, ref buf, lineLength);
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
                // OP_MINUS_ERR wants a space or tab after the op.
                if (line.Length >= 5 && Lower(line[1]) == 'e' && Lower(line[2]) == 'r' && Lower(line[3]) == 'r' && IsSpace(line[4]))
                {
                    var text = TrimStart(line[5..]);
                    if (text.Length > _maxControlLine) return Fail(handler, ProtocolError.MaxControlLineExceeded);
                    buf = buf.Slice(lineLength);
                    handler.OnError(text);
                    return true;
                }
                break;
        }
        return Fail(handler, ProtocolError.UnknownOperation);
    }

    /// <summary><c>?MSG</c> then a space or tab (OP_M, OP_MS, OP_MSG).</summary>
    private static bool IsMsgOp(ReadOnlySpan<byte> line) =>
        line.Length >= 5 && Lower(line[1]) == 'm' && Lower(line[2]) == 's' && Lower(line[3]) == 'g' && IsSpace(line[4]);

    /// <summary>A line nats-server reads and drops for this kind (a route's SUB/UNSUB, A+/A-).</summary>
    private bool Ignore<THandler>(ReadOnlySpan<byte> rawArgs, THandler handler, ref ReadOnlySequence<byte> buf, long lineLength)
        where THandler : IRouteProtocolHandler
    {
        if (TrimStart(rawArgs).Length > _maxControlLine) return Fail(handler, ProtocolError.MaxControlLineExceeded);
        buf = buf.Slice(lineLength);
        return true;
    }

    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    private bool Interest<THandler>(RouteOp op, ReadOnlySpan<byte> rawArgs, THandler handler, ref ReadOnlySequence<byte> buf, long lineLength)
        where THandler : IRouteProtocolHandler
    {
        var args = TrimStart(rawArgs);
        if (args.Length > _maxControlLine) return Fail(handler, ProtocolError.MaxControlLineExceeded);
        var tokens = new Tokens(args);
        var pinned = _kind == ConnectionKind.Route ? handler.PinnedAccount : default;

        if (_kind == ConnectionKind.Leaf && op == RouteOp.Unsub)
        {
            // leafnode.go processLeafUnsub: "LS- will have the arg exactly as the key": no parsing, no error.
            buf = buf.Slice(lineLength);
            handler.OnRemoteUnsub(new RemoteInterest(op, default, default, tokens.Count > 0 ? tokens.Get(args, 0) : default,
                tokens.Count > 1 ? tokens.Get(args, 1) : default, 0, args));
            return true;
        }

        // Leading fields: [origin] [account] subject. Route LS+ has the origin always; route LS- only when the peer
        // advertised lnocu (route.go processRemoteSub / parseUnsubProto). The account is in the line unless the route
        // is pinned to one. A leaf's LS+ is "<subject> [<queue> <weight>]" (leafnode.go processLeafSub).
        bool hasOrigin = op == RouteOp.LeafSub || (op == RouteOp.LeafUnsub && handler.LeafUnsubHasOrigin);
        bool accountInLine = _kind == ConnectionKind.Route && pinned.IsEmpty;
        int subjectIndex = (hasOrigin ? 1 : 0) + (accountInLine ? 1 : 0);
        bool isSub = op is RouteOp.Sub or RouteOp.LeafSub;

        ReadOnlySpan<byte> queue = default;
        int weight = 0;
        if (tokens.Count == subjectIndex + 1)
        {
        }
        else if (isSub && tokens.Count == subjectIndex + 3)
        {
            queue = tokens.Get(args, subjectIndex + 1);
            weight = ProtocolParser.ParseSize(tokens.Get(args, subjectIndex + 2));
        }
        else if (!isSub && tokens.Count == subjectIndex + 2)
        {
            queue = tokens.Get(args, subjectIndex + 1);
        }
        else
        {
            return Fail(handler, ProtocolError.BadArguments);
        }

        var interest = new RemoteInterest(op,
            hasOrigin ? tokens.Get(args, 0) : default,
            accountInLine ? tokens.Get(args, subjectIndex - 1) : pinned,
            tokens.Get(args, subjectIndex), queue, weight, args);
        buf = buf.Slice(lineLength);
        if (isSub) handler.OnRemoteSub(interest);
        else handler.OnRemoteUnsub(interest);
        return true;
    }

    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    private bool Message<THandler>(RouteOp op, ReadOnlySpan<byte> rawArgs, THandler handler, ref ReadOnlySequence<byte> buf, long lineLength)
        where THandler : IRouteProtocolHandler
    {
        var args = TrimStart(rawArgs);
        if (args.Length > _maxControlLine) return Fail(handler, ProtocolError.MaxControlLineExceeded);
        var error = ReadMessage(op, args, handler.PinnedAccount, handler.MaxPayload, out var message);
        if (error is { } e) return Fail(handler, e);

        buf = buf.Slice(lineLength);
        int totalSize = message.TotalSize;
        long need = (long)totalSize + 2;
        if (buf.Length >= need)
        {
            if (!IsTerminator(buf, totalSize)) return Fail(handler, ProtocolError.UnknownOperation);
            handler.OnMessage(message, buf.Slice(0, totalSize));
            buf = buf.Slice(need);
            return true;
        }

        // nats-server checks the byte after the payload as soon as it arrives (MSG_END_R).
        if (buf.Length > totalSize && !IsCarriageReturnAt(buf, totalSize)) return Fail(handler, ProtocolError.UnknownOperation);

        if (_pendingLine.Length < args.Length) _pendingLine = new byte[Math.Max(256, args.Length)];
        args.CopyTo(_pendingLine);
        _pendingLineLength = args.Length;
        _pendingOp = op;
        _pendingTotalSize = totalSize;
        _awaitingPayload = true;
        return true;
    }

    /// <summary>
    /// Reads a message's control line arguments (after the op) in nats-server's order of checks. Pure, so a saved
    /// line can be read again when its payload completes.
    /// <para>Every form is <c>[origin] [account] subject [reply | + reply queues... | '|' queues...] [hdr] size</c>:
    /// <list type="bullet">
    /// <item>route RMSG: <c>account subject ... size</c> (route.go processRoutedMsgArgs)</item>
    /// <item>route HMSG: <c>account subject ... hdr size</c> (processRoutedHeaderMsgArgs)</item>
    /// <item>route LMSG: <c>origin account subject ... hdr size</c> (processRoutedOriginClusterMsgArgs)</item>
    /// <item>leaf LMSG/RMSG and HMSG: <c>subject ... [hdr] size</c>, max_payload checked (leafnode.go processLeaf(Header)MsgArgs)</item>
    /// <item>PUB/HPUB on either: <c>subject [reply] [hdr] size</c> (client.go processPub/processHeaderPub)</item>
    /// </list>
    /// A route pinned to an account has no account field: nats-server puts the pinned name back in its place.
    /// With N fields in all and F leading ones: N &lt; F+sizes is a parse error; N = F+sizes has no reply;
    /// N = F+sizes+1 has a reply; more has the one-byte indicator <c>+</c> or <c>|</c> after the subject.</para>
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    private ProtocolError? ReadMessage(RouteOp op, ReadOnlySpan<byte> args, ReadOnlySpan<byte> pinned, int maxPayload, out RouteMessageArgs message)
    {
        message = default;
        var tokens = new Tokens(args);
        bool route = _kind == ConnectionKind.Route;
        bool isPub = op is RouteOp.Pub or RouteOp.HeaderPub;
        bool hasOrigin = op == RouteOp.OriginMsg;
        bool accountInLine = route && !isPub && pinned.IsEmpty;
        bool hasHeader = op is RouteOp.HeaderMsg or RouteOp.OriginMsg or RouteOp.HeaderPub;
        int leading = (hasOrigin ? 1 : 0) + (accountInLine ? 1 : 0) + 1;
        int sizes = hasHeader ? 2 : 1;
        int n = tokens.Count;

        ReadOnlySpan<byte> reply = default;
        ReadOnlySpan<byte> queues = default;
        if (n < leading + sizes) return ProtocolError.BadArguments;
        if (n == leading + sizes + 1)
        {
            reply = tokens.Get(args, leading);
        }
        else if (n > leading + sizes + 1)
        {
            // PUB/HPUB have no queue form: more fields than subject, reply and sizes is a parse error.
            if (isPub) return ProtocolError.BadArguments;
            var indicator = tokens.Get(args, leading);
            if (indicator.Length != 1) return ProtocolError.BadArguments;
            int firstQueue;
            if (indicator[0] == '+')
            {
                reply = tokens.Get(args, leading + 1);
                firstQueue = leading + 2;
            }
            else if (indicator[0] == '|')
            {
                firstQueue = leading + 1;
            }
            else
            {
                return ProtocolError.BadArguments;
            }
            if (firstQueue < n - sizes) queues = tokens.Span(args, firstQueue, n - sizes - 1);
        }

        int headerSize = -1;
        if (hasHeader)
        {
            headerSize = ProtocolParser.ParseSize(tokens.Get(args, n - 2));
            if (headerSize < 0) return ProtocolError.BadArguments;
        }
        int totalSize = ProtocolParser.ParseSize(tokens.Get(args, n - 1));
        if (totalSize < 0) return ProtocolError.BadArguments;
        if (headerSize > totalSize) return ProtocolError.BadArguments;
        // Routes do not check max_payload (mpay -1); leaf connections and PUBs do.
        if ((!route || isPub) && totalSize > maxPayload) return ProtocolError.MaxPayloadViolation;

        int i = 0;
        var origin = hasOrigin ? tokens.Get(args, i++) : default;
        var account = accountInLine ? tokens.Get(args, i++) : (route && !isPub ? pinned : default);
        var subject = tokens.Get(args, i);
        message = new RouteMessageArgs(op, origin, account, subject, reply, queues, headerSize, totalSize);
        return null;
    }

    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    private bool TryCompletePayload<THandler>(ref ReadOnlySequence<byte> buf, THandler handler)
        where THandler : IRouteProtocolHandler
    {
        int totalSize = _pendingTotalSize;
        long need = (long)totalSize + 2;
        if (buf.Length < need)
        {
            if (buf.Length > totalSize && !IsCarriageReturnAt(buf, totalSize))
            {
                _awaitingPayload = false;
                Fail(handler, ProtocolError.UnknownOperation);
            }
            return false;
        }
        _awaitingPayload = false;
        if (!IsTerminator(buf, totalSize))
        {
            Fail(handler, ProtocolError.UnknownOperation);
            return false;
        }
        // The line was good when it arrived and the pinned account does not change under a connection.
        if (ReadMessage(_pendingOp, _pendingLine.AsSpan(0, _pendingLineLength), handler.PinnedAccount, int.MaxValue, out var message) is not null)
        {
            Fail(handler, ProtocolError.BadArguments);
            return false;
        }
        handler.OnMessage(message, buf.Slice(0, totalSize));
        buf = buf.Slice(need);
        return true;
    }

    private static bool IsTerminator(in ReadOnlySequence<byte> buf, int size)
    {
        var first = buf.FirstSpan;
        if (first.Length >= size + 2) return first[size] == '\r' && first[size + 1] == '\n';
        Span<byte> two = stackalloc byte[2];
        buf.Slice(size, 2).CopyTo(two);
        return two[0] == '\r' && two[1] == '\n';
    }

    private static bool IsCarriageReturnAt(in ReadOnlySequence<byte> buf, int index) => ByteAt(buf, index) == '\r';

    /// <summary>One byte of the input, wherever segments (empty ones included) put it.</summary>
    private static byte ByteAt(in ReadOnlySequence<byte> buf, long index)
    {
        var first = buf.FirstSpan;
        if (first.Length > index) return first[(int)index];
        Span<byte> one = stackalloc byte[1];
        buf.Slice(index, 1).CopyTo(one);
        return one[0];
    }

    /// <summary>An incomplete line: a first byte no op of this kind starts with, or an over-long line, fails now.</summary>
    private bool CheckPartialLine<THandler>(in ReadOnlySequence<byte> buf, THandler handler)
        where THandler : IRouteProtocolHandler
    {
        byte op = Lower(ByteAt(buf, 0));
        if (op != 'c' && handler.RejectBeforeConnect(op == 'i'))
        {
            Fail(handler, ProtocolError.AuthorizationViolation);
            return false;
        }
        if (op is not ((byte)'p' or (byte)'h' or (byte)'s' or (byte)'u' or (byte)'r' or (byte)'l' or (byte)'a'
            or (byte)'c' or (byte)'i' or (byte)'+' or (byte)'-'))
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

    private static bool Fail<THandler>(THandler handler, ProtocolError error) where THandler : IRouteProtocolHandler
    {
        handler.OnProtocolError(error);
        return false;
    }

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private static byte Lower(byte b) => (byte)(b | 0x20);

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private static bool IsSpace(byte b) => b is (byte)' ' or (byte)'\t';

    /// <summary>The separators of route and leaf arguments (route.go: <c>case ' ', '\t', '\r', '\n'</c>).</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    internal static bool IsBlank(byte b) => b is (byte)' ' or (byte)'\t' or (byte)'\r' or (byte)'\n';

    private static ReadOnlySpan<byte> TrimStart(ReadOnlySpan<byte> s)
    {
        int i = 0;
        while (i < s.Length && IsSpace(s[i])) i++;
        return s[i..];
    }

    /// <summary>
    /// The token positions of an argument line: the first six (a route LMSG's origin, account, subject, '+', reply and
    /// first queue are the most any form reads by index) and the last two (the sizes),
    /// and the count, in one pass with no limit on the number of queue names between them.
    /// </summary>
    private ref struct Tokens
    {
        private Range _t0, _t1, _t2, _t3, _t4, _t5;
        private Range _last, _beforeLast;
        public int Count;

        public Tokens(ReadOnlySpan<byte> s)
        {
            int i = 0;
            while (i < s.Length)
            {
                while (i < s.Length && IsBlank(s[i])) i++;
                if (i == s.Length) break;
                int start = i;
                while (i < s.Length && !IsBlank(s[i])) i++;
                var r = new Range(start, i);
                switch (Count)
                {
                    case 0: _t0 = r; break;
                    case 1: _t1 = r; break;
                    case 2: _t2 = r; break;
                    case 3: _t3 = r; break;
                    case 4: _t4 = r; break;
                    case 5: _t5 = r; break;
                }
                _beforeLast = _last;
                _last = r;
                Count++;
            }
        }

        private readonly Range At(int index)
        {
            if (index == Count - 1) return _last;
            if (index == Count - 2) return _beforeLast;
            return index switch
            {
                0 => _t0,
                1 => _t1,
                2 => _t2,
                3 => _t3,
                4 => _t4,
                5 => _t5,
                _ => throw new ArgumentOutOfRangeException(nameof(index)),
            };
        }

        public readonly ReadOnlySpan<byte> Get(ReadOnlySpan<byte> s, int index) => s[At(index)];

        /// <summary>The line from the start of token <paramref name="from"/> (one of the leading ones) to the end of
        /// token <paramref name="to"/>, which is followed by the size fields: its end is found by walking back from the
        /// first of them, so tokens between the leading ones and the sizes need no slots.</summary>
        public readonly ReadOnlySpan<byte> Span(ReadOnlySpan<byte> s, int from, int to)
        {
            int start = At(from).Start.Value;
            int end = EndBefore(s, At(to + 1));
            return s[start..end];
        }

        private readonly int EndBefore(ReadOnlySpan<byte> s, Range next)
        {
            int i = next.Start.Value;
            while (i > 0 && IsBlank(s[i - 1])) i--;
            return i;
        }
    }
}
