using System.Buffers.Binary;
using System.Text.Json;
using NatsBroker.Contracts;
using NatsBroker.JetStream.Api;

namespace NatsBroker.JetStream.Snapshots;

/// <summary>
/// The stream snapshot format of this server (README.md "Snapshot format"), the same for every storage engine: a
/// snapshot of a memory stream restores into a file stream and back. Little-endian, inside S2 framing
/// (<see cref="S2Framing"/>):
/// <code>
/// header   : "NBJSSNAP", u16 version = 1, u16 flags (bit 0: consumers included)
/// record   : u8 kind, u32 bodyLength, body, u32 CRC-32C of kind + bodyLength + body
///   1 STREAM   : StreamMeta JSON (config, created)                                 once, first
///   2 CONSUMER : u32 metaLength, ConsumerMeta JSON, consumer state (ConsumerStateCodec) zero or more
///   3 RANGE    : u64 firstSeq, u64 lastSeq (the stream's sequences at the snapshot)  once
///   4 MESSAGE  : u64 seq, i64 timestamp (Unix ns), i64 ttl (ns), u32 subjectLength, u32 headersLength,
///                subject, headers, payload (the rest)                               ascending seq
///   255 END    : u64 messageCount, u64 messageBytes, u32 consumerCount               once, last
/// </code>
/// A snapshot without its END record, with a record whose checksum does not match, or with counts that differ from
/// what was read, is refused.
/// </summary>
internal static class SnapshotFormat
{
    public const ushort Version = 1;
    public const ushort FlagConsumers = 1;
    public const byte KindStream = 1, KindConsumer = 2, KindRange = 3, KindMessage = 4, KindEnd = 255;
    public const int HeaderSize = 12;
    public const int MessageFixed = 32;
    /// <summary>The largest record accepted: a message of up to 64 MiB (nats-server's max_payload ceiling) plus its subject and headers.</summary>
    public const int MaxRecord = 65 << 20;
    public static ReadOnlySpan<byte> Magic => "NBJSSNAP"u8;
}

/// <summary>Writes the records of <see cref="SnapshotFormat"/> to a stream (async; one reusable header buffer).</summary>
internal sealed class SnapshotWriter(Stream dst)
{
    private readonly byte[] _head = new byte[5 + SnapshotFormat.MessageFixed];
    private readonly byte[] _crc = new byte[4];

    public ValueTask WriteHeaderAsync(bool consumers, CancellationToken ct)
    {
        SnapshotFormat.Magic.CopyTo(_head);
        BinaryPrimitives.WriteUInt16LittleEndian(_head.AsSpan(8), SnapshotFormat.Version);
        BinaryPrimitives.WriteUInt16LittleEndian(_head.AsSpan(10), consumers ? SnapshotFormat.FlagConsumers : (ushort)0);
        return dst.WriteAsync(_head.AsMemory(0, SnapshotFormat.HeaderSize), ct);
    }

    public ValueTask WriteStreamAsync(StreamMeta meta, CancellationToken ct) =>
        WriteRecordAsync(SnapshotFormat.KindStream, 0, JsonSerializer.SerializeToUtf8Bytes(meta, JsJsonContext.Default.StreamMeta), ct);

    public async ValueTask WriteConsumerAsync(ConsumerMeta meta, ConsumerState state, CancellationToken ct)
    {
        var json = JsonSerializer.SerializeToUtf8Bytes(meta, JsJsonContext.Default.ConsumerMeta);
        var encoded = ConsumerStateCodec.Encode(state);
        var body = new byte[4 + json.Length + encoded.Length];
        BinaryPrimitives.WriteUInt32LittleEndian(body, (uint)json.Length);
        json.CopyTo(body, 4);
        encoded.CopyTo(body, 4 + json.Length);
        await WriteRecordAsync(SnapshotFormat.KindConsumer, 0, body, ct).ConfigureAwait(false);
    }

    public ValueTask WriteRangeAsync(ulong first, ulong last, CancellationToken ct)
    {
        BinaryPrimitives.WriteUInt64LittleEndian(_head.AsSpan(5), first);
        BinaryPrimitives.WriteUInt64LittleEndian(_head.AsSpan(13), last);
        return WriteRecordAsync(SnapshotFormat.KindRange, 16, default, ct);
    }

    public ValueTask WriteMessageAsync(StoredMessage msg, CancellationToken ct)
    {
        var h = _head.AsSpan(5);
        BinaryPrimitives.WriteUInt64LittleEndian(h, msg.Sequence);
        BinaryPrimitives.WriteInt64LittleEndian(h[8..], msg.Timestamp);
        BinaryPrimitives.WriteInt64LittleEndian(h[16..], msg.Ttl);
        BinaryPrimitives.WriteUInt32LittleEndian(h[24..], (uint)msg.SubjectLength);
        BinaryPrimitives.WriteUInt32LittleEndian(h[28..], (uint)msg.HeadersLength);
        return WriteRecordAsync(SnapshotFormat.KindMessage, SnapshotFormat.MessageFixed, msg.Buffer.AsMemory(0, (int)msg.ContentLength), ct);
    }

