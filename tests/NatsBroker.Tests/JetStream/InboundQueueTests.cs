using NatsBroker.JetStream;

namespace NatsBroker.Tests.JetStream;

/// <summary>
/// The stream's inbound queue (publishers write, one worker drains in batches): order, the bound that makes a stream
/// answer 429, room for waiting mirror/source copies, completion, and no message lost or read twice under concurrent
/// publishers.
/// </summary>
public sealed class InboundQueueTests
{
    private static readonly TimeSpan Bound = TimeSpan.FromSeconds(10);

    [Fact]
    public void Items_come_out_in_order_across_batches()
    {
        var q = new InboundQueue<int>(1000);
        var got = new List<int>();
        for (int i = 0; i < 100; i++) Assert.True(q.TryWrite(i));
        while (got.Count < 40 && q.TryRead(out int v)) got.Add(v);
        for (int i = 100; i < 300; i++) Assert.True(q.TryWrite(i));
        while (q.TryRead(out int v)) got.Add(v);
        Assert.Equal(Enumerable.Range(0, 300), got);
        Assert.False(q.TryRead(out _));
    }

    [Fact]
    public void A_full_queue_refuses_writes_until_the_worker_has_handled_enough()
    {
        const int limit = 1024;
        var q = new InboundQueue<int>(limit);
        for (int i = 0; i < limit; i++) Assert.True(q.TryWrite(i));
        Assert.False(q.TryWrite(-1));

        // The worker takes the whole batch: it still counts until handled, so the queue stays full.
        Assert.True(q.TryRead(out int first));
        Assert.Equal(0, first);
        Assert.False(q.TryWrite(-1));

        // Progress is published every 256 reads: then that much room is back, and not more.
        for (int i = 1; i < 256; i++) Assert.True(q.TryRead(out _));
        for (int i = 0; i < 256; i++) Assert.True(q.TryWrite(limit + i), $"write {i} after 256 were handled");
        Assert.False(q.TryWrite(-1));
    }

    [Fact]
    public async Task A_waiting_reader_wakes_on_a_write_and_on_completion()
    {
        var q = new InboundQueue<int>(16);
        var wait = q.WaitToReadAsync().AsTask();
        Assert.False(wait.IsCompleted);
        Assert.True(q.TryWrite(7));
        Assert.True(await wait.WaitAsync(Bound));
        Assert.True(q.TryRead(out int v));
        Assert.Equal(7, v);

        wait = q.WaitToReadAsync().AsTask();
        Assert.False(wait.IsCompleted);
        q.Complete();
        Assert.False(await wait.WaitAsync(Bound));
        Assert.False(q.TryWrite(8));
    }

    [Fact]
    public async Task Completion_lets_the_worker_drain_what_was_queued_first()
    {
        var q = new InboundQueue<int>(16);
        Assert.True(q.TryWrite(1));
        Assert.True(q.TryWrite(2));
        q.Complete();
        Assert.True(await q.WaitToReadAsync());
        Assert.True(q.TryRead(out int a));
        Assert.True(q.TryRead(out int b));
        Assert.Equal((1, 2), (a, b));
        Assert.False(await q.WaitToReadAsync());
    }

    [Fact]
    public async Task A_copy_waiting_for_room_is_released_by_the_worker_or_by_completion()
    {
        var q = new InboundQueue<int>(256);
        for (int i = 0; i < 256; i++) Assert.True(q.TryWrite(i));
        var room = q.WaitToWriteAsync(CancellationToken.None).AsTask();
        Assert.False(room.IsCompleted);
        for (int i = 0; i < 256; i++) Assert.True(q.TryRead(out _));
        Assert.True(await room.WaitAsync(Bound));
        Assert.True(q.TryWrite(1));

        for (int i = 1; i < 256; i++) Assert.True(q.TryWrite(i));
        var closed = q.WaitToWriteAsync(CancellationToken.None).AsTask();
        Assert.False(closed.IsCompleted);
        q.Complete();
        Assert.False(await closed.WaitAsync(Bound));

        using var cts = new CancellationTokenSource();
        var q2 = new InboundQueue<int>(1);
        Assert.True(q2.TryWrite(0));
        var cancelled = q2.WaitToWriteAsync(cts.Token).AsTask();
        cts.Cancel();
        await Assert.ThrowsAnyAsync<OperationCanceledException>(() => cancelled.WaitAsync(Bound));
    }

    [Fact]
    public async Task Concurrent_publishers_lose_nothing_and_nothing_is_read_twice()
    {
        const int writers = 4, perWriter = 200_000;
        var q = new InboundQueue<(int Writer, int N)>(4096);
        var next = new int[writers];
        long read = 0;
        var worker = Task.Run(async () =>
        {
            while (await q.WaitToReadAsync())
            {
                while (q.TryRead(out var item))
                {
                    // Per writer, items arrive in the order that writer wrote them, each exactly once.
                    Assert.Equal(next[item.Writer], item.N);
                    next[item.Writer]++;
                    read++;
                }
            }
        });
        var pubs = Enumerable.Range(0, writers).Select(w => Task.Run(async () =>
        {
            for (int n = 0; n < perWriter; n++)
            {
                // A full queue refuses: the writer waits for room as a mirror's copy does.
                while (!q.TryWrite((w, n))) Assert.True(await q.WaitToWriteAsync(CancellationToken.None));
            }
        })).ToArray();
        await Task.WhenAll(pubs).WaitAsync(TimeSpan.FromSeconds(60));
        q.Complete();
        await worker.WaitAsync(TimeSpan.FromSeconds(60));
        Assert.Equal((long)writers * perWriter, read);
        Assert.All(next, n => Assert.Equal(perWriter, n));
    }
}
