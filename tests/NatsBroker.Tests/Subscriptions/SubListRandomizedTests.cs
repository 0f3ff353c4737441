using NatsBroker.Subscriptions;
using static NatsBroker.Tests.Subscriptions.SubListTestKit;

namespace NatsBroker.Tests.Subscriptions;

/// <summary>
/// The trie (and its cache patching/invalidation) against a brute-force oracle built on Subject.Matches. A small
/// token alphabet makes overlaps between wildcards, literals and queue groups frequent.
/// </summary>
public class SubListRandomizedTests
{
    private static readonly string[] Tokens = ["a", "b", "c", "d", "foo", "b*"];
    private static readonly string[] QueueNames = ["q1", "q2", "q3"];

    private static string RandomPattern(Random rng)
    {
        int length = rng.Next(1, 5);
        var tokens = new string[length];
        for (int i = 0; i < length; i++)
        {
            int roll = rng.Next(10);
            tokens[i] = roll switch
            {
                0 or 1 => "*",
                2 when i == length - 1 => ">",
                _ => Tokens[rng.Next(Tokens.Length)],
            };
        }
        return string.Join('.', tokens);
    }

    private static string RandomLiteral(Random rng)
    {
        int length = rng.Next(1, 6);
        var tokens = new string[length];
        for (int i = 0; i < length; i++) tokens[i] = Tokens[rng.Next(Tokens.Length)];
        return string.Join('.', tokens);
    }

    [Theory]
    [InlineData(1)]
    [InlineData(2)]
    [InlineData(3)]
    public void Matches_agree_with_brute_force_through_inserts_and_removes(int seed)
    {
        var rng = new Random(seed);
        var list = new SubList();
        var live = new List<Subscription>();
        var l1 = new SubjectResultCache();
        byte[][] subjects = [.. Enumerable.Range(0, 3_000).Select(_ => B(RandomLiteral(rng)))];

        void AddRandom(int n)
        {
            for (int i = 0; i < n; i++)
            {
                var sub = Sub(RandomPattern(rng), rng.Next(4) == 0 ? QueueNames[rng.Next(QueueNames.Length)] : null);
                Assert.True(list.Insert(sub));
                live.Add(sub);
            }
        }

        void CheckAll()
        {
            Assert.Equal(live.Count, list.Count);
            foreach (var subject in subjects)
            {
                AssertMatchesOracle(list, live, subject);
                Assert.Equal(list.Match(subject).Fanout, list.Match(subject, l1).Fanout);
                Assert.Equal(!list.Match(subject).IsEmpty, list.HasInterest(subject));
            }
        }

        AddRandom(500);
        CheckAll(); // fills the cache

        AddRandom(200); // patches cached results in place
        CheckAll();

        var victims = live.Where(_ => rng.Next(3) == 0).ToList();
        foreach (var victim in victims.Take(victims.Count / 2))
        {
            Assert.True(list.Remove(victim));
            live.Remove(victim);
        }
        list.RemoveBatch(victims.Skip(victims.Count / 2).ToList());
        live.RemoveAll(victims.Contains);
        CheckAll(); // cached results invalidated by removal

        Assert.True(new HashSet<Subscription>(live).SetEquals(list.Snapshot()));
        list.RemoveBatch(live);
        Assert.Equal(0, list.Count);
        Assert.Empty(list.Snapshot());
        Assert.All(subjects, s => Assert.True(list.Match(s).IsEmpty));
    }
}
