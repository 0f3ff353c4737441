using NatsBroker.Contracts;
using static NatsBroker.Storage.Tests.U;

namespace NatsBroker.Storage.Tests.Faults;

/// <summary>
/// The workload the index-image suites share (SparseIndexImageTests, CompactImagePageTests): message q is on subject
/// "s.{q % 5}" with payload "p{q}". <see cref="AssertHolds"/> checks a store against the set of sequences still live:
/// every load, the forward walk, and the per-subject count and last message.
/// </summary>
internal static class FiveSubjectContent
{
    public static string Subject(ulong seq) => "s." + (seq % 5);
    public static string Payload(ulong seq) => "p" + seq;

    public static void AssertHolds(IStreamStore s, ulong n, SortedSet<ulong> live, string when)
    {
        var m = new StoredMessage();
        for (ulong q = 1; q <= n; q++)
        {
            var st = s.Load(q, m);
            if (!live.Contains(q))
            {
                Assert.True(st is StoreStatus.Deleted or StoreStatus.NotFound, $"{when}: removed {q} came back ({st})");
                continue;
            }
            Assert.True(st == StoreStatus.Ok, $"{when}: acknowledged {q} missing ({st}); report: {string.Join("; ", s.RecoveryReport)}");
            Assert.Equal(Payload(q), S(m.Payload));
            Assert.Equal(Subject(q), S(m.Subject));
        }
        var seen = new List<ulong>();
        for (ulong q = 1; s.LoadNext(default, q, m) == StoreStatus.Ok; q = m.Sequence + 1) seen.Add(m.Sequence);
        Assert.Equal(live, seen);
        for (int k = 0; k < 5; k++)
        {
            var mine = live.Where(q => q % 5 == (ulong)k).ToList();
            Assert.Equal((ulong)mine.Count, s.CountMatching(B("s." + k)));
            if (mine.Count == 0) continue;
            Assert.Equal(StoreStatus.Ok, s.LoadLast(B("s." + k), m));
            Assert.Equal(mine[^1], m.Sequence);
        }
        Assert.Equal((ulong)live.Count, s.GetState().Messages);
    }
}
