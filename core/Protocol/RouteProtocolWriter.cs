namespace NatsBroker.Protocol;

/// <summary>
/// Route and leaf node protocol lines, byte for byte as nats-server writes them (checked against lines captured
/// between 2.9.10 and 2.14.5 nodes, tests/NatsBroker.Tests/Protocol/RouteVectors). Each line is sized first
/// (<c>…Length</c>), then written into one span with no allocation.
/// </summary>
public static class RouteProtocolWriter
{
    /// <summary>The four interest ops.</summary>
    public enum InterestOp
    {
        /// <summary><c>RS+</c></summary>
        RouteSub,
        /// <summary><c>RS-</c></summary>
        RouteUnsub,
        /// <summary><c>LS+</c></summary>
        LeafSub,
        /// <summary><c>LS-</c></summary>
        LeafUnsub,
    }

    private static ReadOnlySpan<byte> OpBytes(InterestOp op) => op switch
    {
        InterestOp.RouteSub => "RS+ "u8,
        InterestOp.RouteUnsub => "RS- "u8,
        InterestOp.LeafSub => "LS+ "u8,
        _ => "LS- "u8,
    };

    private static bool IsSub(InterestOp op) => op is InterestOp.RouteSub or InterestOp.LeafSub;

    /// <summary>Bytes of <see cref="WriteInterest"/>'s line.</summary>
    public static int InterestLength(InterestOp op, ReadOnlySpan<byte> origin, ReadOnlySpan<byte> account,
        ReadOnlySpan<byte> subject, ReadOnlySpan<byte> queue, int weight)
    {
        int n = 4 + subject.Length + 2;
        if (!origin.IsEmpty) n += origin.Length + 1;
        if (!account.IsEmpty) n += account.Length + 1;
        if (!queue.IsEmpty)
        {
            n += 1 + queue.Length;
            if (IsSub(op)) n += 1 + (weight < 0 ? 1 + ProtocolWriter.DigitCount(-(long)weight) : ProtocolWriter.DigitCount(weight));
        }
        return n;
    }

    /// <summary>
    /// One interest line (route.go addRouteSubOrUnsubProtoToBuf, leafnode.go sendLeafNodeSubUpdate):
    /// <code>
    /// RS+ [&lt;account&gt; ]&lt;subject&gt;[ &lt;queue&gt; &lt;weight&gt;]\r\n            route; no account when pinned
    /// RS- [&lt;account&gt; ]&lt;subject&gt;[ &lt;queue&gt;]\r\n
    /// LS+ &lt;origin&gt; [&lt;account&gt; ]&lt;subject&gt;[ &lt;queue&gt; &lt;weight&gt;]\r\n   route, leaf interest (peer has lnoc)
    /// LS- [&lt;origin&gt; ]&lt;account&gt; &lt;subject&gt;[ &lt;queue&gt;]\r\n              origin only when the peer has lnocu (2.10+)
    /// LS+ &lt;subject&gt;[ &lt;queue&gt; &lt;weight&gt;]\r\n                       leaf connection: no origin, no account
    /// LS- &lt;subject&gt;[ &lt;queue&gt;]\r\n
    /// </code>
    /// Empty <paramref name="origin"/> or <paramref name="account"/> leaves the field out. The weight is written only
    /// on a sub with a queue; nats-server's are 1 or more (a weight it read as -1 from a bad field is written as -1). Returns bytes written (<see cref="InterestLength"/>).
    /// </summary>
    public static int WriteInterest(Span<byte> dest, InterestOp op, ReadOnlySpan<byte> origin, ReadOnlySpan<byte> account,
        ReadOnlySpan<byte> subject, ReadOnlySpan<byte> queue, int weight)
    {
        OpBytes(op).CopyTo(dest);
        int o = 4;
        o = Field(dest, o, origin);
        o = Field(dest, o, account);
        subject.CopyTo(dest[o..]);
        o += subject.Length;
        if (!queue.IsEmpty)
        {
            dest[o++] = (byte)' ';
            queue.CopyTo(dest[o..]);
            o += queue.Length;
            if (IsSub(op))
            {
                dest[o++] = (byte)' ';
                o += ProtocolWriter.WriteInt(dest[o..], weight);
            }
        }
        dest[o++] = (byte)'\r';
        dest[o++] = (byte)'\n';
        return o;
    }

