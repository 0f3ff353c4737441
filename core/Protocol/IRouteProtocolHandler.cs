using System.Buffers;

namespace NatsBroker.Protocol;

/// <summary>
/// Callbacks of <see cref="RouteProtocolParser"/> for route and leaf node connections. Separate from
/// <see cref="IProtocolHandler"/> so the client connection and its parser are untouched by the route ops. The parser
/// is generic over the handler (a sealed class or struct): direct calls, no interface dispatch.
/// Spans passed to the handler are only valid for the duration of the call.
/// </summary>
public interface IRouteProtocolHandler
{
    /// <summary>True while the peer must send CONNECT first: nats-server sets <c>expectConnect</c> on an accepted route
    /// or leaf connection (route.go createRoute, leafnode.go createLeafNode), and any other op is then an
    /// 'Authorization Violation' (parser.go OP_START). <paramref name="isInfo"/>: the op is INFO, which a leaf
    /// connection negotiating compression may send before CONNECT.</summary>
    bool RejectBeforeConnect(bool isInfo);

    /// <summary>The parser stops before the next op (closing, or waiting on an asynchronous decision).</summary>
    bool IsClosing { get; }

    /// <summary>The account this route is pinned to, empty when it is not: a 2.10+ route dedicated to one account
    /// (cluster <c>accounts</c>, INFO <c>route_account</c>) leaves the account out of RS+, RS-, RMSG, HMSG and LMSG
    /// (route.go processRoutedMsgArgs, processRemoteSub: <c>c.route.accName</c>). Must stay valid while the parser
    /// lives: it is read again when a split message completes.</summary>
    ReadOnlySpan<byte> PinnedAccount { get; }

    /// <summary>The peer advertised <c>lnocu</c> (2.10+): its LS- carries the origin cluster as LS+ does
    /// (route.go processRemoteUnsub <c>hasOrigin := leafUnsub &amp;&amp; originSupport</c>). 2.9 peers send LS- without it.</summary>
    bool LeafUnsubHasOrigin { get; }

    /// <summary>Whether HPUB is accepted (the peer's CONNECT said <c>headers</c>; client.go processHeaderPub).</summary>
    bool HeadersEnabled { get; }

    /// <summary>Leaf connections: messages over this size are a 'Maximum Payload Violation' (leafnode.go
    /// processLeafMsgArgs). Routes: nats-server does not check (their <c>mpay</c> is -1); return <see cref="int.MaxValue"/>.</summary>
    int MaxPayload { get; }

    void OnConnect(ReadOnlySpan<byte> json);
    void OnInfo(ReadOnlySpan<byte> json);
    void OnPing();
    void OnPong();
    /// <summary>A -ERR from the peer: nats-server logs it and closes the connection (client.go processErr).</summary>
    void OnError(ReadOnlySpan<byte> text);

    /// <summary>RS+ / LS+ (and on a leaf connection SUB).</summary>
    void OnRemoteSub(in RemoteInterest interest);
    /// <summary>RS- / LS- (and on a leaf connection UNSUB).</summary>
    void OnRemoteUnsub(in RemoteInterest interest);

    /// <summary>A complete message; <paramref name="payload"/> includes the header block.</summary>
    void OnMessage(in RouteMessageArgs message, in ReadOnlySequence<byte> payload);

    /// <summary>The parser met an error; the handler sends the -ERR (if any) and closes.</summary>
    void OnProtocolError(ProtocolError error);
}
