namespace NatsBroker.Connections;

/// <summary>How a connection reached us (the transport; the protocol kind is NatsBroker.Protocol.ConnectionKind).</summary>
public enum TransportKind { Tcp, UnixSocket, InMemory }

/// <summary>Why a connection closed (server/client.go ClosedState, as shown in /connz reason).</summary>
public enum CloseReason
{
    ClientClosed, ServerShutdown, ProtocolViolation, ParseError, AuthenticationViolation, AuthenticationTimeout,
    SlowConsumerPendingBytes, SlowConsumerWriteDeadline, StaleConnection, MaxPayloadExceeded,
    MaxControlLineExceeded, MaxConnectionsExceeded, BadClientProtocolVersion, NoRespondersRequiresHeaders,
    ReadError, WriteError, LameDuck, ProxyNotTrusted, ProxyRequired, AuthenticationExpired, Revocation,
    // Routes (client.go ClosedState): a second connection to a peer, or to ourselves; a route taken out of the
    // config at reload; the peer's cluster name or server name clashing with ours; a client or gateway on the
    // route port.
    DuplicateRoute, RouteRemoved, ClusterNameConflict, DuplicateServerName, WrongPort, WrongGateway,
}
