using System.Buffers;
using System.IO.Pipelines;
using System.Net.Sockets;
using NatsBroker.Auth;
using NatsBroker.Contracts.Gateways.Polling;
using NatsBroker.Protocol;
using NatsBroker.Routing;
using NatsBroker.Subscriptions;

namespace NatsBroker.Server;

/// <summary>How a client reached us.</summary>
public enum ConnectionKind { Tcp, UnixSocket, InMemory }

/// <summary>Why a connection closed (server/client.go ClosedState, as shown in /connz reason).</summary>
public enum CloseReason
{
    ClientClosed, ServerShutdown, ProtocolViolation, ParseError, AuthenticationViolation, AuthenticationTimeout,
    SlowConsumerPendingBytes, SlowConsumerWriteDeadline, StaleConnection, MaxPayloadExceeded,
    MaxControlLineExceeded, MaxConnectionsExceeded, BadClientProtocolVersion, NoRespondersRequiresHeaders,
    ReadError, WriteError, LameDuck, ProxyNotTrusted, ProxyRequired, AuthenticationExpired, Revocation,
}

/// <summary>
/// One client connection over any duplex <see cref="Stream"/> (TCP, Unix socket, in-memory): the protocol code
/// here never touches a socket. A read loop parses input and routes messages synchronously; a writer loop
/// drains the <see cref="OutboundBuffer"/>. Split by concern: Protocol (op handlers), Delivery (routing a PUB),
/// Outbound (queueing and the writer loop).
/// </summary>
public sealed partial class ClientConnection
{
    private readonly NatsServer _server;
    private readonly Stream _stream;
    private readonly ProtocolParser _parser;
    private readonly OutboundBuffer _out = new();
    private readonly AsyncSignal _writeSignal = new();
    private readonly SubjectResultCache _l1 = new();
    private readonly Dictionary<string, Subscription> _subs = new(StringComparer.Ordinal);
    private readonly Lock _subsLock = new();
    private readonly bool _overConnectionLimit;
    private int _closeStarted;
    private int _transportShut;
    private volatile bool _closing;
    private volatile bool _closeAfterFlush;

    internal ClientConnection(NatsServer server, ulong id, Stream stream, ConnectionKind kind, string remoteIp, int remotePort, bool overConnectionLimit = false, Accounts.Account? account = null)
    {
        _server = server;
        _account = account ?? server.Accounts.Global;
        _accountFixed = account is not null;
        Id = id;
        _stream = stream;
        Kind = kind;
        RemoteIp = remoteIp;
        RemotePort = remotePort;
        _overConnectionLimit = overConnectionLimit;
        _parser = new ProtocolParser(server.Options.MaxControlLine);
        _maxPayload = EffectiveMaxPayload(server.Options);
        // nats-server sends a nonce in INFO when nkey users exist (server.go nonceRequired) or proxies are trusted
        // (ADR-55), to be signed in CONNECT.
        if (server.Auth.NonceRequired || TrustsProxies(server)) Nonce = NkeyVerifier.NewNonce();
        ConnectedAt = DateTime.UtcNow;
        _lastInTicks = Environment.TickCount64;
    }

    public ulong Id { get; }
    /// <summary>A server-internal session (start-up warm-up): not counted in statistics or monitoring.</summary>
    internal bool IsInternal { get; init; }
    public ConnectionKind Kind { get; }
    /// <summary>The peer's address; for a connection relayed by a trusted gateway, the end user's (ClientConnection.Proxy.cs).</summary>
    public string RemoteIp { get; private set; }
    public int RemotePort { get; private set; }
    public DateTime ConnectedAt { get; }
    /// <summary>Time of the last read from the client (millisecond resolution, derived from the read loop's tick stamp).</summary>
    public DateTime LastActivity => ConnectedAt.AddMilliseconds(Math.Max(0, Volatile.Read(ref _lastInTicks) - _connectedTicks));
    public ConnectOptions? Connect { get; private set; }
    public string? AuthorizedUser { get; private set; }
    /// <summary>The nonce sent in INFO (nkey users sign it); null when none was sent.</summary>
    public string? Nonce { get; }
    /// <summary>The account this client publishes and subscribes in (<c>$G</c> until authentication binds another).</summary>
    public Accounts.Account Account => _account;
    public CloseReason? ClosedReason { get; private set; }
    public DateTime? ClosedAt { get; private set; }

