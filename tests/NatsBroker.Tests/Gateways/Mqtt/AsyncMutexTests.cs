using NatsBroker.MqttGateway;

namespace NatsBroker.Tests.Gateways.Mqtt;

/// <summary>The gateway's async lock (ClientOutput, NatsLink): exclusion under contention, no lost wake-up, cancellation.</summary>
public sealed class AsyncMutexTests
{
    /// <summary>Many tasks on the pool enter, yield inside and leave: never two inside at once, and all finish
    /// (a lost wake-up would leave one waiting for ever: the WaitAsync below fails then).</summary>
    [Fact]
    public async Task Contended_enters_exclude_each_other_and_all_get_in()
    {
        using var mutex = new AsyncMutex();
        int inside = 0, maxInside = 0, entries = 0;
        var tasks = Enumerable.Range(0, 16).Select(_ => Task.Run(async () =>
        {
            for (int i = 0; i < 2_000; i++)
            {
                await mutex.EnterAsync(CancellationToken.None);
                try
                {
                    int now = Interlocked.Increment(ref inside);
                    if (now > Volatile.Read(ref maxInside)) Volatile.Write(ref maxInside, now);
                    entries++;
                    if (i % 64 == 0) await Task.Yield();
                    Interlocked.Decrement(ref inside);
                }
                finally
                {
                    mutex.Exit();
                }
            }
        })).ToArray();
        await Task.WhenAll(tasks).WaitAsync(TimeSpan.FromSeconds(60));
        Assert.Equal(1, maxInside);
        Assert.Equal(16 * 2_000, entries);
    }

    /// <summary>A waiter whose token fires gives up without taking the lock; the holder's exit then lets the next in.</summary>
    [Fact]
    public async Task A_cancelled_wait_leaves_the_lock_usable()
    {
        using var mutex = new AsyncMutex();
        await mutex.EnterAsync(CancellationToken.None);
        using var cts = new CancellationTokenSource();
        var cancelled = mutex.EnterAsync(cts.Token).AsTask();
        var waiting = mutex.EnterAsync(CancellationToken.None).AsTask();
        Assert.False(cancelled.IsCompleted);
        await cts.CancelAsync();
        await Assert.ThrowsAnyAsync<OperationCanceledException>(() => cancelled);
        Assert.False(waiting.IsCompleted);
        mutex.Exit();
        await waiting.WaitAsync(TimeSpan.FromSeconds(10));
        mutex.Exit();
        await mutex.EnterAsync(CancellationToken.None).AsTask().WaitAsync(TimeSpan.FromSeconds(10));
    }
}
