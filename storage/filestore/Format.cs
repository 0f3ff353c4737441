using System.Buffers.Binary;
using System.Runtime.CompilerServices;
using NatsBroker.Contracts;

namespace NatsBroker.Storage.File;

/// <summary>
/// On-disk format, version 1 (all integers little-endian; see FORMAT.md).
/// <code>
/// store dir/
///   store.meta        text, first line "natsbroker-filestore", then "version=1", "stream=NAME"
///   msgs/NNNNNNNNNN.blk message blocks, NNNNNNNNNN = block id (decimal, 10 digits), ids increase
///   msgs/spare.tmp    at most one empty, preallocated file: the next block before it is named (deleted at open)
///   obs/NAME.cs       consumer state (ConsumerStateCodec), replaced atomically (write .tmp, rename)
///   idx/NNNNNNNNNN.idx  index snapshot of sealed block NNNNNNNNNN (optional; FORMAT.md "Index snapshots")
///
/// block header (40 bytes):
///   0  "NBMB"   4  u16 version   6  u16 header size (40)   8  u64 block id
///   16 u64 start sequence (the next sequence when the block was created)
///   24 u64 floor (every sequence below it was deleted when the block was created)
///   32 u32 flags (0)   36 u32 crc32c of bytes 0..36
///
/// record (36-byte header, body, 4-byte crc):
///   0  u32 record length (all of it, header and crc included)
///   4  u8 type: 1 message, 2 tombstone (seq = deleted sequence), 3 floor (seq = new first sequence;
///      everything below is deleted), 4 skip (seq = new last sequence), 5 erased message (body zeroed)
///   5  u8 flags (bit 0: ttl present, bit 1: batch continues: this message is part of an atomic batch whose
///      last message follows; a run of such records not ended by a message without the bit is discarded at open)
///      6  u16 subject length
///   8  u64 sequence   16 i64 timestamp (Unix ns)   24 i64 ttl (ns, 0 = none)   32 u32 headers length
///   36 subject | headers | payload
///   end-4 u32 crc32c of every byte of the record before it
/// </code>
/// Records are only appended; the one in-place rewrite is Erase, which turns a message into type 5 with a
/// zeroed body and a fresh crc. A block is deleted once none of its messages is live and it is not the newest.
/// </summary>
internal static class Format
{
    public const ushort Version = 1;
    public const int BlockHeaderSize = 40;
    public const int RecordHeaderSize = 36;
    public const int RecordOverhead = RecordHeaderSize + 4;
    public const int MaxRecord = 64 << 20;
    public const string MetaFile = "store.meta";
    public const string MetaMagic = "natsbroker-filestore";
    public const string BlockDir = "msgs";
    public const string ConsumerDir = "obs";
    /// <summary>Per-block index snapshots (FileStore.IndexSnapshots.cs); a store without it opens by scanning.</summary>
    public const string IndexDir = "idx";

    /// <summary>Record flag bits.</summary>
    public const byte FlagTtl = 1, FlagBatchContinues = 2;

    public const byte TypeMessage = 1, TypeTombstone = 2, TypeFloor = 3, TypeSkip = 4, TypeErased = 5;

    /// <summary>
    /// The next block's file, prepared (created, preallocated, never written) before it is needed and renamed to
    /// its block name when it becomes the newest block (FileStore.SpareBlock.cs). One found at open is deleted.
    /// </summary>
    public const string SpareBlockName = "spare.tmp";

    public static ReadOnlySpan<byte> BlockMagic => "NBMB"u8;

    /// <summary>Checks the lines of store.meta: magic first line and a supported version.</summary>
    public static (StoreStatus, string?) CheckMeta(string[] lines, string dir)
    {
        if (lines.Length == 0 || lines[0] != MetaMagic)
            return (StoreStatus.NotOurStore, $"'{dir}' has a {MetaFile} that is not a natsbroker file store");
        var ver = lines.FirstOrDefault(l => l.StartsWith("version=", StringComparison.Ordinal));
        if (ver is null || !int.TryParse(ver.AsSpan(8), System.Globalization.NumberStyles.Integer, System.Globalization.CultureInfo.InvariantCulture, out int v))
            return (StoreStatus.Corrupt, $"'{Path.Combine(dir, MetaFile)}' has no valid version line");
        if (v > Version)
            return (StoreStatus.UnsupportedVersion, $"'{dir}' is file store format version {v}; this engine reads versions up to {Version}");
        return (StoreStatus.Ok, null);
    }

    public static string BlockName(uint id) => id.ToString("D10", System.Globalization.CultureInfo.InvariantCulture) + ".blk";

