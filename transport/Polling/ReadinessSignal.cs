using System.Threading.Tasks.Sources;

namespace NatsBroker.Transport.Polling;

/// <summary>
/// One direction's readiness (readable or writable) of a <see cref="LinkSocketStream"/>, set by the
/// <see cref="LinkPoller"/> thread and awaited by at most one reader (or writer) at a time; allocation-free.
/// The awaiter calls <see cref="Reset"/> before each non-blocking attempt and waits only after the attempt would
/// block: an edge that arrives between the two leaves the signal set, so the wait returns at once and the attempt
/// is repeated (edge-triggered epoll reports each arrival once). The waiter's continuation runs on the poller's
/// thread, as the runtime's inline socket completions do.
/// </summary>
internal sealed class ReadinessSignal : IValueTaskSource
{
    private const int Idle = 0, Waiting = 1, Signaled = 2;
    private ManualResetValueTaskSourceCore<bool> _core = new() { RunContinuationsAsynchronously = false };
    private CancellationTokenRegistration _cancellation;
    private Exception? _failure;
    private int _state;

    public bool IsSignaled => Volatile.Read(ref _state) == Signaled;

    public void Reset()
    {
        if (_failure is not null) throw new ObjectDisposedException(nameof(LinkSocketStream), _failure);
        Volatile.Write(ref _state, Idle);
    }

    /// <summary>Completes at the next edge (at once when one came since <see cref="Reset"/>).</summary>
    public ValueTask WaitAsync(CancellationToken ct)
    {
        if (_failure is not null) return ValueTask.FromException(new ObjectDisposedException(nameof(LinkSocketStream), _failure));
        if (ct.IsCancellationRequested) return ValueTask.FromCanceled(ct);
        _core.Reset();
        if (Interlocked.CompareExchange(ref _state, Waiting, Idle) != Idle) return ValueTask.CompletedTask;
        if (ct.CanBeCanceled)
        {
            _cancellation = ct.UnsafeRegister(static (s, token) => ((ReadinessSignal)s!).Complete(new OperationCanceledException(token)), this);
        }
        return new ValueTask(this, _core.Version);
    }

    /// <summary>The poller saw the edge.</summary>
    public void Signal()
    {
        if (Interlocked.Exchange(ref _state, Signaled) == Waiting) _core.SetResult(true);
    }

    /// <summary>The stream is disposed: a pending wait ends with ObjectDisposedException, later ones at once.</summary>
    public void Fail(Exception reason)
    {
        _failure = reason;
        Complete(new ObjectDisposedException(nameof(LinkSocketStream), reason));
    }

    private void Complete(Exception error)
    {
        if (Interlocked.CompareExchange(ref _state, Idle, Waiting) == Waiting) _core.SetException(error);
    }

    void IValueTaskSource.GetResult(short token)
    {
        _cancellation.Dispose();
        _cancellation = default;
        _core.GetResult(token);
    }

    ValueTaskSourceStatus IValueTaskSource.GetStatus(short token) => _core.GetStatus(token);

    void IValueTaskSource.OnCompleted(Action<object?> continuation, object? state, short token, ValueTaskSourceOnCompletedFlags flags) =>
        _core.OnCompleted(continuation, state, token, flags);
}
