using System.Buffers;

namespace NatsBroker.Protocol;

/// <summary>
/// Callbacks of <see cref="ProtocolParser"/>. The parser is generic over the handler (a sealed class or
/// struct), so these calls are direct, not interface dispatches, on the hot path.
/// Spans passed to the handler are only valid for the duration of the call.
/// </summary>
public interface IProtocolHandler
{
    /// <summary>True while auth is required and no CONNECT has been accepted: every op but CONNECT is then an
    /// 'Authorization Violation' (server/parser.go OP_START). The handler may admit the client as no_auth_user.</summary>
    bool RejectBeforeConnect();

    /// <summary>The parser stops before the next op: the connection is closing, or must decide something
    /// asynchronously first (a CONNECT's password check). The parser then reports as examined only what it consumed,
    /// so a PipeReader returns the rest at once on the next read.</summary>
    bool IsClosing { get; }

    void OnConnect(ReadOnlySpan<byte> json);
    void OnInfo(ReadOnlySpan<byte> json);
    void OnPing();
    void OnPong();
    /// <summary>A client-sent -ERR: nats-server logs it and closes the connection.</summary>
    void OnClientError(ReadOnlySpan<byte> text);

    /// <summary>Control line of PUB/HPUB accepted (size checked against max_payload, headers allowed).
    /// Called once per message before its payload arrives; pedantic subject checks belong here.</summary>
    void OnPubArgs(ReadOnlySpan<byte> subject, ReadOnlySpan<byte> reply, int headerSize, int totalSize);

    /// <summary>A complete PUB (headerSize &lt; 0) or HPUB; payload includes the header block for HPUB.</summary>
    void OnPub(ReadOnlySpan<byte> subject, ReadOnlySpan<byte> reply, int headerSize, in ReadOnlySequence<byte> payload);

    void OnSub(ReadOnlySpan<byte> subject, ReadOnlySpan<byte> queue, ReadOnlySpan<byte> sid);
    /// <summary>max &lt; 0: no limit given (or unparsable, which nats-server treats as "now").</summary>
    void OnUnsub(ReadOnlySpan<byte> sid, long max);

    /// <summary>Whether HPUB is allowed for this client (CONNECT said headers:true and the server supports them).</summary>
    bool HeadersEnabled { get; }
    int MaxPayload { get; }

    /// <summary>The parser met an error; the handler sends the -ERR (if any) and closes.</summary>
    void OnProtocolError(ProtocolError error);
}

/// <summary>Parser-detected errors and how nats-server reports them (server/parser.go, client.go).</summary>
public enum ProtocolError
{
    /// <summary>-ERR 'Unknown Protocol Operation', then close (parser.go parseErr).</summary>
    UnknownOperation,
    /// <summary>-ERR 'maximum control line exceeded', then close (overMaxControlLineLimit).</summary>
    MaxControlLineExceeded,
    /// <summary>-ERR 'Maximum Payload Violation', then close (maxPayloadViolation).</summary>
    MaxPayloadViolation,
    /// <summary>-ERR 'Authorization Violation', then close (authViolation).</summary>
    AuthorizationViolation,
    /// <summary>Bad arguments (wrong count, bad size) or HPUB without headers: nats-server closes without an -ERR.</summary>
    BadArguments,
}
