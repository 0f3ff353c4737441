using System.Buffers;

namespace NatsBroker.Tests.Parser;

/// <summary>Builds multi-segment sequences, and drives the parser the way a PipeReader would.</summary>
internal static class SegmentedInput
{
    private sealed class Segment : ReadOnlySequenceSegment<byte>
    {
        public Segment(ReadOnlyMemory<byte> memory) => Memory = memory;
        public Segment Append(ReadOnlyMemory<byte> memory)
        {
            var next = new Segment(memory) { RunningIndex = RunningIndex + Memory.Length };
            Next = next;
            return next;
        }
    }

    public static ReadOnlySequence<byte> Create(params byte[][] parts)
    {
        if (parts.Length == 1) return new ReadOnlySequence<byte>(parts[0]);
        var first = new Segment(parts[0]);
        var last = first;
        for (int i = 1; i < parts.Length; i++) last = last.Append(parts[i]);
        return new ReadOnlySequence<byte>(first, 0, last, last.Memory.Length);
    }

    /// <summary>Feeds input in chunks, keeping unconsumed bytes like a pipe does (as multi-segment buffers).</summary>
    public static void Feed(NatsBroker.Protocol.ProtocolParser parser, RecordingHandler handler, byte[] input, IEnumerable<int> chunkSizes)
    {
        var pending = new List<byte[]>();
        int offset = 0;
        foreach (var size in chunkSizes)
        {
            if (offset >= input.Length || handler.IsClosing) break;
            int n = Math.Min(size, input.Length - offset);
            pending.Add(input.AsSpan(offset, n).ToArray());
            offset += n;
            var seq = Create([.. pending]);
            var consumed = parser.Parse(seq, handler, out _);
            var rest = seq.Slice(consumed);
            pending.Clear();
            // Keep the remainder split into its original segments to exercise the multi-segment paths.
            foreach (var mem in rest) if (!mem.IsEmpty) pending.Add(mem.ToArray());
        }
    }
}
