namespace NatsBroker.JetStream;

// The ingest barrier: API requests that read a stream's state wait until its ingest worker has stored what was
// queued before them. A client that publishes to a stream and then asks for STREAM.INFO (nats.js's "jetstream - jsm"
// test: two core publishes, a flush, then stream info) must see its messages: publishes reach the stream's queue on
// the client's own thread before its API request reaches the API queue, so the count of queued messages read when the
// request is handled covers them. nats-server keeps that order per client in the same way (its ingest queue drains
// before the API worker gets to the request in practice); here it is made explicit.
internal sealed partial class JsStream
{
    /// <summary>How long a request waits for the ingest queue at most: a stream under a flood still answers.</summary>
    private static readonly TimeSpan MaxBarrierWait = TimeSpan.FromSeconds(2);

    // Messages put on the inbound queue / taken off it and handled (stored or refused). Publisher threads and the
    // ingest worker; read with Volatile. Lock order: _barrierLock is taken alone (never while holding another lock).
    private long _ingestQueued;
    private long _ingestHandled;
    private readonly Lock _barrierLock = new();
    private List<(long Target, TaskCompletionSource Done)>? _barriers;

    /// <summary>
    /// Puts a message on the inbound queue, counted BEFORE the write: a message in the queue is then always counted, so
    /// equal counts mean an empty queue. Counted after the write, a publisher preempted between its write and its count
    /// let the worker's handled count include a message the queued count did not, and equal counts while another
    /// publisher's message still waited in the queue let that publisher's next message be stored inline before it
    /// (InlinePathTests' per-connection order failed once under CI load). A barrier that reads a count whose write then
    /// fails (queue full) waits for the next handled message or its time bound.
    /// </summary>
    private bool TryQueue(in Inbound m)
    {
        Interlocked.Increment(ref _ingestQueued);
        if (_inbound.TryWrite(m)) return true;
        Interlocked.Decrement(ref _ingestQueued);
        return false;
    }

    /// <summary>Ingest worker: <paramref name="n"/> more messages handled; releases the requests they were waiting for.</summary>
    private void CountHandled(int n)
    {
        if (n == 0) return;
        long handled = Interlocked.Add(ref _ingestHandled, n);
        if (Volatile.Read(ref _barriers) is null) return;
        lock (_barrierLock)
        {
            if (_barriers is null) return;
            _barriers.RemoveAll(b =>
            {
                if (b.Target > handled) return false;
                b.Done.TrySetResult();
                return true;
            });
            if (_barriers.Count == 0) _barriers = null;
        }
    }

    /// <summary>Whether everything queued for this stream so far has been handled (a request needs no barrier wait).</summary>
    public bool IngestCaughtUp
    {
        get
        {
            long target = Volatile.Read(ref _ingestQueued);
            return Volatile.Read(ref _ingestHandled) >= target;
        }
    }

    /// <summary>
    /// Completes once everything queued for this stream until now has been handled (at most <see cref="MaxBarrierWait"/>,
    /// or at once when the stream is deleted). Called by the API workers, never on a socket thread.
    /// </summary>
    public Task WaitIngestedAsync()
    {
        long target = Volatile.Read(ref _ingestQueued);
        if (Volatile.Read(ref _ingestHandled) >= target || IsDeleted) return Task.CompletedTask;
        var done = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        lock (_barrierLock)
        {
            // Re-checked under the lock: the worker may have passed the target since the read above.
            if (Volatile.Read(ref _ingestHandled) >= target) return Task.CompletedTask;
            (_barriers ??= []).Add((target, done));
        }
        return done.Task.WaitAsync(MaxBarrierWait).ContinueWith(static _ => { }, CancellationToken.None,
            TaskContinuationOptions.ExecuteSynchronously, TaskScheduler.Default);
    }
}
