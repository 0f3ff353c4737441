using NatsBroker.Subscriptions;
using static NatsBroker.Tests.Subscriptions.SubListTestKit;

namespace NatsBroker.Tests.Subscriptions;

public class SubjectResultCacheTests
{
    [Fact]
    public void Hit_at_same_generation_and_cleared_on_new_generation()
    {
        var l1 = new SubjectResultCache();
        var result = new SubListResult([Sub("foo")], []);
        Assert.False(l1.TryGet(B("foo"), 0, out _));
        l1.Add(B("foo"), result, 0);
        Assert.True(l1.TryGet(B("foo"), 0, out var hit));
        Assert.Same(result, hit);
        Assert.False(l1.TryGet(B("bar"), 0, out _));

        Assert.False(l1.TryGet(B("foo"), 1, out _));
        Assert.Equal(0, l1.Count);
        Assert.Equal(1, l1.Generation);
    }

    [Fact]
    public void Add_with_new_generation_drops_older_entries()
    {
        var l1 = new SubjectResultCache();
        l1.Add(B("a"), SubListResult.Empty, 5);
        l1.Add(B("b"), SubListResult.Empty, 6);
        Assert.Equal(1, l1.Count);
        Assert.False(l1.TryGet(B("a"), 6, out _));
        Assert.True(l1.TryGet(B("b"), 6, out _));
    }

    [Fact]
    public void Bounded_by_capacity_keeping_recent_entries()
    {
        var l1 = new SubjectResultCache(capacity: 8);
        for (int i = 0; i < 100; i++)
        {
            l1.Add(B($"s.{i}"), SubListResult.Empty, 0);
            Assert.True(l1.Count <= 8);
        }
        Assert.True(l1.TryGet(B("s.99"), 0, out _));
        l1.Add(B("s.99"), SubListResult.Empty, 0); // re-adding an existing key never evicts
        Assert.True(l1.TryGet(B("s.99"), 0, out _));
    }

    [Fact]
    public void Recent_entries_survive_a_rotation_and_every_hit_is_the_right_result()
    {
        var l1 = new SubjectResultCache(capacity: 8);
        var results = new SubListResult[6];
        for (int i = 0; i < results.Length; i++)
        {
            results[i] = new SubListResult([Sub($"s.{i}")], []);
            l1.Add(B($"s.{i}"), results[i], 0);
        }
        // The first four filled one half; s.4 and s.5 started the other: all six are still there.
        for (int i = 0; i < results.Length; i++)
        {
            Assert.True(l1.TryGet(B($"s.{i}"), 0, out var hit), $"s.{i}");
            Assert.Same(results[i], hit);
        }
        Assert.False(l1.TryGet(B("s.6"), 0, out _));
        Assert.False(l1.TryGet(B("s."), 0, out _));

        // Many keys through a small cache: never more than the capacity, never a wrong result.
        var many = new SubjectResultCache(capacity: 16);
        for (int i = 0; i < 1000; i++)
        {
            var r = new SubListResult([Sub($"k.{i}")], []);
            many.Add(B($"k.{i}"), r, 0);
            Assert.True(many.Count <= 16);
            Assert.True(many.TryGet(B($"k.{i}"), 0, out var got));
            Assert.Same(r, got);
            if (many.TryGet(B($"k.{i / 2}"), 0, out var older)) Assert.Equal($"k.{i / 2}", System.Text.Encoding.ASCII.GetString(older.Plain[0].Subject));
        }
    }

    [Fact]
    public void SubList_match_through_l1_sees_writes()
    {
        var list = new SubList();
        var l1 = new SubjectResultCache();
        var a = Sub("foo.*");
        Assert.True(list.Insert(a));
        Assert.Equal([a], list.Match(B("foo.x"), l1).Plain);
        Assert.Same(list.Match(B("foo.x"), l1), list.Match(B("foo.x"), l1));

        var b = Sub("foo.>");
        Assert.True(list.Insert(b));
        Assert.Equal(2, list.Match(B("foo.x"), l1).Plain.Length);
        Assert.True(list.Remove(a));
        Assert.Equal([b], list.Match(B("foo.x"), l1).Plain);
        list.RemoveBatch([b]);
        Assert.True(list.Match(B("foo.x"), l1).IsEmpty);
    }

    [Fact]
    public void L1_hits_are_not_counted_as_sublist_matches()
    {
        var list = new SubList();
        var l1 = new SubjectResultCache();
        Assert.True(list.Insert(Sub("foo")));
        for (int i = 0; i < 10; i++) list.Match(B("foo"), l1);
        Assert.Equal(1, list.GetStats().NumMatches);
    }
}
