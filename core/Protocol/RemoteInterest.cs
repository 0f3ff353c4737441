namespace NatsBroker.Protocol;

/// <summary>
/// One interest op from a route or leaf node (RS+ RS- LS+ LS-, and SUB/UNSUB on a leaf), its fields located in the
/// control line. Spans are valid only during the callback.
/// </summary>
public readonly ref struct RemoteInterest
{
    public RemoteInterest(RouteOp op, ReadOnlySpan<byte> origin, ReadOnlySpan<byte> account, ReadOnlySpan<byte> subject,
        ReadOnlySpan<byte> queue, int weight, ReadOnlySpan<byte> arguments)
    {
        Op = op;
        Origin = origin;
        Account = account;
        Subject = subject;
        Queue = queue;
        Weight = weight;
        Arguments = arguments;
    }

    public RouteOp Op { get; }
    /// <summary>The origin cluster of an LS+ (and of an LS- when the peer advertised <c>lnocu</c>); else empty.</summary>
    public ReadOnlySpan<byte> Origin { get; }
    /// <summary>The account: from the line, or the route's pinned account (2.10+ <c>route_account</c>); empty on a leaf
    /// connection, whose account is the one it authenticated into.</summary>
    public ReadOnlySpan<byte> Account { get; }
    public ReadOnlySpan<byte> Subject { get; }
    /// <summary>The queue group; empty for a plain subscription.</summary>
    public ReadOnlySpan<byte> Queue { get; }
    /// <summary>The queue weight of a sub with a queue, as nats-server reads it (<c>int32(parseSize(...))</c>: -1 when
    /// not digits, which it does not reject); 0 without a queue or on an unsub.</summary>
    public int Weight { get; }
    /// <summary>The arguments after the op, as sent: nats-server keys remote subscriptions by them
    /// (route.go processRemoteUnsub, leafnode.go processLeafUnsub <c>c.subs[string(arg)]</c>).</summary>
    public ReadOnlySpan<byte> Arguments { get; }
}
