namespace NatsBroker.Protocol;

/// <summary>
/// Which operations a connection may send, as nats-server gates them by <c>c.kind</c> in its parser
/// (server/parser.go OP_START, v2.9.10 and v2.14.5 alike). A client connection is parsed by
/// <see cref="ProtocolParser"/>; routes and leaf nodes by <see cref="RouteProtocolParser"/>, so the client's hot
/// path carries no kind check at all.
/// </summary>
public enum ConnectionKind
{
    /// <summary>PUB HPUB SUB UNSUB CONNECT INFO PING PONG +OK -ERR. <c>R…</c>, <c>L…</c> and <c>A…</c> ops are
    /// -ERR 'Unknown Protocol Operation' and close (parser.go: <c>if c.kind == CLIENT { goto parseErr }</c>).</summary>
    Client,
    /// <summary>A cluster route (nats-server ROUTER): RS+ RS- RMSG HMSG LS+ LS- LMSG, plus the client set.</summary>
    Route,
    /// <summary>A leaf node connection (nats-server LEAF): LS+ LS- LMSG HMSG, with RS+/RS-/RMSG and SUB/UNSUB taken
    /// as their leaf equivalents, plus the client set.</summary>
    Leaf,
}
