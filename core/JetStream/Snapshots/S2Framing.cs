using System.Buffers.Binary;
using NatsBroker.Contracts;

namespace NatsBroker.JetStream.Snapshots;

/// <summary>
/// The framing of S2 / Snappy streams (github.com/google/snappy framing_format.txt; klauspost/compress s2 reads the
/// Snappy streams, and its own with the stream identifier "S2sTwO"), used with uncompressed data chunks only. The
/// snapshot is sent in this framing because the nats CLI (jsm.go createSnapshot) runs what it receives through an s2
/// reader to show progress and fails the backup when that reader fails; each chunk also carries a CRC-32C of its data.
/// We write Snappy's identifier, which Snappy and S2 readers both accept.
/// <code>
/// chunk      : u8 type, u24 length (little-endian), body[length]
/// 0xff       : stream identifier, body "sNaPpY" (first chunk; "S2sTwO" is accepted too)
/// 0x01       : uncompressed data, body = u32 masked CRC-32C of the data, data (at most 64 KiB)
/// 0x80..0xfe : skippable (0xfe padding); 0x00 (compressed) and 0x02..0x7f are refused
/// </code>
/// </summary>
internal static class S2Framing
{
    public const byte ChunkUncompressed = 0x01, ChunkCompressed = 0x00, ChunkStreamId = 0xff;
    /// <summary>Snappy's limit for a data chunk's uncompressed size; s2 readers accept it too.</summary>
    public const int MaxBlock = 64 * 1024;
    public static ReadOnlySpan<byte> StreamIdentifier => [0xff, 0x06, 0x00, 0x00, (byte)'s', (byte)'N', (byte)'a', (byte)'P', (byte)'p', (byte)'Y'];
    public static ReadOnlySpan<byte> S2Magic => "S2sTwO"u8;
    public static ReadOnlySpan<byte> SnappyMagic => "sNaPpY"u8;

    /// <summary>The framing format's masked CRC-32C (Castagnoli): rotated right by 15 bits plus 0xa282ead8.</summary>
    public static uint MaskedCrc(ReadOnlySpan<byte> data)
    {
        uint c = Crc32C.Compute(data);
        return unchecked(((c >> 15) | (c << 17)) + 0xa282ead8u);
    }
}

/// <summary>Writes S2 framing (uncompressed chunks) into another stream; async only. Owns a 64 KiB block buffer.</summary>
internal sealed class S2FrameWriter(Stream inner) : Stream
{
    private readonly byte[] _block = new byte[8 + S2Framing.MaxBlock];
    private int _len;
    private bool _started;

    public override async ValueTask WriteAsync(ReadOnlyMemory<byte> buffer, CancellationToken cancellationToken = default)
    {
        while (!buffer.IsEmpty)
        {
            int n = Math.Min(buffer.Length, S2Framing.MaxBlock - _len);
            buffer.Span[..n].CopyTo(_block.AsSpan(8 + _len));
            _len += n;
            buffer = buffer[n..];
            if (_len == S2Framing.MaxBlock) await EmitAsync(cancellationToken).ConfigureAwait(false);
        }
    }

    public override Task WriteAsync(byte[] buffer, int offset, int count, CancellationToken cancellationToken) =>
        WriteAsync(buffer.AsMemory(offset, count), cancellationToken).AsTask();

    /// <summary>Emits the partial block (if any) and flushes the inner stream.</summary>
    public override async Task FlushAsync(CancellationToken cancellationToken)
    {
        if (_len > 0 || !_started) await EmitAsync(cancellationToken).ConfigureAwait(false);
        await inner.FlushAsync(cancellationToken).ConfigureAwait(false);
    }

    private async ValueTask EmitAsync(CancellationToken ct)
    {
        if (!_started)
        {
            _started = true;
            await inner.WriteAsync(S2Framing.StreamIdentifier.ToArray(), ct).ConfigureAwait(false);
        }
        if (_len == 0) return;
        var data = _block.AsSpan(8, _len);
        int bodyLength = 4 + _len;
        _block[0] = S2Framing.ChunkUncompressed;
        _block[1] = (byte)bodyLength;
        _block[2] = (byte)(bodyLength >> 8);
        _block[3] = (byte)(bodyLength >> 16);
        BinaryPrimitives.WriteUInt32LittleEndian(_block.AsSpan(4), S2Framing.MaskedCrc(data));
        await inner.WriteAsync(_block.AsMemory(0, 8 + _len), ct).ConfigureAwait(false);
        _len = 0;
    }

