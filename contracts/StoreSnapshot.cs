using System.Buffers.Binary;

namespace NatsBroker.Contracts;

/// <summary>
/// The portable snapshot format, the same for every engine (a memory stream can be restored into a file
/// store and back). Little-endian:
/// <code>
/// header : "NBSNAP" u16 version=1, u64 firstSeq, u64 lastSeq
/// items  : u8 kind, then
///          kind 1 (message) : u64 seq, i64 timestamp, i64 ttl, u32 subjectLen, u32 headersLen, u32 payloadLen, bytes
///          kind 2 (consumer): u16 nameLen, name (UTF-8), u32 stateLen, state (ConsumerStateCodec)
///          kind 255 (end)   : u64 messageCount, u32 crc32c of every byte before this crc
/// </code>
/// </summary>
public static class StoreSnapshot
{
    public const ushort Version = 1;
    private const byte KindMessage = 1, KindConsumer = 2, KindEnd = 255;

    public static async ValueTask<StoreStatus> WriteAsync(IStreamStore store, Stream destination, CancellationToken ct)
    {
        var state = store.GetState();
        var w = new Writer(destination);
        var h = w.Reserve(8 + 16);
        "NBSNAP"u8.CopyTo(h);
        BinaryPrimitives.WriteUInt16LittleEndian(h[6..], Version);
        BinaryPrimitives.WriteUInt64LittleEndian(h[8..], state.FirstSequence);
        BinaryPrimitives.WriteUInt64LittleEndian(h[16..], state.LastSequence);
        var msg = new StoredMessage(1024);
        ulong seq = state.FirstSequence, count = 0;
        while (seq <= state.LastSequence)
        {
            var st = store.LoadNext(default, seq, msg);
            if (st == StoreStatus.NotFound) break;
            if (st != StoreStatus.Ok) return st;
            if (msg.Sequence > state.LastSequence) break;
            var m = w.Reserve(1 + 36);
            m[0] = KindMessage;
            BinaryPrimitives.WriteUInt64LittleEndian(m[1..], msg.Sequence);
            BinaryPrimitives.WriteInt64LittleEndian(m[9..], msg.Timestamp);
            BinaryPrimitives.WriteInt64LittleEndian(m[17..], msg.Ttl);
            BinaryPrimitives.WriteUInt32LittleEndian(m[25..], (uint)msg.SubjectLength);
            BinaryPrimitives.WriteUInt32LittleEndian(m[29..], (uint)msg.HeadersLength);
            BinaryPrimitives.WriteUInt32LittleEndian(m[33..], (uint)msg.PayloadLength);
            await w.WriteAsync(msg.Buffer.AsMemory(0, (int)msg.ContentLength), ct).ConfigureAwait(false);
            count++;
            seq = msg.Sequence + 1;
            if (w.Pending > 60_000) await w.FlushAsync(ct).ConfigureAwait(false);
        }
        foreach (var name in store.ConsumerNames())
        {
            if (store.OpenConsumer(name, out var c) != StoreStatus.Ok || c is null) continue;
            var cs = new ConsumerState();
            c.GetState(cs);
            var bytes = ConsumerStateCodec.Encode(cs);
            var nameBytes = System.Text.Encoding.UTF8.GetBytes(name);
            var p = w.Reserve(1 + 2);
            p[0] = KindConsumer;
            BinaryPrimitives.WriteUInt16LittleEndian(p[1..], (ushort)nameBytes.Length);
            await w.WriteAsync(nameBytes, ct).ConfigureAwait(false);
            BinaryPrimitives.WriteUInt32LittleEndian(w.Reserve(4), (uint)bytes.Length);
            await w.WriteAsync(bytes, ct).ConfigureAwait(false);
        }
        var e = w.Reserve(1 + 8);
        e[0] = KindEnd;
        BinaryPrimitives.WriteUInt64LittleEndian(e[1..], count);
        await w.FinishAsync(ct).ConfigureAwait(false);
        return StoreStatus.Ok;
    }

