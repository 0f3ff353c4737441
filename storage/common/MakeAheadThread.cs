using System.Collections.Concurrent;

namespace NatsBroker.Storage.Internal;

/// <summary>Work a growing store asks to have done ahead of need (see <see cref="MakeAheadThread"/>).</summary>
internal interface IMakeAhead
{
    void MakeAhead();
}

/// <summary>
/// One dedicated background thread per engine assembly that makes memory ahead for growing stores: the memory
/// engine's next slab, a sequence index's next chunk, the next huge-page block of index chunks. Not the thread pool:
/// at a million appends a second on two cores, the ingest workers and socket loops keep the pool's threads busy,
/// and a queued item waited longer than the ~8 ms a 2 MiB slab lasts, so the appending thread touched the fresh
/// memory itself (measured: ~40% of slab first touches landed on it). A thread of its own is scheduled by the kernel
/// within its time slice instead.
/// </summary>
/// <remarks>
/// Bounded: each requester has at most one request queued (its own "making" flag), so the queue holds at most one
/// entry per live store index or engine. Making memory ahead throws only when the process is out of memory; that
/// exception is not caught here, exactly as it was not when these requests ran on the thread pool.
/// </remarks>
internal static class MakeAheadThread
{
    private static readonly ConcurrentQueue<IMakeAhead> Pending = new();
    private static readonly SemaphoreSlim Signal = new(0);
    private static int _started;

    /// <summary>Queues <paramref name="work"/>; the caller guarantees it is queued at most once at a time.</summary>
    public static void Queue(IMakeAhead work)
    {
        if (Volatile.Read(ref _started) == 0 && Interlocked.Exchange(ref _started, 1) == 0)
            new Thread(Run) { IsBackground = true, Name = "store make-ahead" }.Start();
        Pending.Enqueue(work);
        Signal.Release();
    }

    private static void Run()
    {
        while (true)
        {
            Signal.Wait();
            if (Pending.TryDequeue(out var work)) work.MakeAhead();
        }
    }
}