    // Counters for /varz and /connz. "In" counters are written only by this connection's read loop;
    // "out" counters only under _out.Lock.
    public long InMsgs, InBytes, OutMsgs, OutBytes;

    public int SubscriptionCount { get { lock (_subsLock) return _subs.Count; } }
    public long PendingBytes { get { lock (_out.Lock) return _out.Pending; } }
    public bool IsClosed => _closing;

    internal List<Subscription> SnapshotSubscriptions()
    {
        lock (_subsLock) return [.. _subs.Values];
    }

    /// <summary>Runs the connection until it closes: sends INFO, then reads and writes concurrently.</summary>
    /// <param name="onAcceptLoop">Called on the accept loop's thread: input already waiting at the first read is
    /// parsed on a pool thread, not here (see <see cref="ReadLoopAsync"/>).</param>
    internal async Task RunAsync(bool onAcceptLoop = false)
    {
        // Not Task.Run: the writer runs until its first wait for the signal, which SendInfo sets next, so INFO is
        // written on this thread (AsyncSignal runs the waiter inline) without a thread-pool hop.
        var writer = WriteLoopAsync();
        try
        {
            SendInfo();
            if (_overConnectionLimit)
            {
                SendErrorAndClose(ErrorMessages.MaxConnectionsExceeded, CloseReason.MaxConnectionsExceeded);
            }
            else
            {
                await ReadLoopAsync(onAcceptLoop).ConfigureAwait(false);
            }
        }
        catch (Exception ex) when (ex is IOException or SocketException or ObjectDisposedException or OperationCanceledException)
        {
            CloseNow(CloseReason.ReadError);
        }
        catch (Exception ex)
        {
            // A bug must never take the server down: log it and close only this connection.
            _server.Log.ConnectionLoopFault(ex, Id);
            CloseNow(CloseReason.ProtocolViolation);
        }
        if (!_closeAfterFlush) CloseNow(ClosedReason ?? CloseReason.ClientClosed);
        _writeSignal.Set();
        await writer.ConfigureAwait(false);
        Cleanup();
    }

    private async Task ReadLoopAsync(bool yieldIfInputWaiting)
    {
        // On a gateway link (LinkSocketStream over a Unix socket) a zero-byte read costs no system call (it waits for the poller's edge),
        // so the reader rents its buffer only when input is there: an idle link (one per MQTT session, WebSocket or
        // TLS client) holds none.
        var reader = PipeReader.Create(_stream, new StreamPipeReaderOptions(
            pool: ReadBufferPool.Instance, bufferSize: ReadBufferPool.BlockSize, minimumReadSize: 16 * 1024, leaveOpen: true,
            useZeroByteReads: Kind == ConnectionKind.UnixSocket && _stream is LinkSocketStream));
        try
        {
            while (!_closing)
            {
                var read = reader.ReadAsync();
                // More input is already there, so this loop would go on reading on this thread. Two threads must not
                // be held by it:
                // - the accept loop's (started by NatsServer.AcceptClient): a client that sent CONNECT without waiting
                //   for INFO, and perhaps a flood after it, would hold up every later accept; it goes on on the
                //   thread pool;
                // - a poller's, which serves many sockets: a client that floods would hold up the others, and the
                //   writes deferred to the end of the poller's pass (ClientConnection.Delivery.cs). Those writes are
                //   done now; once the pass has lasted over its budget (1 ms) the loop goes on in the poller's next
                //   pass, after the other sockets' events (going on on the thread pool instead cost a hop per read
                //   and, with several clients flooding, more threads than cores).
                if (read.IsCompleted)
                {
                    if (yieldIfInputWaiting) await Task.Yield();
                    else if (LinkPoller.RunDeferredWorkAndCheckBudget()) await LinkPoller.YieldToNextPass();
                }
                yieldIfInputWaiting = false;
                var result = await read.ConfigureAwait(false);
                var buffer = result.Buffer;
                _lastInTicks = Environment.TickCount64;
                var consumed = _parser.Parse(buffer, new Handler(this), out var examined);
                reader.AdvanceTo(consumed, examined);
                await EndReadBatchAsync().ConfigureAwait(false);
                if (_pendingAuth is not null)
                {
                    // The parser stopped after a CONNECT whose password is being checked off this thread
                    // (ClientConnection.Auth.cs); the rest of the buffer is parsed after the verdict.
                    await CompletePendingConnectAsync().ConfigureAwait(false);
                    continue;
                }
                if (result.IsCompleted || result.IsCanceled)
                {
                    if (!_closing) CloseNow(CloseReason.ClientClosed);
                    break;
                }
            }
        }
        finally
        {
            await reader.CompleteAsync().ConfigureAwait(false);
        }
    }

