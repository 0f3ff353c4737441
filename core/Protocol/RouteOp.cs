namespace NatsBroker.Protocol;

/// <summary>The route and leaf node operation a <see cref="RouteProtocolParser"/> callback carries.</summary>
public enum RouteOp
{
    /// <summary><c>RS+</c> on a route; on a leaf connection also <c>LS+</c>, <c>RS+</c> and <c>SUB</c>
    /// (parser.go SUB_ARG: <c>case LEAF: processLeafSub</c>).</summary>
    Sub,
    /// <summary><c>RS-</c> on a route; on a leaf connection also <c>LS-</c>, <c>RS-</c> and <c>UNSUB</c>.</summary>
    Unsub,
    /// <summary><c>LS+</c> on a route: leaf interest with its origin cluster (route.go processRemoteSub hasOrigin).</summary>
    LeafSub,
    /// <summary><c>LS-</c> on a route (processRemoteUnsub leafUnsub).</summary>
    LeafUnsub,
    /// <summary><c>RMSG</c> on a route; <c>RMSG</c>/<c>LMSG</c> on a leaf connection (processLeafMsgArgs).</summary>
    Msg,
    /// <summary><c>HMSG</c>: a message with a header block (processRoutedHeaderMsgArgs, processLeafHeaderMsgArgs).</summary>
    HeaderMsg,
    /// <summary><c>LMSG</c> on a route: origin cluster and a header size always (processRoutedOriginClusterMsgArgs).</summary>
    OriginMsg,
    /// <summary><c>PUB</c> sent on a route or leaf connection: nats-server's state machine accepts it there too
    /// (processPub, then processInboundMsg by kind); no account, no queues.</summary>
    Pub,
    /// <summary><c>HPUB</c> on a route or leaf connection (processHeaderPub).</summary>
    HeaderPub,
}
