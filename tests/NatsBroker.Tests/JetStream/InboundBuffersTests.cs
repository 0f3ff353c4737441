using NatsBroker.JetStream;
using NatsBroker.Tests.Server;

namespace NatsBroker.Tests.JetStream;

/// <summary>
/// Ingest buffers are rented on publishers' threads and returned on the stream's worker: a buffer returned on one
/// thread must be the one the next rent on another thread gets (ArrayPool.Shared's per-thread caches did not give it
/// back, so nearly every rent allocated). Runs alone: in-process JetStream tests share the pool.
/// </summary>
[Collection(AllocationCollection.Name)]
public sealed class InboundBuffersTests
{
    [Fact]
    public async Task Buffers_returned_on_another_thread_are_rented_again_instead_of_allocated()
    {
        // A size class no other test uses (8 KiB), so the queue holds only this test's buffers.
        const int size = 5000, count = 64;
        var first = new byte[count][];
        for (int i = 0; i < count; i++) first[i] = InboundBuffers.Rent(size);
        Assert.All(first, b => Assert.Equal(8192, b.Length));

        // Returned on a thread-pool thread, as the ingest worker does.
        await Task.Run(() => { foreach (var b in first) InboundBuffers.Return(b); });

        var again = new HashSet<byte[]>(ReferenceEqualityComparer.Instance);
        for (int i = 0; i < count; i++) again.Add(InboundBuffers.Rent(size));
        Assert.True(again.SetEquals(first), $"{count - again.Intersect(first, ReferenceEqualityComparer.Instance).Count()} of {count} rents allocated a new buffer");
        foreach (var b in again) InboundBuffers.Return(b);
    }

    [Fact]
    public void Large_and_foreign_buffers_are_handled()
    {
        var large = InboundBuffers.Rent(200_000); // beyond the classes: the shared pool
        Assert.True(large.Length >= 200_000);
        InboundBuffers.Return(large);
        InboundBuffers.Return(new byte[1000]); // not a class size: left to the GC, no exception
        InboundBuffers.Return([]);
        Assert.Equal(64, InboundBuffers.Rent(1).Length);
    }
}
