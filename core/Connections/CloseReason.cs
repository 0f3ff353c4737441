namespace NatsBroker.Connections;

/// <summary>How a connection reached us.</summary>
public enum ConnectionKind { Tcp, UnixSocket, InMemory }

/// <summary>Why a connection closed (server/client.go ClosedState, as shown in /connz reason).</summary>
public enum CloseReason
{
    ClientClosed, ServerShutdown, ProtocolViolation, ParseError, AuthenticationViolation, AuthenticationTimeout,
    SlowConsumerPendingBytes, SlowConsumerWriteDeadline, StaleConnection, MaxPayloadExceeded,
    MaxControlLineExceeded, MaxConnectionsExceeded, BadClientProtocolVersion, NoRespondersRequiresHeaders,
    ReadError, WriteError, LameDuck, ProxyNotTrusted, ProxyRequired, AuthenticationExpired, Revocation,
}
