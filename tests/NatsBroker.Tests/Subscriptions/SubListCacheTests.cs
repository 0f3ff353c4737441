using NatsBroker.Subscriptions;
using static NatsBroker.Tests.Subscriptions.SubListTestKit;

namespace NatsBroker.Tests.Subscriptions;

public class SubListCacheTests
{
    [Fact]
    public void Repeated_match_returns_the_cached_instance()
    {
        var list = new SubList();
        Assert.True(list.Insert(Sub("foo.*")));
        var first = list.Match("foo.bar");
        Assert.Same(first, list.Match("foo.bar"));
        Assert.Same(SubListResult.Empty, list.Match("nobody"));
        Assert.Equal(2, list.GetStats().NumCache); // empty results are cached too
    }

    [Fact]
    public void Inserting_wildcard_updates_cached_literal_results()
    {
        var list = new SubList();
        var literal = Sub("foo.bar");
        Assert.True(list.Insert(literal));
        Assert.Equal([literal], list.Match("foo.bar").Plain);
        Assert.True(list.Match("foo.baz").IsEmpty);
        Assert.True(list.Match("other").IsEmpty);

        var pwc = Sub("foo.*");
        Assert.True(list.Insert(pwc));
        Assert.Equal(new HashSet<Subscription> { literal, pwc }, new HashSet<Subscription>(list.Match("foo.bar").Plain));
        Assert.Equal([pwc], list.Match("foo.baz").Plain);
        Assert.True(list.Match("other").IsEmpty);

        var fwc = Sub(">", "q");
        Assert.True(list.Insert(fwc));
        Assert.Equal([fwc], list.Match("other").Queues.Single());
        Assert.Equal([fwc], list.Match("foo.bar").Queues.Single());
        Assert.Equal(2, list.Match("foo.bar").Plain.Length);
    }

    [Fact]
    public void Inserting_queue_member_extends_cached_group()
    {
        var list = new SubList();
        var a = Sub("foo.*", "q");
        Assert.True(list.Insert(a));
        Assert.Single(list.Match("foo.bar").Queues);
        var b = Sub("foo.bar", "q");
        var c = Sub("foo.bar", "r");
        Assert.True(list.Insert(b));
        Assert.True(list.Insert(c));
        var (_, queues) = Normalize(list.Match("foo.bar"));
        Assert.True(queues["q"].SetEquals([a, b]));
        Assert.True(queues["r"].SetEquals([c]));
    }

    [Fact]
    public void Inserting_literal_updates_its_cached_entry()
    {
        var list = new SubList();
        Assert.True(list.Match("foo").IsEmpty);
        var sub = Sub("foo");
        Assert.True(list.Insert(sub));
        Assert.Equal([sub], list.Match("foo").Plain);
    }

    [Fact]
    public void Removing_wildcard_invalidates_cached_literal_results()
    {
        var list = new SubList();
        var literal = Sub("foo.bar");
        var pwc = Sub("foo.*");
        var fwc = Sub("foo.>");
        foreach (var s in new[] { literal, pwc, fwc }) Assert.True(list.Insert(s));
        Assert.Equal(3, list.Match("foo.bar").Plain.Length);
        Assert.Equal(2, list.Match("foo.baz").Plain.Length);
        Assert.Single(list.Match("foo.baz.qux").Plain);

        Assert.True(list.Remove(pwc));
        Assert.Equal(new HashSet<Subscription> { literal, fwc }, new HashSet<Subscription>(list.Match("foo.bar").Plain));
        Assert.Equal([fwc], list.Match("foo.baz").Plain);

        Assert.True(list.Remove(fwc));
        Assert.Equal([literal], list.Match("foo.bar").Plain);
        Assert.True(list.Match("foo.baz").IsEmpty);
        Assert.True(list.Match("foo.baz.qux").IsEmpty);
    }

    [Fact]
    public void Removing_literal_invalidates_its_cached_entry_only()
    {
        var list = new SubList();
        var a = Sub("foo");
        var b = Sub("bar");
        Assert.True(list.Insert(a));
        Assert.True(list.Insert(b));
        list.Match("foo");
        var barResult = list.Match("bar");
        Assert.True(list.Remove(a));
        Assert.True(list.Match("foo").IsEmpty);
        Assert.Same(barResult, list.Match("bar"));
    }

    [Fact]
    public void Generation_increments_on_every_insert_and_remove()
    {
        var list = new SubList();
        Assert.Equal(0, list.Generation);
        var a = Sub("a");
        Assert.True(list.Insert(a));
        Assert.Equal(1, list.Generation);
        Assert.True(list.Insert(Sub("b.*")));
        Assert.Equal(2, list.Generation);
        list.Match("a");
        Assert.Equal(2, list.Generation); // matching never bumps
        Assert.True(list.Remove(a));
        Assert.Equal(3, list.Generation);
    }

    [Fact]
    public void Cache_is_bounded_by_sweeping()
    {
        var list = new SubList();
        Assert.True(list.Insert(Sub("s.>")));
        for (int i = 0; i < SubList.CacheMax * 3; i++)
        {
            list.Match($"s.{i}");
            Assert.True(list.GetStats().NumCache <= SubList.CacheMax, "cache exceeded its bound");
        }
        // Swept entries are recomputed correctly.
        Assert.Single(list.Match("s.0").Plain);
        Assert.Single(list.Match($"s.{SubList.CacheMax * 3 - 1}").Plain);
    }

    [Fact]
    public void Stats_follow_nats_subsz_meaning()
    {
        var list = new SubList();
        var subs = new[] { Sub("foo"), Sub("foo"), Sub("foo", "q"), Sub("foo", "q"), Sub("bar"), Sub("baz.*") };
        foreach (var s in subs) Assert.True(list.Insert(s));
        Assert.True(list.Remove(subs[5]));

        list.Match("foo");      // miss, fan-out 3 (2 plain + 1 group)
        list.Match("foo");      // hit
        list.Match("bar");      // miss, fan-out 1
        list.Match("bar");      // hit
        list.Match("none");     // miss, fan-out 0

        var stats = list.GetStats();
        Assert.Equal(5, stats.NumSubscriptions);
        Assert.Equal(6, stats.NumInserts);
        Assert.Equal(1, stats.NumRemoves);
        Assert.Equal(5, stats.NumMatches);
        Assert.Equal(2.0 / 5, stats.CacheHitRate, 6);
        Assert.Equal(3, stats.NumCache);
        Assert.Equal(3, stats.MaxFanout);
        Assert.Equal(4.0 / 3, stats.AvgFanout, 6);

        var json = System.Text.Json.JsonSerializer.Serialize(stats);
        Assert.Contains("\"num_subscriptions\":5", json, StringComparison.Ordinal);
        Assert.Contains("\"cache_hit_rate\"", json, StringComparison.Ordinal);
        Assert.Contains("\"max_fanout\":3", json, StringComparison.Ordinal);
    }

    [Fact]
    public void Stats_of_empty_list_are_zero()
    {
        var stats = new SubList().GetStats();
        Assert.Equal(0, stats.NumMatches);
        Assert.Equal(0, stats.CacheHitRate);
        Assert.Equal(0, stats.AvgFanout);
        Assert.Equal(0, stats.MaxFanout);
    }
}