    public static void WriteBlockHeader(Span<byte> dst, uint id, ulong startSeq, ulong floor)
    {
        BlockMagic.CopyTo(dst);
        BinaryPrimitives.WriteUInt16LittleEndian(dst[4..], Version);
        BinaryPrimitives.WriteUInt16LittleEndian(dst[6..], BlockHeaderSize);
        BinaryPrimitives.WriteUInt64LittleEndian(dst[8..], id);
        BinaryPrimitives.WriteUInt64LittleEndian(dst[16..], startSeq);
        BinaryPrimitives.WriteUInt64LittleEndian(dst[24..], floor);
        BinaryPrimitives.WriteUInt32LittleEndian(dst[32..], 0);
        BinaryPrimitives.WriteUInt32LittleEndian(dst[36..], Crc32C.Compute(dst[..36]));
    }

    public static int RecordLength(int subject, int headers, int payload) => RecordOverhead + subject + headers + payload;

    /// <summary>Encodes a record into <paramref name="dst"/> (exactly RecordLength bytes).</summary>
    public static void WriteRecord(Span<byte> dst, byte type, ulong seq, long ts, long ttl, ReadOnlySpan<byte> subject, ReadOnlySpan<byte> headers, ReadOnlySpan<byte> payload, byte flags = 0)
    {
        BinaryPrimitives.WriteUInt32LittleEndian(dst, (uint)dst.Length);
        dst[4] = type;
        dst[5] = (byte)((ttl != 0 ? FlagTtl : 0) | flags);
        BinaryPrimitives.WriteUInt16LittleEndian(dst[6..], (ushort)subject.Length);
        BinaryPrimitives.WriteUInt64LittleEndian(dst[8..], seq);
        BinaryPrimitives.WriteInt64LittleEndian(dst[16..], ts);
        BinaryPrimitives.WriteInt64LittleEndian(dst[24..], ttl);
        BinaryPrimitives.WriteUInt32LittleEndian(dst[32..], (uint)headers.Length);
        subject.CopyTo(dst[RecordHeaderSize..]);
        headers.CopyTo(dst[(RecordHeaderSize + subject.Length)..]);
        payload.CopyTo(dst[(RecordHeaderSize + subject.Length + headers.Length)..]);
        BinaryPrimitives.WriteUInt32LittleEndian(dst[^4..], Crc32C.Compute(dst[..^4]));
    }

    /// <summary>A decoded record header; the body is at [36, Length-4).</summary>
    public readonly struct Rec
    {
        public readonly int Length;
        public readonly byte Type;
        public readonly int SubjectLength;
        public readonly ulong Seq;
        public readonly long Timestamp;
        public readonly long Ttl;
        public readonly int HeadersLength;
        public readonly byte Flags;

        [MethodImpl(MethodImplOptions.AggressiveInlining)]
        public Rec(ReadOnlySpan<byte> s)
        {
            Flags = s[5];
            Length = (int)BinaryPrimitives.ReadUInt32LittleEndian(s);
            Type = s[4];
            SubjectLength = BinaryPrimitives.ReadUInt16LittleEndian(s[6..]);
            Seq = BinaryPrimitives.ReadUInt64LittleEndian(s[8..]);
            Timestamp = BinaryPrimitives.ReadInt64LittleEndian(s[16..]);
            Ttl = BinaryPrimitives.ReadInt64LittleEndian(s[24..]);
            HeadersLength = (int)BinaryPrimitives.ReadUInt32LittleEndian(s[32..]);
        }

        public int PayloadLength => Length - RecordOverhead - SubjectLength - HeadersLength;
        /// <summary>A message of an atomic batch that is not its last one.</summary>
        public bool BatchContinues => (Flags & FlagBatchContinues) != 0;
    }

    /// <summary>Checks framing and checksum of the record starting at <paramref name="s"/>[0].</summary>
    // Inlined into the read path (once per load of a record from a block loaded from disk).
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public static bool TryRecord(ReadOnlySpan<byte> s, out Rec rec)
    {
        rec = default;
        if (s.Length < RecordOverhead) return false;
        uint len = BinaryPrimitives.ReadUInt32LittleEndian(s);
        if (len < RecordOverhead || len > (uint)s.Length || len > MaxRecord) return false;
        byte type = s[4];
        if (type is < TypeMessage or > TypeErased) return false;
        var r = new Rec(s);
        if (r.HeadersLength < 0 || r.PayloadLength < 0) return false;
        if (Crc32C.Compute(s[..((int)len - 4)]) != BinaryPrimitives.ReadUInt32LittleEndian(s[((int)len - 4)..])) return false;
        rec = r;
        return true;
    }
}
