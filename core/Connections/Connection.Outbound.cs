using System.Buffers;
using System.Runtime.CompilerServices;
using NatsBroker.Routing;

namespace NatsBroker.Connections;

/// <summary>
/// The outbound side: producers (this connection's handler, and any thread delivering to it) append under
/// <see cref="OutboundLock"/>; the single writer takes everything queued and writes it outside the lock
/// (client.go queueOutbound / flushOutbound). Per-connection statistics are counted here too.
/// </summary>
public sealed partial class Connection
{
    private readonly OutboundBuffer _out = new();
    private readonly AsyncSignal _writeSignal = new();
    // Environment.TickCount64 when the in-flight write started, 0 when idle; the heartbeat enforces write_deadline with it.
    private long _writeStartTicks;
    // "In" counters are written only by the read loop's thread, "out" counters only under the outbound lock.
    private long _inMsgs, _inBytes, _outMsgs, _outBytes;

    public long InMsgs => Volatile.Read(ref _inMsgs);
    public long InBytes => Volatile.Read(ref _inBytes);
    public long OutMsgs => Volatile.Read(ref _outMsgs);
    public long OutBytes => Volatile.Read(ref _outBytes);

    /// <summary>Bytes queued and not yet written.</summary>
    public long PendingBytes { get { lock (_out.Lock) return _out.Pending; } }

    /// <summary>
    /// Guards the outbound buffer. A handler holds it around a delivery's checks and append, so its own per-delivery
    /// state (auto-unsubscribe counts) changes atomically with the bytes; nothing takes another lock inside it.
    /// </summary>
    public Lock OutboundLock => _out.Lock;

    /// <summary>One message received (read loop's thread only).</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public void CountInbound(long bytes)
    {
        _inMsgs++;
        _inBytes += bytes;
    }

    /// <summary>One message queued for the peer. Caller holds <see cref="OutboundLock"/>.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public void CountOutboundLocked(long bytes)
    {
        _outMsgs++;
        _outBytes += bytes;
    }

    /// <summary>Queues protocol bytes (the caller, or the end of the read batch, wakes the writer).</summary>
    /// <param name="wake">False when the caller wakes the writer itself (e.g. right after, to close).</param>
    public void Enqueue(ReadOnlySpan<byte> bytes, bool wake = true)
    {
        lock (_out.Lock)
        {
            if (_closeStarted != 0) return;
            _out.Write(bytes);
        }
        if (wake) _writeSignal.Set();
    }

    /// <summary>Contiguous room for <paramref name="length"/> bytes, when it fits in one chunk. Caller holds <see cref="OutboundLock"/>.</summary>
    // Inlined into the handler's delivery (itself AggressiveOptimization): no call added to the per-message path.
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public bool TryReserveLocked(int length, out Span<byte> span) => _out.TryReserve(length, out span);

    /// <summary>Appends bytes, spilling across chunks. Caller holds <see cref="OutboundLock"/>.</summary>
    // Inlined into the handler's delivery (itself AggressiveOptimization): no call added to the per-message path.
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public void WriteLocked(ReadOnlySpan<byte> bytes) => _out.Write(bytes);

    /// <summary>Appends bytes, spilling across chunks. Caller holds <see cref="OutboundLock"/>.</summary>
    // Inlined into the handler's delivery (itself AggressiveOptimization): no call added to the per-message path.
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public void WriteLocked(in ReadOnlySequence<byte> bytes) => _out.Write(bytes);

    /// <summary>The buffer was released (closed): nothing can be queued. Caller holds <see cref="OutboundLock"/>.</summary>
    public bool IsReleasedLocked => _out.IsReleased;

    /// <summary>
    /// After a delivery was appended (caller holds <see cref="OutboundLock"/>): back-pressure into the publisher's
    /// batch. False when the connection just cut itself off as a slow consumer (the delivery does not count).
    /// </summary>
    /// <param name="self">The publisher is this connection (its own slow destination).</param>
    [MethodImpl(MethodImplOptions.AggressiveOptimization | MethodImplOptions.AggressiveInlining)]
    public bool AfterAppendLocked(bool self, DeliveryBatch batch)
    {
        long maxPending = _limits.MaxPending;
        if (self)
        {
            // This connection is its own slow destination: instead of cutting it off, its read loop stops
            // reading until its outbound drains (a client that stops reading its socket is still cut off by
            // write_deadline). nats-server gets the same effect by flushing its own outbound in its read loop.
            if (_out.Pending > StallThreshold(maxPending)) batch.MarkPublisherBackedUp();
        }
        else if (_out.Pending > maxPending)
        {
            // Slow consumer: the peer cannot keep up; close it, keep everyone else flowing (client.go queueOutbound).
            MarkSlowConsumerLocked();
            return false;
        }
        else if (_out.Pending > StallThreshold(maxPending))
        {
            // Over 75% of max_pending: the publisher waits briefly at the end of its read (fast producer stall).
            batch.RequestStall(this);
        }
        return true;
    }

    /// <summary>The outbound is over max_pending: close as a slow consumer. Caller holds the outbound lock.</summary>
    private void MarkSlowConsumerLocked()
    {
        if (_closing) return;
        _closing = true;
        ClosedReason ??= CloseReason.SlowConsumerPendingBytes;
        _out.Discard();
        SignalDrainedLocked();
        _handler.OnSlowConsumer(CloseReason.SlowConsumerPendingBytes);
        // Shut the transport down outside the lock, from the thread pool.
        ThreadPool.UnsafeQueueUserWorkItem(static c => c.CloseNow(CloseReason.SlowConsumerPendingBytes), this, preferLocal: false);
    }

    /// <summary>
    /// From the owner's heartbeat: a write in flight for longer than write_deadline makes this a slow consumer
    /// (client.go flushOutbound: the write deadline). True when it closed.
    /// </summary>
    public bool CheckWriteDeadline(long nowTicks)
    {
        long writeStart = Volatile.Read(ref _writeStartTicks);
        if (writeStart == 0 || nowTicks - writeStart < _limits.WriteDeadlineMs) return false;
        _handler.OnSlowConsumer(CloseReason.SlowConsumerWriteDeadline);
        CloseNow(CloseReason.SlowConsumerWriteDeadline);
        return true;
    }

    /// <summary>The single writer: waits for a signal, writes everything queued in one write, repeats.</summary>
    private async Task WriteLoopAsync()
    {
        try
        {
            while (true)
            {
                await _writeSignal.WaitAsync().ConfigureAwait(false);
                while (true)
                {
                    List<ArraySegment<byte>> chunks;
                    lock (_out.Lock)
                    {
                        if (_closeStarted != 0) return;
                        chunks = _out.TakeForWrite();
                    }
                    if (chunks.Count == 0) break;
                    Volatile.Write(ref _writeStartTicks, Environment.TickCount64);
                    try
                    {
                        foreach (var chunk in chunks) await _stream.WriteAsync(chunk.AsMemory()).ConfigureAwait(false);
                    }
                    finally
                    {
                        Volatile.Write(ref _writeStartTicks, 0);
                        lock (_out.Lock)
                        {
                            _out.Written(chunks);
                            SignalDrainedLocked();
                        }
                    }
                }
                if (_closing)
                {
                    if (_closeAfterFlush) ShutdownTransport();
                    return;
                }
            }
        }
        catch (Exception ex) when (ex is IOException or System.Net.Sockets.SocketException or ObjectDisposedException or InvalidOperationException)
        {
            CloseNow(CloseReason.WriteError);
        }
    }
}
