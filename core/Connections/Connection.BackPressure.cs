using System.Runtime.CompilerServices;
using NatsBroker.Transport.Polling;
using NatsBroker.Routing;

namespace NatsBroker.Connections;

/// <summary>
/// Both sides of back-pressure and flushing. As a publisher: the <see cref="Batch"/> a read's publishes go through,
/// flushed at the end of each read, and the wait on destinations that asked for it. As a destination: the flush a
/// publisher's batch asks for (deferred to the end of a poller's pass), and the drained signal a stalled publisher
/// waits on (core/Routing/README.md "Back-pressure").
/// </summary>
public sealed partial class Connection : IFlushTarget, IBatchEndWork, IStallTarget
{
    // Destinations this connection's current read touched, and their back-pressure hints.
    private readonly DeliveryBatch _batch = new();

    /// <summary>The publisher batch of this connection's reads: its handler publishes through it.</summary>
    public DeliveryBatch Batch => _batch;

    private static long StallThreshold(long maxPending) => maxPending / 4 * 3;

    // nats-server waits 2 ms (5 ms past max_pending), at most 10 ms per read. A JIT-compiled server on a loaded
    // 2-core machine drains more slowly than that budget assumes, and cut a healthy subscriber in tests where Go
    // did not; the wider budget only applies between 75% and 100% of max_pending, so a stuck client is still cut.
    private static readonly TimeSpan StallMin = TimeSpan.FromMilliseconds(10);
    private static readonly TimeSpan StallMax = TimeSpan.FromMilliseconds(20);

    /// <summary>
    /// End of a read batch: flush the destinations it touched, then act on back-pressure before reading more.
    /// Fast-producer stall: wait (bounded: 10 ms, 20 ms when the destination is past max_pending) for a backed-up
    /// destination to drain below 75% of max_pending, woken by its writer rather than polling. Self back-pressure:
    /// when this connection is its own backed-up destination, wait (unbounded, but a peer that stops reading is
    /// cut by write_deadline or by closing) until its own outbound drains.
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    private ValueTask EndReadBatchAsync()
    {
        _batch.Flush();
        if (!_batch.HasBackPressure) return ValueTask.CompletedTask;
        return WaitForBackPressureAsync();
    }

    private async ValueTask WaitForBackPressureAsync()
    {
        try
        {
            if (_batch.PublisherBackedUp)
            {
                while (!_closing && ((IStallTarget)this).IsBackedUp) await ((IStallTarget)this).WhenDrainedAsync().ConfigureAwait(false);
            }
            // One budget for all backed-up destinations of this read (nats-server: stallClientMaxDuration per read).
            long start = Environment.TickCount64;
            for (int i = 0; i < _batch.StallCount && !_closing; i++)
            {
                var target = _batch.StallTarget(i);
                if (!target.IsBackedUp) continue;
                long budget = (long)(target.IsOverLimit ? StallMax : StallMin).TotalMilliseconds - (Environment.TickCount64 - start);
                if (budget <= 0) break;
                _handler.OnProducerStalled();
                try
                {
                    await target.WhenDrainedAsync().WaitAsync(TimeSpan.FromMilliseconds(budget)).ConfigureAwait(false);
                }
                catch (TimeoutException)
                {
                    // The budget is spent: read on (the destination is cut off if it passes max_pending).
                }
            }
        }
        finally
        {
            _batch.ClearBackPressure();
        }
    }

    // 1 while this connection's flush waits for the end of a poller's pass (LinkPoller.TryDeferToBatchEnd).
    private int _flushDeferred;

    /// <summary>Set to 0 to flush at the end of each read batch even on a poller's thread (an operator's A/B switch).</summary>
    public const string DeferFlushesVariable = "NATSBROKER_FLUSH_DEFER";

    private static readonly bool DeferFlushes = Environment.GetEnvironmentVariable(DeferFlushesVariable) != "0";

    /// <summary>
    /// The end of a publisher's batch asks for this connection's queued bytes to be written. On a poller's thread
    /// (LinkPoller) the write waits for the end of the poller's pass: the other connections served in that pass may
    /// deliver here too, and then one write carries all of it (10 requesters to 2 services: fewer sends by the server
    /// and fewer, larger reads by the service). The pass is a few reads long, so this adds microseconds: a reader with
    /// more input waiting does not stay on the poller's thread (Connection.ReadLoopAsync).
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    public void Flush(bool inline)
    {
        if (!inline)
        {
            _writeSignal.SetOnThreadPool();
            return;
        }
        if (DeferFlushes)
        {
            // Publisher on a poller's thread: write once at the end of the poller's pass, with whatever the other
            // reads of that pass queue here too. Already deferred: that write takes this batch's bytes as well.
            if (Volatile.Read(ref _flushDeferred) != 0) return;
            if (Interlocked.Exchange(ref _flushDeferred, 1) != 0) return;
            if (LinkPoller.TryDeferToBatchEnd(this)) return;
            Volatile.Write(ref _flushDeferred, 0);
        }
        _writeSignal.Set();
    }

    void IBatchEndWork.RunAtBatchEnd(bool inline)
    {
        // Cleared before the wake-up: a publisher that sees it set relies on this wake-up to take its bytes.
        Interlocked.Exchange(ref _flushDeferred, 0);
        if (inline) _writeSignal.Set();
        else _writeSignal.SetOnThreadPool();
    }

    // Completed by the writer when pending falls below the stall threshold, or on close; null when nobody waits.
    private TaskCompletionSource? _drained;

    Task IStallTarget.WhenDrainedAsync()
    {
        lock (_out.Lock)
        {
            if (_closing || _out.Pending <= StallThreshold(_limits.MaxPending)) return Task.CompletedTask;
            return (_drained ??= new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously)).Task;
        }
    }

    bool IStallTarget.IsBackedUp => !_closing && PendingBytes > StallThreshold(_limits.MaxPending);
    bool IStallTarget.IsOverLimit => PendingBytes >= _limits.MaxPending;

    /// <summary>After the writer returned written chunks (caller holds the outbound lock): wake waiters once drained.</summary>
    private void SignalDrainedLocked()
    {
        if (_drained is { } tcs && (_closing || _out.Pending <= StallThreshold(_limits.MaxPending)))
        {
            _drained = null;
            tcs.TrySetResult();
        }
    }
}
