using System.Diagnostics;
using NatsBroker.Subscriptions;
using static NatsBroker.Tests.Subscriptions.SubListTestKit;

namespace NatsBroker.Tests.Subscriptions;

/// <summary>
/// Readers match (shared cache and L1) while writers insert and remove subscriptions whose subjects overlap the
/// readers' subjects, so cache patching, invalidation, sweeping and miss-path caching all race. Bounded to ~1 s.
/// </summary>
public class SubListConcurrencyTests
{
    [Fact]
    public void Concurrent_insert_remove_and_match_stay_consistent()
    {
        var list = new SubList();
        var stable = Sub("load.>");
        var stableQueue = Sub("load.*.x", "workers");
        Assert.True(list.Insert(stable));
        Assert.True(list.Insert(stableQueue));

        // Enough distinct subjects to push the shared cache past CacheMax, so sweeps race too.
        byte[][] subjects = [.. Enumerable.Range(0, 1_500).Select(i => B($"load.{i % 40}.{(i % 3 == 0 ? "x" : i.ToString(System.Globalization.CultureInfo.InvariantCulture))}"))];
        var deadline = Stopwatch.StartNew();
        var runFor = TimeSpan.FromMilliseconds(1_000);
        var failures = new System.Collections.Concurrent.ConcurrentQueue<string>();

        void Reader(int id)
        {
            var l1 = new SubjectResultCache(64);
            int i = id;
            while (deadline.Elapsed < runFor && failures.IsEmpty)
            {
                var subject = subjects[i++ % subjects.Length];
                var shared = list.Match(subject);
                var local = list.Match(subject, l1);
                if (!shared.Plain.Contains(stable) || !local.Plain.Contains(stable)) failures.Enqueue("stable subscription missing");
                bool queueExpected = subject[^1] == (byte)'x' && subject[^2] == (byte)'.';
                if (queueExpected && !shared.Queues.Any(g => g.Contains(stableQueue))) failures.Enqueue("stable queue member missing");
            }
        }

        // Each writer checks its own writes are visible (linearizable) right after Insert/Remove return.
        void Writer(int id)
        {
            var rng = new Random(id);
            var mine = new List<Subscription>();
            while (deadline.Elapsed < runFor && failures.IsEmpty)
            {
                int n = rng.Next(40);
                string pattern = rng.Next(3) switch
                {
                    0 => $"load.{n}.*",
                    1 => $"load.{n}.>",
                    _ => $"load.{n}.x",
                };
                var sub = Sub(pattern, rng.Next(4) == 0 ? "workers" : null);
                Assert.True(list.Insert(sub));
                mine.Add(sub);
                var probe = B($"load.{n}.x");
                if (!Contains(list.Match(probe), sub)) failures.Enqueue($"own insert not visible: {pattern}");

                if (mine.Count > 20)
                {
                    var victim = mine[rng.Next(mine.Count)];
                    mine.Remove(victim);
                    Assert.True(list.Remove(victim));
                    var victimProbe = B(System.Text.Encoding.UTF8.GetString(victim.Subject).Replace("*", "x", StringComparison.Ordinal).Replace(">", "x", StringComparison.Ordinal));
                    if (Contains(list.Match(victimProbe), victim)) failures.Enqueue("removed subscription still matched");
                }
                if (rng.Next(50) == 0)
                {
                    list.RemoveBatch(mine);
                    mine.Clear();
                }
            }
            list.RemoveBatch(mine);
        }

        var threads = new[]
        {
            new Thread(() => Reader(0)), new Thread(() => Reader(1)), new Thread(() => Reader(2)),
            new Thread(() => Writer(10)), new Thread(() => Writer(11)),
        };
        foreach (var t in threads) t.Start();
        foreach (var t in threads) Assert.True(t.Join(TimeSpan.FromSeconds(5)));

        Assert.Empty(failures);
        // Writers removed everything they added: only the stable subs remain, and every cached result agrees.
        Assert.Equal(2, list.Count);
        var remaining = list.Snapshot().ToList();
        foreach (var subject in subjects) AssertMatchesOracle(list, remaining, subject);
        Assert.True(list.GetStats().NumCache <= SubList.CacheMax + 16);
    }

    private static bool Contains(SubListResult result, Subscription sub) =>
        result.Plain.Contains(sub) || result.Queues.Any(g => g.Contains(sub));
}
