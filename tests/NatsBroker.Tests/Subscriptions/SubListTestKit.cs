using System.Text;
using NatsBroker.Routing;
using NatsBroker.Subjects;
using NatsBroker.Subscriptions;

namespace NatsBroker.Tests.Subscriptions;

internal sealed class TestSubscriber : ISubscriber
{
    public static readonly TestSubscriber Instance = new();

    public DeliveryOutcome Deliver(Subscription sub, ref RoutedMessage msg, DeliveryBatch batch) => DeliveryOutcome.Delivered;
}

/// <summary>Builders and a brute-force oracle shared by the SubList tests.</summary>
internal static class SubListTestKit
{
    private static int s_sid;

    public static byte[] B(string s) => Encoding.UTF8.GetBytes(s);

    public static Subscription Sub(string subject, string? queue = null) =>
        new(B(subject), queue is null ? null : B(queue), B(Interlocked.Increment(ref s_sid).ToString(System.Globalization.CultureInfo.InvariantCulture)), TestSubscriber.Instance);

    public static SubListResult Match(this SubList list, string subject) => list.Match(B(subject));

    /// <summary>Result normalised for comparison: plain set plus queue name to member set.</summary>
    public static (HashSet<Subscription> Plain, Dictionary<string, HashSet<Subscription>> Queues) Normalize(SubListResult result)
    {
        var plain = new HashSet<Subscription>(result.Plain);
        Assert.Equal(result.Plain.Length, plain.Count); // no duplicates
        var queues = new Dictionary<string, HashSet<Subscription>>();
        foreach (var group in result.Queues)
        {
            Assert.NotEmpty(group);
            string name = Encoding.UTF8.GetString(group[0].Queue!);
            Assert.All(group, s => Assert.Equal(name, Encoding.UTF8.GetString(s.Queue!)));
            Assert.True(queues.TryAdd(name, [.. group]), $"queue group '{name}' appears twice");
            Assert.Equal(group.Length, queues[name].Count);
        }
        return (plain, queues);
    }

    /// <summary>What the trie must return, computed by testing every subscription with Subject.Matches.</summary>
    public static (HashSet<Subscription> Plain, Dictionary<string, HashSet<Subscription>> Queues) BruteForce(
        IEnumerable<Subscription> subs, byte[] subject)
    {
        var plain = new HashSet<Subscription>();
        var queues = new Dictionary<string, HashSet<Subscription>>();
        foreach (var sub in subs)
        {
            if (!Subject.Matches(sub.Subject, subject)) continue;
            if (sub.Queue is null)
            {
                plain.Add(sub);
                continue;
            }
            string name = Encoding.UTF8.GetString(sub.Queue);
            if (!queues.TryGetValue(name, out var set)) queues[name] = set = [];
            set.Add(sub);
        }
        return (plain, queues);
    }

    public static void AssertMatchesOracle(SubList list, IEnumerable<Subscription> subs, byte[] subject)
    {
        var expected = BruteForce(subs, subject);
        var actual = Normalize(list.Match(subject));
        string s = Encoding.UTF8.GetString(subject);
        Assert.True(expected.Plain.SetEquals(actual.Plain), $"plain mismatch for '{s}'");
        Assert.Equal(expected.Queues.Keys.Order(), actual.Queues.Keys.Order());
        foreach (var (name, members) in expected.Queues)
        {
            Assert.True(members.SetEquals(actual.Queues[name]), $"queue '{name}' mismatch for '{s}'");
        }
    }
}
