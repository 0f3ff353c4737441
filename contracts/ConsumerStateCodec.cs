using System.Buffers.Binary;
using System.Runtime.CompilerServices;

namespace NatsBroker.Contracts;

/// <summary>
/// Binary encoding of a <see cref="ConsumerState"/>, used by the file engine's consumer files and by snapshots.
/// Layout (little-endian): "NBCS" u16 version=1, u16 reserved, u64 delivered.consumer, u64 delivered.stream,
/// u64 ackfloor.consumer, u64 ackfloor.stream, u32 pendingCount, pendingCount x (u64 streamSeq, u64 consumerSeq,
/// i64 timestamp), u32 redeliveredCount, redeliveredCount x (u64 streamSeq, u64 count), u32 crc32c of all before.
/// </summary>
public static class ConsumerStateCodec
{
    public const ushort Version = 1;
    private static ReadOnlySpan<byte> Magic => "NBCS"u8;

    public static byte[] Encode(ConsumerState state)
    {
        int size = 4 + 4 + 32 + 4 + (state.Pending.Count * 24) + 4 + (state.Redelivered.Count * 16) + 4;
        var buf = new byte[size];
        var s = buf.AsSpan();
        Magic.CopyTo(s);
        BinaryPrimitives.WriteUInt16LittleEndian(s[4..], Version);
        int o = 8;
        BinaryPrimitives.WriteUInt64LittleEndian(s[o..], state.Delivered.Consumer); o += 8;
        BinaryPrimitives.WriteUInt64LittleEndian(s[o..], state.Delivered.Stream); o += 8;
        BinaryPrimitives.WriteUInt64LittleEndian(s[o..], state.AckFloor.Consumer); o += 8;
        BinaryPrimitives.WriteUInt64LittleEndian(s[o..], state.AckFloor.Stream); o += 8;
        BinaryPrimitives.WriteUInt32LittleEndian(s[o..], (uint)state.Pending.Count); o += 4;
        foreach (var kv in state.Pending)
        {
            BinaryPrimitives.WriteUInt64LittleEndian(s[o..], kv.Key); o += 8;
            BinaryPrimitives.WriteUInt64LittleEndian(s[o..], kv.Value.ConsumerSequence); o += 8;
            BinaryPrimitives.WriteInt64LittleEndian(s[o..], kv.Value.Timestamp); o += 8;
        }
        BinaryPrimitives.WriteUInt32LittleEndian(s[o..], (uint)state.Redelivered.Count); o += 4;
        foreach (var kv in state.Redelivered)
        {
            BinaryPrimitives.WriteUInt64LittleEndian(s[o..], kv.Key); o += 8;
            BinaryPrimitives.WriteUInt64LittleEndian(s[o..], kv.Value); o += 8;
        }
        BinaryPrimitives.WriteUInt32LittleEndian(s[o..], Crc32C.Compute(s[..o]));
        return buf;
    }

    public static StoreStatus Decode(ReadOnlySpan<byte> s, ConsumerState into, out string? error)
    {
        error = null;
        if (s.Length < 48 || !s[..4].SequenceEqual(Magic))
        {
            error = "not a consumer state (bad magic or too short)";
            return StoreStatus.Corrupt;
        }
        ushort version = BinaryPrimitives.ReadUInt16LittleEndian(s[4..]);
        if (version > Version)
        {
            error = $"consumer state format version {version} is newer than supported {Version}";
            return StoreStatus.UnsupportedVersion;
        }
        if (Crc32C.Compute(s[..^4]) != BinaryPrimitives.ReadUInt32LittleEndian(s[^4..]))
        {
            error = "consumer state checksum mismatch";
            return StoreStatus.Corrupt;
        }
        int o = 8;
        into.Delivered = new(BinaryPrimitives.ReadUInt64LittleEndian(s[o..]), BinaryPrimitives.ReadUInt64LittleEndian(s[(o + 8)..])); o += 16;
        into.AckFloor = new(BinaryPrimitives.ReadUInt64LittleEndian(s[o..]), BinaryPrimitives.ReadUInt64LittleEndian(s[(o + 8)..])); o += 16;
        into.Pending.Clear();
        into.Redelivered.Clear();
        uint np = BinaryPrimitives.ReadUInt32LittleEndian(s[o..]); o += 4;
        if ((long)np * 24 > s.Length - o - 8) { error = "consumer state truncated"; return StoreStatus.Corrupt; }
        for (uint i = 0; i < np; i++)
        {
            into.Pending[BinaryPrimitives.ReadUInt64LittleEndian(s[o..])] =
                new(BinaryPrimitives.ReadUInt64LittleEndian(s[(o + 8)..]), BinaryPrimitives.ReadInt64LittleEndian(s[(o + 16)..]));
            o += 24;
        }
        uint nr = BinaryPrimitives.ReadUInt32LittleEndian(s[o..]); o += 4;
        if ((long)nr * 16 > s.Length - o - 4) { error = "consumer state truncated"; return StoreStatus.Corrupt; }
        for (uint i = 0; i < nr; i++)
        {
            into.Redelivered[BinaryPrimitives.ReadUInt64LittleEndian(s[o..])] = BinaryPrimitives.ReadUInt64LittleEndian(s[(o + 8)..]);
            o += 16;
        }
        return StoreStatus.Ok;
    }

    /// <summary>Applies a delivery to a state (shared semantics for every engine).</summary>
    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    public static void ApplyDelivered(ConsumerState st, ulong dseq, ulong sseq, ulong deliveries, long ts)
    {
        if (deliveries > 1)
        {
            st.Redelivered[sseq] = deliveries - 1;
            if (st.Pending.TryGetValue(sseq, out var p)) st.Pending[sseq] = new(p.ConsumerSequence, ts);
            else if (sseq > st.AckFloor.Stream) st.Pending[sseq] = new(dseq, ts);
        }
        else if (sseq > st.AckFloor.Stream)
        {
            st.Pending[sseq] = new(dseq, ts);
        }
        if (dseq > st.Delivered.Consumer) st.Delivered = new(dseq, Math.Max(sseq, st.Delivered.Stream));
        else if (sseq > st.Delivered.Stream) st.Delivered = st.Delivered with { Stream = sseq };
    }

    /// <summary>
    /// Applies an ack: removes the pending entry and moves the ack floor up to just below the lowest message
    /// still pending. The walk starts at the old floor, which only rises, so acks cost amortized O(1).
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    public static void ApplyAcked(ConsumerState st, ulong dseq, ulong sseq)
    {
        _ = dseq;
        st.Pending.Remove(sseq);
        st.Redelivered.Remove(sseq);
        if (st.Pending.Count == 0)
        {
            st.AckFloor = st.Delivered;
            return;
        }
        if (sseq <= st.AckFloor.Stream) return;
        ulong q = st.AckFloor.Stream + 1;
        while (q <= st.Delivered.Stream && !st.Pending.ContainsKey(q)) q++;
        if (q > st.Delivered.Stream) st.AckFloor = st.Delivered;
        else if (q - 1 > st.AckFloor.Stream) st.AckFloor = new SequencePair(st.Pending[q].ConsumerSequence - 1, q - 1);
    }
}
