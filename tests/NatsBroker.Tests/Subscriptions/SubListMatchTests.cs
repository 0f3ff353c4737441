using NatsBroker.Subscriptions;
using static NatsBroker.Tests.Subscriptions.SubListTestKit;

namespace NatsBroker.Tests.Subscriptions;

public class SubListMatchTests
{
    [Fact]
    public void Empty_list_matches_nothing()
    {
        var list = new SubList();
        var result = list.Match("foo");
        Assert.Same(SubListResult.Empty, result);
        Assert.True(result.IsEmpty);
        Assert.Equal(0, list.Count);
    }

    [Fact]
    public void Literal_subject_matches_only_itself()
    {
        var list = new SubList();
        var sub = Sub("foo.bar");
        Assert.True(list.Insert(sub));
        Assert.Equal(1, list.Count);

        Assert.Equal([sub], list.Match("foo.bar").Plain);
        Assert.Empty(list.Match("foo").Plain);
        Assert.Empty(list.Match("foo.bar.baz").Plain);
        Assert.Empty(list.Match("foo.baz").Plain);
        Assert.Empty(list.Match("bar").Plain);
    }

    [Theory]
    [InlineData("foo.*", "foo.bar", true)]
    [InlineData("foo.*", "foo", false)]
    [InlineData("foo.*", "foo.bar.baz", false)]
    [InlineData("*.bar", "foo.bar", true)]
    [InlineData("*", "foo", true)]
    [InlineData("*", "foo.bar", false)]
    [InlineData("foo.*.baz", "foo.bar.baz", true)]
    [InlineData("foo.*.baz", "foo.bar.qux", false)]
    [InlineData("*.*", "a.b", true)]
    [InlineData("*.*", "a", false)]
    public void Partial_wildcard_matches_exactly_one_token(string pattern, string subject, bool expected)
    {
        var list = new SubList();
        var sub = Sub(pattern);
        Assert.True(list.Insert(sub));
        Assert.Equal(expected, list.Match(subject).Plain.Contains(sub));
        Assert.Equal(expected, list.HasInterest(B(subject)));
    }

    [Theory]
    [InlineData("foo.>", "foo.bar", true)]
    [InlineData("foo.>", "foo.bar.baz.qux", true)]
    [InlineData("foo.>", "foo", false)]
    [InlineData(">", "foo", true)]
    [InlineData(">", "foo.bar.baz", true)]
    [InlineData("foo.bar.>", "foo.bar", false)]
    [InlineData("foo.bar.>", "foo.baz.qux", false)]
    public void Full_wildcard_matches_one_or_more_trailing_tokens(string pattern, string subject, bool expected)
    {
        var list = new SubList();
        var sub = Sub(pattern);
        Assert.True(list.Insert(sub));
        Assert.Equal(expected, list.Match(subject).Plain.Contains(sub));
        Assert.Equal(expected, list.HasInterest(B(subject)));
    }

    [Fact]
    public void Mixed_literal_and_wildcard_subscriptions_all_match()
    {
        var list = new SubList();
        var literal = Sub("foo.bar.baz");
        var pwcMiddle = Sub("foo.*.baz");
        var pwcLast = Sub("foo.bar.*");
        var pwcBoth = Sub("*.*.baz");
        var fwc = Sub("foo.>");
        var fwcRoot = Sub(">");
        var other = Sub("foo.bar.qux");
        var mixed = Sub("*.bar.>");
        foreach (var s in new[] { literal, pwcMiddle, pwcLast, pwcBoth, fwc, fwcRoot, other, mixed }) Assert.True(list.Insert(s));

        var result = list.Match("foo.bar.baz");
        Assert.Equal(
            new HashSet<Subscription> { literal, pwcMiddle, pwcLast, pwcBoth, fwc, fwcRoot, mixed },
            new HashSet<Subscription>(result.Plain));
        Assert.Equal(7, result.Plain.Length);
        Assert.Empty(result.Queues);

        Assert.Equal(new HashSet<Subscription> { fwcRoot }, new HashSet<Subscription>(list.Match("foo").Plain));
        Assert.Equal(new HashSet<Subscription> { fwc, fwcRoot, mixed }, new HashSet<Subscription>(list.Match("foo.bar.x.y").Plain));
    }

    [Fact]
    public void Tokens_that_merely_contain_wildcard_characters_are_literal()
    {
        var list = new SubList();
        var star = Sub("foo.b*");
        var gt = Sub("foo.>x");
        Assert.True(list.Insert(star));
        Assert.True(list.Insert(gt));
        Assert.Empty(list.Match("foo.bar").Plain);
        Assert.Equal([star], list.Match("foo.b*").Plain);
        Assert.Equal([gt], list.Match("foo.>x").Plain);
    }