    /// <summary>Bytes of <see cref="WriteMessageHeader"/>'s line.</summary>
    public static int MessageHeaderLength(ConnectionKind to, ReadOnlySpan<byte> origin, ReadOnlySpan<byte> account,
        ReadOnlySpan<byte> subject, ReadOnlySpan<byte> reply, ReadOnlySpan<byte> queues, int headerSize, int totalSize)
    {
        int n = 5 + subject.Length + 1;
        if (!origin.IsEmpty) n += origin.Length + 1;
        if (to == ConnectionKind.Route && !account.IsEmpty) n += account.Length + 1;
        if (!queues.IsEmpty) n += 2 + (reply.IsEmpty ? 0 : reply.Length + 1) + queues.Length + 1;
        else if (!reply.IsEmpty) n += reply.Length + 1;
        if (!origin.IsEmpty) n += ProtocolWriter.DigitCount(Math.Max(headerSize, 0)) + 1;
        else if (headerSize >= 0) n += ProtocolWriter.DigitCount(headerSize) + 1;
        return n + ProtocolWriter.DigitCount(totalSize) + 2;
    }

    /// <summary>
    /// A message's control line (client.go msgHeaderForRouteOrLeaf); the payload and its <c>\r\n</c> follow:
    /// <code>
    /// RMSG [&lt;account&gt; ]&lt;subject&gt; [&lt;reply&gt; | + &lt;reply&gt; &lt;queues&gt; | | &lt;queues&gt; ]&lt;size&gt;\r\n   route
    /// HMSG [&lt;account&gt; ]&lt;subject&gt; [...]&lt;hdr&gt; &lt;size&gt;\r\n                                  route, with headers
    /// LMSG &lt;origin&gt; [&lt;account&gt; ]&lt;subject&gt; [...]&lt;hdr&gt; &lt;size&gt;\r\n   route, from a leaf with a cluster (hdr 0 if none)
    /// LMSG &lt;subject&gt; [...]&lt;size&gt;\r\n                                                  leaf connection
    /// HMSG &lt;subject&gt; [...]&lt;hdr&gt; &lt;size&gt;\r\n                                            leaf connection, with headers
    /// </code>
    /// <paramref name="queues"/> are the queue names separated by single spaces; <paramref name="account"/> is left out
    /// when empty (a pinned route) and always on a leaf connection; <paramref name="origin"/> makes the route LMSG;
    /// <paramref name="headerSize"/> &lt; 0 for none. Returns bytes written (<see cref="MessageHeaderLength"/>).
    /// </summary>
    public static int WriteMessageHeader(Span<byte> dest, ConnectionKind to, ReadOnlySpan<byte> origin, ReadOnlySpan<byte> account,
        ReadOnlySpan<byte> subject, ReadOnlySpan<byte> reply, ReadOnlySpan<byte> queues, int headerSize, int totalSize)
    {
        bool lmsgWithOrigin = to == ConnectionKind.Route && !origin.IsEmpty;
        ReadOnlySpan<byte> op = lmsgWithOrigin ? "LMSG "u8
            : headerSize >= 0 ? "HMSG "u8
            : to == ConnectionKind.Leaf ? "LMSG "u8
            : "RMSG "u8;
        op.CopyTo(dest);
        int o = 5;
        if (lmsgWithOrigin) o = Field(dest, o, origin);
        if (to == ConnectionKind.Route) o = Field(dest, o, account);
        o = Field(dest, o, subject);
        if (!queues.IsEmpty)
        {
            if (!reply.IsEmpty)
            {
                dest[o++] = (byte)'+';
                dest[o++] = (byte)' ';
                o = Field(dest, o, reply);
            }
            else
            {
                dest[o++] = (byte)'|';
                dest[o++] = (byte)' ';
            }
            o = Field(dest, o, queues);
        }
        else if (!reply.IsEmpty)
        {
            o = Field(dest, o, reply);
        }
        if (lmsgWithOrigin || headerSize >= 0)
        {
            o += ProtocolWriter.WriteInt(dest[o..], Math.Max(headerSize, 0));
            dest[o++] = (byte)' ';
        }
        o += ProtocolWriter.WriteInt(dest[o..], totalSize);
        dest[o++] = (byte)'\r';
        dest[o++] = (byte)'\n';
        return o;
    }

    /// <summary>Writes a non-empty field and its trailing space.</summary>
    private static int Field(Span<byte> dest, int o, ReadOnlySpan<byte> field)
    {
        if (field.IsEmpty) return o;
        field.CopyTo(dest[o..]);
        o += field.Length;
        dest[o] = (byte)' ';
        return o + 1;
    }
}