    public override bool CanRead => false;
    public override bool CanSeek => false;
    public override bool CanWrite => true;
    public override long Length => throw new NotSupportedException();
    public override long Position { get => throw new NotSupportedException(); set => throw new NotSupportedException(); }
    public override void Flush() => throw new NotSupportedException("async only");
    public override int Read(byte[] buffer, int offset, int count) => throw new NotSupportedException();
    public override long Seek(long offset, SeekOrigin origin) => throw new NotSupportedException();
    public override void SetLength(long value) => throw new NotSupportedException();
    public override void Write(byte[] buffer, int offset, int count) => throw new NotSupportedException("async only");
}

/// <summary>The framing's decoding error (bad chunk, checksum, compressed data): the snapshot is refused.</summary>
internal sealed class SnapshotFormatException(string message) : Exception(message);

/// <summary>Reads S2 framing with uncompressed chunks from another stream, checking each chunk's CRC; async only.</summary>
internal sealed class S2FrameReader(Stream inner) : AsyncReadOnlyStream
{
    private readonly byte[] _chunk = new byte[4 + S2Framing.MaxBlock];
    private readonly byte[] _header = new byte[4];
    private int _pos, _len;
    private bool _started, _ended;

    public override async ValueTask<int> ReadAsync(Memory<byte> buffer, CancellationToken cancellationToken = default)
    {
        while (_pos == _len)
        {
            if (_ended || !await NextChunkAsync(cancellationToken).ConfigureAwait(false))
            {
                _ended = true;
                return 0;
            }
        }
        int n = Math.Min(buffer.Length, _len - _pos);
        _chunk.AsSpan(_pos, n).CopyTo(buffer.Span);
        _pos += n;
        return n;
    }

    public override Task<int> ReadAsync(byte[] buffer, int offset, int count, CancellationToken cancellationToken) =>
        ReadAsync(buffer.AsMemory(offset, count), cancellationToken).AsTask();

    /// <summary>Reads the next chunk; false at the clean end of the input (between chunks).</summary>
    private async ValueTask<bool> NextChunkAsync(CancellationToken ct)
    {
        int got = await inner.ReadAtLeastAsync(_header, 4, throwOnEndOfStream: false, ct).ConfigureAwait(false);
        if (got == 0) return _started ? false : throw new SnapshotFormatException("snapshot is empty");
        if (got < 4) throw new SnapshotFormatException("snapshot truncated (chunk header)");
        byte type = _header[0];
        int length = _header[1] | (_header[2] << 8) | (_header[3] << 16);
        if (type == S2Framing.ChunkStreamId)
        {
            if (length != 6) throw new SnapshotFormatException("not a snapshot (bad stream identifier)");
            await ReadBodyAsync(6, ct).ConfigureAwait(false);
            var magic = _chunk.AsSpan(0, 6);
            if (!magic.SequenceEqual(S2Framing.S2Magic) && !magic.SequenceEqual(S2Framing.SnappyMagic)) throw new SnapshotFormatException("not a snapshot (bad stream identifier)");
            _started = true;
            _pos = _len = 0;
            return true;
        }
        if (!_started) throw new SnapshotFormatException("not a snapshot (no stream identifier)");
        if (type == S2Framing.ChunkUncompressed)
        {
            if (length < 4 || length > 4 + S2Framing.MaxBlock) throw new SnapshotFormatException("snapshot chunk has a bad length");
            await ReadBodyAsync(length, ct).ConfigureAwait(false);
            uint expected = BinaryPrimitives.ReadUInt32LittleEndian(_chunk);
            if (S2Framing.MaskedCrc(_chunk.AsSpan(4, length - 4)) != expected) throw new SnapshotFormatException("snapshot chunk checksum mismatch");
            _pos = 4;
            _len = length;
            return true;
        }
        if (type == S2Framing.ChunkCompressed || type < 0x80)
        {
            // nats-server's own snapshots (an s2-compressed tar of its file store) land here.
            throw new SnapshotFormatException($"unsupported snapshot chunk type 0x{type:x2} (compressed data; not a snapshot of this server)");
        }
        // Skippable chunk (0x80..0xfe): read and drop it.
        while (length > 0)
        {
            int n = Math.Min(length, _chunk.Length);
            await ReadBodyAsync(n, ct).ConfigureAwait(false);
            length -= n;
        }
        _pos = _len = 0;
        return true;
    }

    private async ValueTask ReadBodyAsync(int length, CancellationToken ct)
    {
        int got = await inner.ReadAtLeastAsync(_chunk.AsMemory(0, length), length, throwOnEndOfStream: false, ct).ConfigureAwait(false);
        if (got < length) throw new SnapshotFormatException("snapshot truncated (inside a chunk)");
    }
}
