using NatsBroker.Subscriptions;
using static NatsBroker.Tests.Subscriptions.SubListTestKit;

namespace NatsBroker.Tests.Subscriptions;

/// <summary>
/// The publish path must not allocate once results are cached: neither the per-connection L1 hit nor the shared-cache
/// hit (ConcurrentDictionary span lookup + striped counters). Measured per thread, so parallel tests don't interfere.
/// </summary>
public class SubListAllocationTests
{
    private const int Iterations = 10_000;

    private static (SubList List, byte[][] Subjects) Populated()
    {
        var list = new SubList();
        foreach (var pattern in new[] { "orders.*", "orders.>", "orders.new", "metrics.>", "a.b.c.d", "*.b.*.d" })
        {
            Assert.True(list.Insert(Sub(pattern)));
            Assert.True(list.Insert(Sub(pattern, "workers")));
        }
        byte[][] subjects = [B("orders.new"), B("orders.old"), B("metrics.cpu.load"), B("a.b.c.d"), B("x.b.y.d"), B("nobody.home")];
        return (list, subjects);
    }

    [Fact]
    public void L1_hit_path_allocates_nothing()
    {
        var (list, subjects) = Populated();
        var l1 = new SubjectResultCache();
        for (int i = 0; i < 1_000; i++) list.Match(subjects[i % subjects.Length], l1); // warm-up: fill caches, JIT

        long before = GC.GetAllocatedBytesForCurrentThread();
        int fanout = 0;
        for (int i = 0; i < Iterations; i++) fanout += list.Match(subjects[i % subjects.Length], l1).Fanout;
        long allocated = GC.GetAllocatedBytesForCurrentThread() - before;

        Assert.True(fanout > 0);
        Assert.Equal(0, allocated);
    }

    [Fact]
    public void Shared_cache_hit_path_allocates_nothing()
    {
        var (list, subjects) = Populated();
        for (int i = 0; i < 1_000; i++) list.Match(subjects[i % subjects.Length]);

        long before = GC.GetAllocatedBytesForCurrentThread();
        int fanout = 0;
        for (int i = 0; i < Iterations; i++) fanout += list.Match(subjects[i % subjects.Length]).Fanout;
        long allocated = GC.GetAllocatedBytesForCurrentThread() - before;

        Assert.True(fanout > 0);
        Assert.Equal(0, allocated);
    }

    [Fact]
    public void HasInterest_allocates_nothing_cached_or_not()
    {
        var (list, subjects) = Populated();
        byte[] uncached = B("orders.uncached");
        for (int i = 0; i < 1_000; i++)
        {
            list.Match(subjects[i % subjects.Length]);
            list.HasInterest(uncached);
        }

        long before = GC.GetAllocatedBytesForCurrentThread();
        int interested = 0;
        for (int i = 0; i < Iterations; i++)
        {
            if (list.HasInterest(subjects[i % subjects.Length])) interested++;
            if (list.HasInterest(uncached)) interested++;
        }
        long allocated = GC.GetAllocatedBytesForCurrentThread() - before;

        Assert.True(interested > 0);
        Assert.Equal(0, allocated);
    }
}
