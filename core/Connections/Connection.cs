using System.IO.Pipelines;
using System.Net.Sockets;
using NatsBroker.Transport.Polling;
using NatsBroker.Routing;

namespace NatsBroker.Connections;

/// <summary>
/// One connection over any duplex <see cref="Stream"/> (TCP, Unix socket, in-memory), whatever protocol it carries:
/// a read loop hands input to the <see cref="IConnectionHandler"/>; a single writer drains the
/// <see cref="OutboundBuffer"/> (README.md). nats-server runs every connection kind on the same client machinery
/// (client.go readLoop, flushOutbound, queueOutbound). Split by concern: this file (running, reading, closing),
/// Outbound (queueing and the writer loop), BackPressure (end of read, stall, per-pass flush deferral).
/// </summary>
public sealed partial class Connection
{
    private readonly Stream _stream;
    private readonly IConnectionHandler _handler;
    private readonly OutboundLimits _limits;
    private int _closeStarted;
    private int _transportShut;
    private volatile bool _closing;
    private volatile bool _closeAfterFlush;
    private long _lastInTicks;

    /// <param name="handler">The protocol; it may be the object under construction (it is called only once running).</param>
    public Connection(Stream stream, TransportKind kind, OutboundLimits limits, IConnectionHandler handler)
    {
        ArgumentNullException.ThrowIfNull(stream);
        ArgumentNullException.ThrowIfNull(limits);
        ArgumentNullException.ThrowIfNull(handler);
        _stream = stream;
        Kind = kind;
        _limits = limits;
        _handler = handler;
        ConnectedAt = DateTime.UtcNow;
        ConnectedTicks = Environment.TickCount64;
        _lastInTicks = ConnectedTicks;
    }

    public TransportKind Kind { get; }
    public DateTime ConnectedAt { get; }
    /// <summary><see cref="Environment.TickCount64"/> when the connection was made.</summary>
    public long ConnectedTicks { get; }
    /// <summary><see cref="Environment.TickCount64"/> of the last read.</summary>
    public long LastInputTicks => Volatile.Read(ref _lastInTicks);
    public CloseReason? ClosedReason { get; private set; }
    public DateTime? ClosedAt { get; private set; }
    /// <summary>Closing or closed: nothing more is read, queued or delivered.</summary>
    public bool IsClosing => _closing;

    /// <summary>The socket under the stream, when there is one (a peer credentials check).</summary>
    public Socket? Socket => _stream switch { LinkSocketStream link => link.Socket, NetworkStream ns => ns.Socket, _ => null };

    /// <summary>Runs the connection until it closes: starts the handler, then reads and writes concurrently.</summary>
    /// <param name="onAcceptLoop">Called on the accept loop's thread: input already waiting at the first read is
    /// parsed on a pool thread, not here (see <see cref="ReadLoopAsync"/>).</param>
    public async Task RunAsync(bool onAcceptLoop = false)
    {
        // Not Task.Run: the writer runs until its first wait for the signal, which the handler's first queued bytes
        // (INFO) set next, so they are written on this thread (AsyncSignal runs the waiter inline) without a
        // thread-pool hop.
        var writer = WriteLoopAsync();
        try
        {
            if (_handler.OnStart()) await ReadLoopAsync(onAcceptLoop).ConfigureAwait(false);
        }
        catch (Exception ex) when (ex is IOException or SocketException or ObjectDisposedException or OperationCanceledException)
        {
            CloseNow(CloseReason.ReadError);
        }
        catch (Exception ex)
        {
            // A bug must never take the server down: log it and close only this connection.
            _handler.OnLoopFault(ex);
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
            useZeroByteReads: Kind == TransportKind.UnixSocket && _stream is LinkSocketStream));
        try
        {
            while (!_closing)
            {
                var read = reader.ReadAsync();
                // More input is already there, so this loop would go on reading on this thread. Two threads must not
                // be held by it:
                // - the accept loop's (started by NatsServer.AcceptLoopAsync): a client that sent CONNECT without
                //   waiting for INFO, and perhaps a flood after it, would hold up every later accept; it goes on on
                //   the thread pool;
                // - a poller's, which serves many sockets: a client that floods would hold up the others, and the
                //   writes deferred to the end of the poller's pass (Connection.BackPressure.cs). Those writes are
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
                var consumed = _handler.OnInput(buffer, out var examined);
                reader.AdvanceTo(consumed, examined);
                await EndReadBatchAsync().ConfigureAwait(false);
                if (_handler.CompletePendingInput() is { } pending)
                {
                    // The handler stopped parsing (a CONNECT's password check); the rest of the buffer is parsed after it.
                    await pending.ConfigureAwait(false);
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

    /// <summary>Stop reading, write what is queued, then close (the peer sees a final error before EOF).</summary>
    public void CloseAfterFlush(CloseReason reason)
    {
        if (_closing) return;
        ClosedReason ??= reason;
        _closeAfterFlush = true;
        _closing = true;
        _writeSignal.Set();
    }

    /// <summary>Close at once: pending output is dropped and the transport is shut down.</summary>
    public void CloseNow(CloseReason reason)
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
            Socket?.Shutdown(SocketShutdown.Both);
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

    /// <summary>Runs once: the handler lets go of its state, the transport is shut, buffers go back to their pools.</summary>
    private void Cleanup()
    {
        if (Interlocked.Exchange(ref _closeStarted, 1) != 0) return;
        ClosedAt = DateTime.UtcNow;
        _handler.OnClosing();
        ShutdownTransport();
        lock (_out.Lock)
        {
            _out.Release();
            SignalDrainedLocked();
        }
        _handler.OnClosed();
    }
}
