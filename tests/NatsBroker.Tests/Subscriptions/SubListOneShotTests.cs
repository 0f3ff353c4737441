using System.Text;
using NatsBroker.Subscriptions;
using static NatsBroker.Tests.Subscriptions.SubListTestKit;

namespace NatsBroker.Tests.Subscriptions;

/// <summary>
/// JetStream ack subjects ($JS.ACK.&lt;stream&gt;.&lt;consumer&gt;.&lt;5 numbers&gt;, one per delivered message) are
/// matched without the shared or the L1 cache, and a repeated match set reuses the thread's previous result.
/// </summary>
public class SubListOneShotTests
{
    private static byte[] Ack(string stream, string consumer, int seq) =>
        Encoding.ASCII.GetBytes($"$JS.ACK.{stream}.{consumer}.1.{seq}.{seq}.1764230000000000000.{100_000 - seq}");

    [Fact]
    public void Ack_subjects_go_into_neither_cache_and_do_not_push_out_cached_subjects()
    {
        var list = new SubList();
        var ack = Sub("$JS.ACK.ORDERS.>");
        var plain = Sub("orders.new");
        Assert.True(list.Insert(ack));
        Assert.True(list.Insert(plain));
        var l1 = new SubjectResultCache();
        var cached = list.Match(B("orders.new"), l1);
        long cacheBefore = list.GetStats().NumCache;

        for (int i = 1; i <= 5_000; i++)
        {
            var r = list.Match(Ack("ORDERS", "C", i), l1);
            Assert.Equal([ack], r.Plain);
            Assert.Empty(r.Queues);
        }

        Assert.Equal(cacheBefore, list.GetStats().NumCache);
        Assert.Equal(1, l1.Count);
        Assert.Same(cached, list.Match(B("orders.new"), l1));
        Assert.Same(cached, list.Match(B("orders.new")));
    }

    [Fact]
    public void Distinct_ack_subjects_with_the_same_subscribers_allocate_nothing()
    {
        var list = new SubList();
        Assert.True(list.Insert(Sub("$JS.ACK.ORDERS.>")));
        Assert.True(list.Insert(Sub("$JS.ACK.*.C.>", "audit")));
        var l1 = new SubjectResultCache();
        var subjects = Enumerable.Range(1, 2_000).Select(i => Ack("ORDERS", "C", i)).ToArray();
        for (int i = 0; i < 1_000; i++) list.Match(subjects[i], l1); // JIT, first result

        long before = GC.GetAllocatedBytesForCurrentThread();
        int fanout = 0;
        for (int i = 1_000; i < subjects.Length; i++) fanout += list.Match(subjects[i], l1).Fanout;
        long allocated = GC.GetAllocatedBytesForCurrentThread() - before;

        Assert.Equal(2 * 1_000, fanout);
        Assert.Equal(0, allocated);
    }

    [Fact]
    public void Results_follow_subscription_changes_and_differing_subjects()
    {
        var list = new SubList();
        var all = Sub("$JS.ACK.>");
        var orders = Sub("$JS.ACK.ORDERS.>");
        var q1 = Sub("$JS.ACK.ORDERS.*.>", "q");
        Assert.True(list.Insert(all));
        Assert.True(list.Insert(orders));
        var l1 = new SubjectResultCache();

        var first = list.Match(Ack("ORDERS", "C", 1), l1);
        Assert.Equal(new HashSet<Subscription> { all, orders }, Normalize(first).Plain);
        Assert.Empty(first.Queues);

        // Another stream: a different match set, so a different result.
        var other = list.Match(Ack("EVENTS", "C", 2), l1);
        Assert.Equal([all], other.Plain);

        // A new queue subscription is seen by the very next ack (no stale reuse), and its group is whole.
        Assert.True(list.Insert(q1));
        var withQueue = list.Match(Ack("ORDERS", "C", 3), l1);
        var (p, queues) = Normalize(withQueue);
        Assert.Equal(new HashSet<Subscription> { all, orders }, p);
        Assert.True(queues["q"].SetEquals([q1]));
        var q2 = Sub("$JS.ACK.ORDERS.C.>", "q");
        Assert.True(list.Insert(q2));
        Assert.True(Normalize(list.Match(Ack("ORDERS", "C", 4), l1)).Queues["q"].SetEquals([q1, q2]));

        // Removed subscriptions are gone at once, however often the same set was matched before.
        Assert.True(list.Remove(orders));
        Assert.True(list.Remove(q1));
        Assert.True(list.Remove(q2));
        Assert.Equal([all], list.Match(Ack("ORDERS", "C", 5), l1).Plain);
        Assert.Empty(list.Match(Ack("ORDERS", "C", 6)).Queues);
        Assert.True(list.Remove(all));
        Assert.True(list.Match(Ack("ORDERS", "C", 7), l1).IsEmpty);
    }

    [Fact]
    public async Task Concurrent_ack_matches_see_exactly_the_current_subscribers()
    {
        var list = new SubList();
        var stable = Sub("$JS.ACK.S.>");
        Assert.True(list.Insert(stable));
        using var stop = new CancellationTokenSource(TimeSpan.FromSeconds(1));
        var errors = 0;
        var readers = Enumerable.Range(0, 2).Select(t => Task.Run(() =>
        {
            var l1 = new SubjectResultCache();
            for (int i = 0; !stop.IsCancellationRequested; i++)
            {
                var r = list.Match(Ack("S", "C" + t, i), l1);
                // The stable subscription is always there; the churned one may or may not be.
                if (!r.Plain.Contains(stable) || r.Plain.Length is < 1 or > 2) Interlocked.Increment(ref errors);
            }
        })).ToArray();
        while (!stop.IsCancellationRequested)
        {
            var churn = Sub("$JS.ACK.S.*.>");
            Assert.True(list.Insert(churn));
            Assert.Contains(churn, list.Match(Ack("S", "C", 1)).Plain);
            Assert.True(list.Remove(churn));
            Assert.DoesNotContain(churn, list.Match(Ack("S", "C", 2)).Plain);
        }
        await Task.WhenAll(readers);
        Assert.Equal(0, errors);
    }
}