    /// <summary>Reads a snapshot into an empty store using <see cref="IStreamStore.AppendAt"/> and <see cref="IStreamStore.SkipTo"/>.</summary>
    public static async ValueTask<(StoreStatus Status, string? Error)> RestoreAsync(IStreamStore store, Stream source, CancellationToken ct)
    {
        if (store.GetState().LastSequence != 0) return (StoreStatus.InvalidArgument, "restore needs an empty store");
        var r = new Reader(source);
        var head = await r.ReadAsync(24, ct).ConfigureAwait(false);
        if (head is null || !head.AsSpan(0, 6).SequenceEqual("NBSNAP"u8)) return (StoreStatus.Corrupt, "not a snapshot");
        ushort version = BinaryPrimitives.ReadUInt16LittleEndian(head.AsSpan(6));
        if (version > Version) return (StoreStatus.UnsupportedVersion, $"snapshot version {version} is newer than supported {Version}");
        ulong first = BinaryPrimitives.ReadUInt64LittleEndian(head.AsSpan(8));
        ulong last = BinaryPrimitives.ReadUInt64LittleEndian(head.AsSpan(16));
        if (first > 1) store.SkipTo(first - 1);
        ulong count = 0;
        while (true)
        {
            var k = await r.ReadAsync(1, ct).ConfigureAwait(false);
            if (k is null) return (StoreStatus.Corrupt, "snapshot truncated");
            switch (k[0])
            {
                case KindMessage:
                {
                    var m = await r.ReadAsync(36, ct).ConfigureAwait(false);
                    if (m is null) return (StoreStatus.Corrupt, "snapshot truncated");
                    ulong seq = BinaryPrimitives.ReadUInt64LittleEndian(m);
                    long ts = BinaryPrimitives.ReadInt64LittleEndian(m.AsSpan(8));
                    long ttl = BinaryPrimitives.ReadInt64LittleEndian(m.AsSpan(16));
                    int sl = (int)BinaryPrimitives.ReadUInt32LittleEndian(m.AsSpan(24));
                    int hl = (int)BinaryPrimitives.ReadUInt32LittleEndian(m.AsSpan(28));
                    int pl = (int)BinaryPrimitives.ReadUInt32LittleEndian(m.AsSpan(32));
                    if (sl < 0 || hl < 0 || pl < 0 || (long)sl + hl + pl > 64L << 20) return (StoreStatus.Corrupt, "bad message lengths in snapshot");
                    var body = await r.ReadAsync(sl + hl + pl, ct).ConfigureAwait(false);
                    if (body is null) return (StoreStatus.Corrupt, "snapshot truncated");
                    var st = store.AppendAt(seq, ts, body.AsSpan(0, sl), body.AsSpan(sl, hl), body.AsSpan(sl + hl, pl), ttl);
                    if (st != StoreStatus.Ok) return (st, $"restoring sequence {seq}: {st}");
                    count++;
                    break;
                }
                case KindConsumer:
                {
                    var nl = await r.ReadAsync(2, ct).ConfigureAwait(false);
                    if (nl is null) return (StoreStatus.Corrupt, "snapshot truncated");
                    var name = await r.ReadAsync(BinaryPrimitives.ReadUInt16LittleEndian(nl), ct).ConfigureAwait(false);
                    var sl = name is null ? null : await r.ReadAsync(4, ct).ConfigureAwait(false);
                    var body = sl is null ? null : await r.ReadAsync((int)BinaryPrimitives.ReadUInt32LittleEndian(sl), ct).ConfigureAwait(false);
                    if (body is null) return (StoreStatus.Corrupt, "snapshot truncated");
                    var cs = new ConsumerState();
                    var dst = ConsumerStateCodec.Decode(body, cs, out var err);
                    if (dst != StoreStatus.Ok) return (dst, err);
                    if (store.OpenConsumer(System.Text.Encoding.UTF8.GetString(name!), out var c) != StoreStatus.Ok || c is null)
                        return (StoreStatus.IoError, "cannot create consumer");
                    c.Update(cs);
                    break;
                }
                case KindEnd:
                {
                    var e = await r.ReadAsync(8, ct).ConfigureAwait(false);
                    uint crc = r.Crc;
                    var c = await r.ReadAsync(4, ct).ConfigureAwait(false);
                    if (e is null || c is null) return (StoreStatus.Corrupt, "snapshot truncated");
                    if (BinaryPrimitives.ReadUInt32LittleEndian(c) != ~crc) return (StoreStatus.Corrupt, "snapshot checksum mismatch");
                    if (BinaryPrimitives.ReadUInt64LittleEndian(e) != count) return (StoreStatus.Corrupt, "snapshot message count mismatch");
                    store.SkipTo(last);
                    return (StoreStatus.Ok, null);
                }
                default:
                    return (StoreStatus.Corrupt, $"unknown snapshot item kind {k[0]}");
            }
        }
    }

    private sealed class Writer(Stream dst)
    {
        private readonly byte[] _buf = new byte[65536];
        private int _len;
        private uint _crc = 0xFFFFFFFFu;
        public int Pending => _len;

        public Span<byte> Reserve(int n)
        {
            if (_len + n > _buf.Length) FlushSync();
            var s = _buf.AsSpan(_len, n);
            _len += n;
            return s;
        }

        private void FlushSync()
        {
            _crc = Crc32C.Append(_crc, _buf.AsSpan(0, _len));
            dst.Write(_buf, 0, _len);
            _len = 0;
        }

        public async ValueTask WriteAsync(ReadOnlyMemory<byte> data, CancellationToken ct)
        {
            if (_len + data.Length <= _buf.Length)
            {
                data.Span.CopyTo(_buf.AsSpan(_len));
                _len += data.Length;
                return;
            }
            await FlushAsync(ct).ConfigureAwait(false);
            _crc = Crc32C.Append(_crc, data.Span);
            await dst.WriteAsync(data, ct).ConfigureAwait(false);
        }

        public async ValueTask FlushAsync(CancellationToken ct)
        {
            _crc = Crc32C.Append(_crc, _buf.AsSpan(0, _len));
            await dst.WriteAsync(_buf.AsMemory(0, _len), ct).ConfigureAwait(false);
            _len = 0;
        }

        public async ValueTask FinishAsync(CancellationToken ct)
        {
            await FlushAsync(ct).ConfigureAwait(false);
            var c = new byte[4];
            BinaryPrimitives.WriteUInt32LittleEndian(c, ~_crc);
            await dst.WriteAsync(c, ct).ConfigureAwait(false);
            await dst.FlushAsync(ct).ConfigureAwait(false);
        }
    }

    private sealed class Reader(Stream src)
    {
        public uint Crc { get; private set; } = 0xFFFFFFFFu;

        public async ValueTask<byte[]?> ReadAsync(int n, CancellationToken ct)
        {
            var b = new byte[n];
            try
            {
                await src.ReadExactlyAsync(b, ct).ConfigureAwait(false);
            }
            catch (EndOfStreamException)
            {
                return null;
            }
            Crc = Crc32C.Append(Crc, b);
            return b;
        }
    }
}
