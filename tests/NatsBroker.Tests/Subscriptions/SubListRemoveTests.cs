using NatsBroker.Subscriptions;
using static NatsBroker.Tests.Subscriptions.SubListTestKit;

namespace NatsBroker.Tests.Subscriptions;

public class SubListRemoveTests
{
    [Fact]
    public void Removed_subscription_no_longer_matches()
    {
        var list = new SubList();
        var sub = Sub("foo.bar");
        Assert.True(list.Insert(sub));
        Assert.True(list.Remove(sub));
        Assert.Equal(0, list.Count);
        Assert.True(list.Match("foo.bar").IsEmpty);
        Assert.False(list.HasInterest(B("foo.bar")));
        Assert.Empty(list.Snapshot());
    }

    [Fact]
    public void Removing_unknown_or_already_removed_subscription_returns_false()
    {
        var list = new SubList();
        var sub = Sub("foo.bar");
        Assert.False(list.Remove(sub));
        Assert.True(list.Insert(sub));
        Assert.False(list.Remove(Sub("foo.bar"))); // same subject, different instance
        Assert.True(list.Remove(sub));
        long generation = list.Generation;
        Assert.False(list.Remove(sub));
        Assert.Equal(generation, list.Generation);
        Assert.False(list.Remove(Sub("foo.bar.baz"))); // path deeper than the trie
    }

    [Fact]
    public void Removing_one_of_two_identical_subject_subscriptions_keeps_the_other()
    {
        var list = new SubList();
        var a = Sub("foo.*");
        var b = Sub("foo.*");
        Assert.True(list.Insert(a));
        Assert.True(list.Insert(b));
        Assert.Equal(2, list.Match("foo.x").Plain.Length); // cached with both
        Assert.True(list.Remove(a));
        Assert.Equal([b], list.Match("foo.x").Plain);
        Assert.Equal(1, list.Count);
    }

    [Fact]
    public void Removing_queue_member_keeps_the_rest_of_the_group()
    {
        var list = new SubList();
        var a = Sub("foo", "q");
        var b = Sub("foo", "q");
        var c = Sub("foo", "r");
        foreach (var s in new[] { a, b, c }) Assert.True(list.Insert(s));
        Assert.Equal(2, list.Match("foo").Queues.Length);

        Assert.True(list.Remove(a));
        var (_, queues) = Normalize(list.Match("foo"));
        Assert.True(queues["q"].SetEquals([b]));
        Assert.True(list.Remove(c));
        (_, queues) = Normalize(list.Match("foo"));
        Assert.Equal(["q"], queues.Keys);
        Assert.False(list.Remove(c));
        Assert.True(list.Remove(b));
        Assert.True(list.Match("foo").IsEmpty);
    }

    [Fact]
    public void Pruned_branches_can_be_repopulated()
    {
        var list = new SubList();
        var deep = Sub("a.b.c.d");
        var wild = Sub("a.*.c.>");
        Assert.True(list.Insert(deep));
        Assert.True(list.Insert(wild));
        Assert.True(list.Remove(deep));
        Assert.True(list.Remove(wild));
        Assert.Empty(list.Snapshot());

        var again = Sub("a.b.c.d");
        Assert.True(list.Insert(again));
        Assert.Equal([again], list.Match("a.b.c.d").Plain);
        Assert.True(list.Match("a.b.c").IsEmpty);
    }

    [Fact]
    public void Removing_a_leaf_keeps_subscriptions_on_its_prefix()
    {
        var list = new SubList();
        var prefix = Sub("a.b");
        var leaf = Sub("a.b.c");
        Assert.True(list.Insert(prefix));
        Assert.True(list.Insert(leaf));
        Assert.True(list.Remove(leaf));
        Assert.Equal([prefix], list.Match("a.b").Plain);
        Assert.True(list.Remove(prefix));
        Assert.Empty(list.Snapshot());
    }

    [Fact]
    public void RemoveBatch_removes_all_with_one_generation_bump()
    {
        var list = new SubList();
        var mine = new List<Subscription> { Sub("foo"), Sub("foo.*"), Sub("foo.>"), Sub("bar", "q"), Sub(">") };
        var theirs = Sub("foo");
        foreach (var s in mine) Assert.True(list.Insert(s));
        Assert.True(list.Insert(theirs));

        Assert.Equal(3, list.Match("foo").Plain.Length); // foo, foo (theirs), >
        Assert.Equal(3, list.Match("foo.x").Plain.Length);
        Assert.Single(list.Match("bar").Queues);

        long generation = list.Generation;
        list.RemoveBatch(mine);
        Assert.Equal(generation + 1, list.Generation);
        Assert.Equal(1, list.Count);
        Assert.Equal([theirs], list.Match("foo").Plain);
        Assert.True(list.Match("foo.x").IsEmpty);
        Assert.True(list.Match("bar").IsEmpty);
        Assert.Equal([theirs], list.Snapshot());

        var stats = list.GetStats();
        Assert.Equal(6, stats.NumInserts);
        Assert.Equal(5, stats.NumRemoves);
    }

    [Fact]
    public void RemoveBatch_of_absent_subscriptions_changes_nothing()
    {
        var list = new SubList();
        Assert.True(list.Insert(Sub("foo")));
        long generation = list.Generation;
        list.RemoveBatch([Sub("foo"), Sub("bar"), Sub("foo..bar")]);
        list.RemoveBatch([]);
        Assert.Equal(generation, list.Generation);
        Assert.Equal(1, list.Count);
    }
}
