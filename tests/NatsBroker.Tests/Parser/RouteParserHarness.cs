using System.Buffers;
using System.Text;
using NatsBroker.Protocol;

namespace NatsBroker.Tests.Parser;

/// <summary>Drives a <see cref="RouteProtocolParser"/> whole, as one split sequence, or fed in chunks as a pipe would.</summary>
internal static class RouteParserHarness
{
    public const int MaxControlLine = 4096 * RouteProtocolParser.NonClientControlLineFactor;

    public static RouteRecordingHandler Whole(ConnectionKind kind, byte[] input, Action<RouteRecordingHandler>? setup = null, int maxControlLine = MaxControlLine)
    {
        var handler = New(kind, setup);
        var parser = new RouteProtocolParser(kind, maxControlLine);
        parser.Parse(new ReadOnlySequence<byte>(input), handler, out _);
        return handler;
    }

    /// <summary>One parse of a two-segment sequence split at <paramref name="at"/>, then (what a pipe does) a parse
    /// of the first part alone followed by one of the rest with the unconsumed bytes kept.</summary>
    public static (List<string> Segmented, List<string> Fed) SplitAt(ConnectionKind kind, byte[] input, int at,
        Action<RouteRecordingHandler>? setup = null, int maxControlLine = MaxControlLine)
    {
        var h1 = New(kind, setup);
        new RouteProtocolParser(kind, maxControlLine).Parse(SegmentedInput.Create(input[..at], input[at..]), h1, out _);
        var h2 = New(kind, setup);
        Feed(new RouteProtocolParser(kind, maxControlLine), h2, input, [at, input.Length]);
        return (h1.Events, h2.Events);
    }

    public static void Feed(RouteProtocolParser parser, RouteRecordingHandler handler, byte[] input, IEnumerable<int> chunkSizes)
    {
        var pending = new List<byte[]>();
        int offset = 0;
        foreach (var size in chunkSizes)
        {
            if (offset >= input.Length || handler.IsClosing) break;
            int n = Math.Min(size, input.Length - offset);
            if (n > 0) pending.Add(input.AsSpan(offset, n).ToArray());
            offset += n;
            if (pending.Count == 0) continue;
            var seq = SegmentedInput.Create([.. pending]);
            var consumed = parser.Parse(seq, handler, out _);
            var rest = seq.Slice(consumed);
            pending.Clear();
            foreach (var mem in rest) if (!mem.IsEmpty) pending.Add(mem.ToArray());
        }
    }

    public static void AssertSameAtEverySplit(ConnectionKind kind, byte[] input, List<string> expected,
        Action<RouteRecordingHandler>? setup = null, int stride = 1, int maxControlLine = MaxControlLine)
    {
        for (int at = 0; at <= input.Length; at += at < 2048 ? 1 : stride)
        {
            var (segmented, fed) = SplitAt(kind, input, at, setup, maxControlLine);
            Assert.True(expected.SequenceEqual(segmented), $"split sequence at {at}: {Diff(expected, segmented)}");
            Assert.True(expected.SequenceEqual(fed), $"fed in two reads at {at}: {Diff(expected, fed)}");
        }
    }

    public static byte[] B(string s) => Encoding.ASCII.GetBytes(s);

    private static RouteRecordingHandler New(ConnectionKind kind, Action<RouteRecordingHandler>? setup)
    {
        var handler = new RouteRecordingHandler(kind);
        setup?.Invoke(handler);
        return handler;
    }

    private static string Diff(List<string> expected, List<string> actual)
    {
        int i = 0;
        while (i < expected.Count && i < actual.Count && expected[i] == actual[i]) i++;
        return $"first difference at event {i}: expected '{(i < expected.Count ? expected[i] : "<end>")}' got '{(i < actual.Count ? actual[i] : "<end>")}'";
    }
}
