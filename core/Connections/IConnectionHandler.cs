using System.Buffers;

namespace NatsBroker.Connections;

/// <summary>
/// The protocol a <see cref="Connection"/> carries (the client protocol today, routes and leaf nodes later): what the
/// bytes mean. The connection calls it; the handler writes back through the connection (README.md "The interface").
/// </summary>
public interface IConnectionHandler
{
    /// <summary>Once, before the first read, on the thread that started the connection (send INFO). False: do not read (it is closing).</summary>
    bool OnStart();

    /// <summary>
    /// One read's input (on the read loop's thread): parse what is complete, return how far it was consumed and, in
    /// <paramref name="examined"/>, how far it was looked at (the read loop waits for more than that).
    /// </summary>
    SequencePosition OnInput(in ReadOnlySequence<byte> buffer, out SequencePosition examined);

    /// <summary>
    /// After each read: null, or work the read loop awaits before it parses on (a CONNECT waiting for its password
    /// check stopped the parser; the unconsumed rest of the input is parsed after the verdict).
    /// </summary>
    Task? CompletePendingInput();

    /// <summary>The connection cut itself off as a slow consumer (max_pending or write_deadline). May be called under the outbound lock: count and log only.</summary>
    void OnSlowConsumer(CloseReason reason);

    /// <summary>
    /// This connection's read waited (a fast-producer stall) for a destination past 75% of its max_pending to drain
    /// (nats-server stalledWait counts each such wait in /varz stalled_clients). Count only.
    /// </summary>
    void OnProducerStalled();

    /// <summary>
    /// Read on each heartbeat (Connection.Heartbeat.cs). Null: no handshake pending (keep-alive runs).
    /// Otherwise how long after the connection was made the handshake must be over (nats-server auth_timeout);
    /// <see cref="Timeout.InfiniteTimeSpan"/> while a step of it bounds its own wait.
    /// </summary>
    TimeSpan? HandshakeTimeout { get; }

    /// <summary>The handshake deadline passed: send the protocol's error and close.</summary>
    void OnHandshakeTimeout();

    /// <summary>Read on each heartbeat once the handshake is over: this kind's ping interval, ping_max, first ping.</summary>
    KeepAlivePolicy KeepAlivePolicy { get; }

    /// <summary>Queue the protocol's PING (already counted as out by <see cref="Connection.KeepAlive"/>).</summary>
    void SendPing();

    /// <summary>ping_max PINGs went unanswered: send the protocol's error and close as stale.</summary>
    void OnStale();

    /// <summary>A bug in the read loop (the connection then closes; the server goes on).</summary>
    void OnLoopFault(Exception exception);

    /// <summary>Once, after the writer stopped and before the transport is shut: release what the protocol holds (subscriptions).</summary>
    void OnClosing();

    /// <summary>Once, last: the transport is shut and the buffers are back in their pools.</summary>
    void OnClosed();
}