    public ValueTask WriteEndAsync(ulong messages, ulong bytes, uint consumers, CancellationToken ct)
    {
        BinaryPrimitives.WriteUInt64LittleEndian(_head.AsSpan(5), messages);
        BinaryPrimitives.WriteUInt64LittleEndian(_head.AsSpan(13), bytes);
        BinaryPrimitives.WriteUInt32LittleEndian(_head.AsSpan(21), consumers);
        return WriteRecordAsync(SnapshotFormat.KindEnd, 20, default, ct);
    }

    /// <summary>One record: kind, length, <paramref name="fixedLength"/> bytes already in _head[5..], then <paramref name="rest"/>, then the CRC.</summary>
    private async ValueTask WriteRecordAsync(byte kind, int fixedLength, ReadOnlyMemory<byte> rest, CancellationToken ct)
    {
        _head[0] = kind;
        BinaryPrimitives.WriteUInt32LittleEndian(_head.AsSpan(1), checked((uint)(fixedLength + rest.Length)));
        uint crc = Crc32C.Append(0xFFFFFFFFu, _head.AsSpan(0, 5 + fixedLength));
        crc = ~Crc32C.Append(crc, rest.Span);
        await dst.WriteAsync(_head.AsMemory(0, 5 + fixedLength), ct).ConfigureAwait(false);
        if (!rest.IsEmpty) await dst.WriteAsync(rest, ct).ConfigureAwait(false);
        BinaryPrimitives.WriteUInt32LittleEndian(_crc, crc);
        await dst.WriteAsync(_crc, ct).ConfigureAwait(false);
    }
}

/// <summary>
/// Reads the records of <see cref="SnapshotFormat"/> one at a time into a buffer that grows to the largest record
/// (bounded by <see cref="SnapshotFormat.MaxRecord"/>) and is reused, checking each record's CRC.
/// </summary>
internal sealed class SnapshotReader(Stream src)
{
    private readonly byte[] _head = new byte[5];
    private byte[] _body = new byte[4096];

    /// <summary>The kind of the record last read.</summary>
    public byte Kind { get; private set; }
    /// <summary>The body of the record last read (valid until the next read).</summary>
    public ReadOnlySpan<byte> Body => _body.AsSpan(0, BodyLength);
    public int BodyLength { get; private set; }

    /// <summary>Reads and checks the header; returns its flags.</summary>
    public async ValueTask<ushort> ReadHeaderAsync(CancellationToken ct)
    {
        var h = new byte[SnapshotFormat.HeaderSize];
        int got = await src.ReadAtLeastAsync(h, h.Length, throwOnEndOfStream: false, ct).ConfigureAwait(false);
        if (got < h.Length || !h.AsSpan(0, 8).SequenceEqual(SnapshotFormat.Magic)) throw new SnapshotFormatException("not a snapshot of this server (bad header)");
        ushort version = BinaryPrimitives.ReadUInt16LittleEndian(h.AsSpan(8));
        if (version > SnapshotFormat.Version) throw new SnapshotFormatException($"snapshot format version {version} is newer than supported {SnapshotFormat.Version}");
        return BinaryPrimitives.ReadUInt16LittleEndian(h.AsSpan(10));
    }

    /// <summary>Reads the next record; false at the clean end of the input (only valid after the END record).</summary>
    public async ValueTask<bool> NextAsync(CancellationToken ct)
    {
        int got = await src.ReadAtLeastAsync(_head, 5, throwOnEndOfStream: false, ct).ConfigureAwait(false);
        if (got == 0) return false;
        if (got < 5) throw new SnapshotFormatException("snapshot truncated");
        uint length = BinaryPrimitives.ReadUInt32LittleEndian(_head.AsSpan(1));
        if (length > SnapshotFormat.MaxRecord) throw new SnapshotFormatException($"snapshot record of {length} bytes is too large");
        int n = (int)length;
        if (_body.Length < n + 4) _body = new byte[Math.Max(n + 4, Math.Min(SnapshotFormat.MaxRecord + 4, _body.Length * 2))];
        got = await src.ReadAtLeastAsync(_body.AsMemory(0, n + 4), n + 4, throwOnEndOfStream: false, ct).ConfigureAwait(false);
        if (got < n + 4) throw new SnapshotFormatException("snapshot truncated");
        uint crc = ~Crc32C.Append(Crc32C.Append(0xFFFFFFFFu, _head), _body.AsSpan(0, n));
        if (crc != BinaryPrimitives.ReadUInt32LittleEndian(_body.AsSpan(n))) throw new SnapshotFormatException("snapshot record checksum mismatch");
        Kind = _head[0];
        BodyLength = n;
        return true;
    }
}