    /// <summary>Queue -ERR, flush what is queued, then close (the client sees the error before EOF).</summary>
    internal void SendErrorAndClose(string error, CloseReason reason)
    {
        // One wake-up for both, so the client sees the error and the close together.
        SendError(error, wake: false);
        CloseAfterFlush(reason);
    }

    internal void CloseAfterFlush(CloseReason reason)
    {
        if (_closing) return;
        ClosedReason ??= reason;
        _closeAfterFlush = true;
        _closing = true;
        _writeSignal.Set();
    }

    /// <summary>Close at once: pending output is dropped and the transport is shut down.</summary>
    internal void CloseNow(CloseReason reason)
    {
        ClosedReason ??= reason;
        _closing = true;
        lock (_out.Lock)
        {
            _out.Discard();
            SignalDrainedLocked();
        }
        ShutdownTransport();
        _writeSignal.Set();
    }

    private void ShutdownTransport()
    {
        // CloseNow, the writer's close-after-flush and Cleanup all end here: one shutdown(2) and close(2) is enough.
        if (Interlocked.Exchange(ref _transportShut, 1) != 0) return;
        try
        {
            if (_stream is NetworkStream ns) ns.Socket.Shutdown(SocketShutdown.Both);
            else if (_stream is LinkSocketStream link) link.Socket.Shutdown(SocketShutdown.Both);
        }
        catch (Exception ex) when (ex is SocketException or ObjectDisposedException)
        {
            // Already gone.
        }
        try { _stream.Dispose(); }
        catch (Exception ex) when (ex is IOException or ObjectDisposedException)
        {
            // Already gone.
        }
    }

    /// <summary>Runs once: removes subscriptions, returns buffers, unregisters from the server.</summary>
    private void Cleanup()
    {
        if (Interlocked.Exchange(ref _closeStarted, 1) != 0) return;
        ClosedAt = DateTime.UtcNow;
        List<Subscription> subs;
        lock (_subsLock)
        {
            subs = [.. _subs.Values];
            _subs.Clear();
        }
        foreach (var s in subs) s.Closed = true;
        FinalSubscriptions = subs;
        if (subs.Count > 0)
        {
            _account.Router.SubList.RemoveBatch(subs);
            foreach (var s in subs) _account.TrackedReplies.SubscriptionRemoved(s);
        }
        if (_accountCounted) _account.RemoveConnection();
        _expiry?.Dispose();
        ShutdownTransport();
        lock (_out.Lock)
        {
            _out.Release();
            SignalDrainedLocked();
        }
        _server.OnClientClosed(this);
    }
}