    [Fact]
    public void Queue_subscriptions_are_grouped_per_queue_name_across_nodes()
    {
        var list = new SubList();
        var q1a = Sub("foo.bar", "q1");
        var q1b = Sub("foo.*", "q1");
        var q1c = Sub("foo.>", "q1");
        var q2a = Sub("foo.bar", "q2");
        var q2b = Sub("*.bar", "q2");
        var plain = Sub("foo.bar");
        var q3Elsewhere = Sub("baz", "q3");
        foreach (var s in new[] { q1a, q1b, q1c, q2a, q2b, plain, q3Elsewhere }) Assert.True(list.Insert(s));

        var (plainSet, queues) = Normalize(list.Match("foo.bar"));
        Assert.Equal([plain], plainSet);
        Assert.Equal(2, queues.Count);
        Assert.True(queues["q1"].SetEquals([q1a, q1b, q1c]));
        Assert.True(queues["q2"].SetEquals([q2a, q2b]));
        Assert.Equal(3, list.Match("foo.bar").Fanout); // 1 plain + 2 groups
    }

    [Fact]
    public void Two_subscriptions_with_identical_subject_both_match()
    {
        var list = new SubList();
        var a = Sub("foo");
        var b = Sub("foo");
        Assert.True(list.Insert(a));
        Assert.True(list.Insert(b));
        Assert.Equal(2, list.Count);
        Assert.Equal(new HashSet<Subscription> { a, b }, new HashSet<Subscription>(list.Match("foo").Plain));
    }

    [Fact]
    public void Inserting_the_same_instance_twice_is_a_no_op()
    {
        var list = new SubList();
        var a = Sub("foo");
        Assert.True(list.Insert(a));
        long generation = list.Generation;
        Assert.True(list.Insert(a));
        Assert.Equal(1, list.Count);
        Assert.Equal(generation, list.Generation);
        Assert.Single(list.Match("foo").Plain);
    }

    [Theory]
    [InlineData("")]
    [InlineData(".")]
    [InlineData("foo.")]
    [InlineData(".foo")]
    [InlineData("foo..bar")]
    [InlineData("foo.>.bar")]
    [InlineData(">.foo")]
    [InlineData(">.>")]
    public void Invalid_subjects_are_rejected_without_side_effects(string subject)
    {
        var list = new SubList();
        Assert.False(list.Insert(Sub(subject)));
        Assert.Equal(0, list.Count);
        Assert.Equal(0, list.Generation);
        Assert.Empty(list.Snapshot());
        Assert.False(list.Remove(Sub(subject)));
    }

    [Theory]
    [InlineData("")]
    [InlineData("foo..bar")]
    [InlineData(".foo")]
    [InlineData("foo.")]
    public void Malformed_publish_subjects_match_nothing_and_are_not_cached(string subject)
    {
        var list = new SubList();
        Assert.True(list.Insert(Sub(">")));
        Assert.True(list.Match(subject).IsEmpty);
        Assert.False(list.HasInterest(B(subject)));
        Assert.Equal(0, list.GetStats().NumCache);
    }

    [Fact]
    public void HasInterest_does_not_populate_cache()
    {
        var list = new SubList();
        Assert.True(list.Insert(Sub("foo.*")));
        Assert.True(list.HasInterest(B("foo.bar")));
        Assert.False(list.HasInterest(B("foo")));
        Assert.False(list.HasInterest(B("foo.bar.baz")));
        Assert.Equal(0, list.GetStats().NumCache);

        list.Match("foo.bar");
        Assert.True(list.HasInterest(B("foo.bar"))); // answered from the cache
    }

    [Fact]
    public void HasInterest_ignores_intermediate_nodes_without_subscriptions()
    {
        var list = new SubList();
        Assert.True(list.Insert(Sub("foo.bar.baz")));
        Assert.True(list.Insert(Sub("*.x.y")));
        Assert.False(list.HasInterest(B("foo.bar")));
        Assert.False(list.HasInterest(B("foo")));
        Assert.True(list.HasInterest(B("foo.bar.baz")));
        Assert.True(list.HasInterest(B("q.x.y")));
    }

    [Fact]
    public void Snapshot_returns_every_subscription_once()
    {
        var list = new SubList();
        var subs = new[] { Sub("a"), Sub("a"), Sub("a.b"), Sub("a.*"), Sub("a.>"), Sub(">"), Sub("a.b", "q"), Sub("a.b", "q"), Sub("*.b", "r") };
        foreach (var s in subs) Assert.True(list.Insert(s));
        var snapshot = list.Snapshot().ToList();
        Assert.Equal(subs.Length, snapshot.Count);
        Assert.True(new HashSet<Subscription>(subs).SetEquals(snapshot));
    }
}
