namespace NatsBroker.Protocol;

/// <summary>
/// The control line of a message from a route or leaf node (RMSG HMSG LMSG, and PUB/HPUB there), its fields located
/// in the line. Spans are valid only during the callback.
/// </summary>
public readonly ref struct RouteMessageArgs
{
    public RouteMessageArgs(RouteOp op, ReadOnlySpan<byte> origin, ReadOnlySpan<byte> account, ReadOnlySpan<byte> subject,
        ReadOnlySpan<byte> reply, ReadOnlySpan<byte> queues, int headerSize, int totalSize)
    {
        Op = op;
        Origin = origin;
        Account = account;
        Subject = subject;
        Reply = reply;
        Queues = queues;
        HeaderSize = headerSize;
        TotalSize = totalSize;
    }

    public RouteOp Op { get; }
    /// <summary>The origin cluster of a route LMSG; else empty.</summary>
    public ReadOnlySpan<byte> Origin { get; }
    /// <summary>From the line, or the route's pinned account; empty on a leaf connection and for PUB/HPUB.</summary>
    public ReadOnlySpan<byte> Account { get; }
    public ReadOnlySpan<byte> Subject { get; }
    public ReadOnlySpan<byte> Reply { get; }
    /// <summary>The queue names after <c>+ &lt;reply&gt;</c> or <c>|</c>, as they stand in the line (separated by
    /// blanks); empty when the message has none. Walk them with <see cref="QueueNames"/>.</summary>
    public ReadOnlySpan<byte> Queues { get; }
    /// <summary>Header block length; -1 for a message without one (RMSG, PUB). A route LMSG always carries it, 0 for
    /// none (client.go msgHeaderForRouteOrLeaf: "leafnode origin LMSG always have a header entry even if zero").</summary>
    public int HeaderSize { get; }
    /// <summary>Payload length, header block included.</summary>
    public int TotalSize { get; }

    public QueueNameEnumerator QueueNames => new(Queues);
}

/// <summary>Walks the blank-separated queue names of a <see cref="RouteMessageArgs"/> without allocating.</summary>
public ref struct QueueNameEnumerator
{
    private ReadOnlySpan<byte> _rest;

    public QueueNameEnumerator(ReadOnlySpan<byte> queues)
    {
        _rest = queues;
        Current = default;
    }

    public ReadOnlySpan<byte> Current { get; private set; }

    public readonly QueueNameEnumerator GetEnumerator() => this;

    public bool MoveNext()
    {
        int i = 0;
        while (i < _rest.Length && RouteProtocolParser.IsBlank(_rest[i])) i++;
        if (i == _rest.Length)
        {
            _rest = default;
            return false;
        }
        int start = i;
        while (i < _rest.Length && !RouteProtocolParser.IsBlank(_rest[i])) i++;
        Current = _rest[start..i];
        _rest = _rest[i..];
        return true;
    }
}
