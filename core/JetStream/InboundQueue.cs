using System.Runtime.CompilerServices;
using System.Threading.Tasks.Sources;

namespace NatsBroker.JetStream;

/// <summary>
/// A stream's inbound queue: any number of publishers, one ingest worker that takes everything queued in one step.
/// <para>
/// Why not a bounded <c>Channel&lt;T&gt;</c>: it takes its lock on every <c>TryRead</c>, so the worker and the
/// publishers met on that lock once per message (perf of a fast-ingest stream's ingest thread: ~9% in the channel's
/// read). Here publishers append to one buffer under the lock, and the worker swaps that buffer for its own emptied one
/// under the lock once per batch, then reads its batch without any lock.
/// </para>
/// <para>
/// Bounded (the stream answers 429 when a write fails): a write fails once the publishers' buffer plus what the worker
/// has not yet handled of its batch reach the limit. The worker publishes its progress every
/// <see cref="ProgressEvery"/> reads, so the bound may count up to that many handled messages as still queued.
/// </para>
/// </summary>
/// <remarks>
/// Single reader: <see cref="TryRead"/> and <see cref="WaitToReadAsync"/> are called by one worker at a time, never
/// concurrently. The reader's wake-up runs its continuation on the thread pool, never on the publisher's thread.
/// Lock order: <c>_lock</c> is a leaf (nothing else is taken while it is held, and no continuation runs under it).
/// </remarks>
internal sealed class InboundQueue<T> : IValueTaskSource<bool>
{
    private const int ProgressEvery = 256;
    // Small: every stream has a queue, and most streams see few messages at a time (the buffers grow by doubling).
    private const int InitialSize = 4;

    private readonly Lock _lock = new();
    private readonly int _limit;

    // Publishers' side, under _lock.
    private T[] _write = new T[InitialSize];
    private int _writeCount;
    private bool _completed;
    private bool _readerWaiting;
    private List<TaskCompletionSource<bool>>? _roomWaiters;

    // Worker's side: its batch, read without the lock.
    private T[] _read = new T[InitialSize];
    private int _readCount;
    private int _readPos;
    /// <summary>What the worker has not handled of its batch yet (worker writes, publishers read under the lock).</summary>
    private int _batchLeft;

    private ManualResetValueTaskSourceCore<bool> _readerSignal = new() { RunContinuationsAsynchronously = true };

    public InboundQueue(int limit)
    {
        ArgumentOutOfRangeException.ThrowIfLessThan(limit, 1);
        _limit = limit;
    }

    /// <summary>Queues <paramref name="item"/>; false when the queue is full or completed (never blocks).</summary>
    public bool TryWrite(in T item)
    {
        bool wake;
        lock (_lock)
        {
            if (_completed || _writeCount + Volatile.Read(ref _batchLeft) >= _limit) return false;
            if (_writeCount == _write.Length) Array.Resize(ref _write, Math.Min(_write.Length * 2, _limit));
            _write[_writeCount++] = item;
            wake = _readerWaiting;
            _readerWaiting = false;
        }
        if (wake) _readerSignal.SetResult(true);
        return true;
    }

    /// <summary>Worker: the next queued item, false when none is queued now.</summary>
    public bool TryRead(out T item)
    {
        if (_readPos == _readCount && !TakeBatch())
        {
            item = default!;
            return false;
        }
        item = _read[_readPos++];
        if ((_readPos & (ProgressEvery - 1)) == 0) ReportProgress();
        return true;
    }

    /// <summary>Worker: completes with true when something is queued, false once completed and drained.</summary>
    public ValueTask<bool> WaitToReadAsync()
    {
        if (_readPos < _readCount) return new(true);
        lock (_lock)
        {
            if (_writeCount > 0) return new(true);
            if (_completed) return new(false);
            // Reset before a publisher can see _readerWaiting: its SetResult then completes this wait.
            _readerSignal.Reset();
            _readerWaiting = true;
        }
        return new(this, _readerSignal.Version);
    }

    /// <summary>Completes with true once a write may succeed, false if the queue was completed (mirror/source copies wait here).</summary>
    public async ValueTask<bool> WaitToWriteAsync(CancellationToken token)
    {
        TaskCompletionSource<bool> room;
        lock (_lock)
        {
            if (_completed) return false;
            if (_writeCount + Volatile.Read(ref _batchLeft) < _limit) return true;
            room = new(TaskCreationOptions.RunContinuationsAsynchronously);
            (_roomWaiters ??= []).Add(room);
        }
        return await room.Task.WaitAsync(token).ConfigureAwait(false);
    }

    /// <summary>No more writes; the worker reads what is queued, then its wait completes with false.</summary>
    public void Complete()
    {
        bool wake;
        List<TaskCompletionSource<bool>>? room;
        lock (_lock)
        {
            if (_completed) return;
            _completed = true;
            wake = _readerWaiting;
            _readerWaiting = false;
            room = _roomWaiters;
            _roomWaiters = null;
        }
        if (wake) _readerSignal.SetResult(false);
        if (room is not null) foreach (var r in room) r.TrySetResult(false);
    }

    /// <summary>The worker's batch is done: swaps in the publishers' buffer, if it holds anything.</summary>
    private bool TakeBatch()
    {
        // The handled batch's references go now, outside the lock (pooled buffers must not stay reachable from here).
        if (RuntimeHelpers.IsReferenceOrContainsReferences<T>() && _readCount > 0) Array.Clear(_read, 0, _readCount);
        List<TaskCompletionSource<bool>>? room;
        lock (_lock)
        {
            (_read, _write) = (_write, _read);
            _readCount = _writeCount;
            _writeCount = 0;
            _readPos = 0;
            Volatile.Write(ref _batchLeft, _readCount);
            room = TakeRoomWaiters();
        }
        Release(room);
        return _readCount > 0;
    }

    private void ReportProgress()
    {
        Volatile.Write(ref _batchLeft, _readCount - _readPos);
        if (Volatile.Read(ref _roomWaiters) is null) return;
        List<TaskCompletionSource<bool>>? room;
        lock (_lock) room = TakeRoomWaiters();
        Release(room);
    }

    private List<TaskCompletionSource<bool>>? TakeRoomWaiters()
    {
        if (_roomWaiters is null || _writeCount + _batchLeft >= _limit) return null;
        var room = _roomWaiters;
        _roomWaiters = null;
        return room;
    }

    private static void Release(List<TaskCompletionSource<bool>>? room)
    {
        if (room is not null) foreach (var r in room) r.TrySetResult(true);
    }

    bool IValueTaskSource<bool>.GetResult(short token) => _readerSignal.GetResult(token);
    ValueTaskSourceStatus IValueTaskSource<bool>.GetStatus(short token) => _readerSignal.GetStatus(token);
    void IValueTaskSource<bool>.OnCompleted(Action<object?> continuation, object? state, short token, ValueTaskSourceOnCompletedFlags flags)
        => _readerSignal.OnCompleted(continuation, state, token, flags);
}
