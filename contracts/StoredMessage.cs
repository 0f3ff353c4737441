using System.Runtime.CompilerServices;

namespace NatsBroker.Contracts;

/// <summary>
/// A caller-owned, reusable message record that loads fill in place. Its buffer grows to the largest message
/// loaded and is then reused, so steady-state loads allocate nothing. The spans are valid until the next load
/// into the same record. Layout of <see cref="Buffer"/>: [subject][headers][payload].
/// </summary>
public sealed class StoredMessage
{
    private byte[] _buffer;

    public StoredMessage(int initialCapacity = 256) => _buffer = new byte[Math.Max(16, initialCapacity)];

    public ulong Sequence { get; private set; }
    /// <summary>Unix time in nanoseconds.</summary>
    public long Timestamp { get; private set; }
    /// <summary>Per-message TTL in nanoseconds, 0 if none.</summary>
    public long Ttl { get; private set; }
    public int SubjectLength { get; private set; }
    public int HeadersLength { get; private set; }
    public int PayloadLength { get; private set; }

    public byte[] Buffer => _buffer;
    public ReadOnlySpan<byte> Subject => _buffer.AsSpan(0, SubjectLength);
    public ReadOnlySpan<byte> Headers => _buffer.AsSpan(SubjectLength, HeadersLength);
    public ReadOnlySpan<byte> Payload => _buffer.AsSpan(SubjectLength + HeadersLength, PayloadLength);
    /// <summary>The header block followed by the payload: adjacent in <see cref="Buffer"/>, so one region.</summary>
    public ReadOnlyMemory<byte> HeadersAndPayload => _buffer.AsMemory(SubjectLength, HeadersLength + PayloadLength);
    /// <summary>Allocates: for tests and diagnostics, not for hot paths.</summary>
    public string SubjectString => System.Text.Encoding.UTF8.GetString(Subject);
    /// <summary>
    /// Subject + headers + payload: the bytes of <see cref="Buffer"/> this record uses. Not the figure a store counts
    /// toward its state's bytes and max_bytes (that is <see cref="IStreamStore.StoredSize"/>, per engine); it is what
    /// nats-server counts for a direct get batch's max_bytes (stream.go getDirectRequest: subj + hdr + msg).
    /// </summary>
    public long ContentLength => (long)SubjectLength + HeadersLength + PayloadLength;

    /// <summary>
    /// For engines: sets the header fields and returns a span of exactly subject+headers+payload bytes to fill,
    /// growing the buffer if needed.
    /// </summary>
    // Inlined into every engine's read (one call per message load); the rare growth stays out of line.
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public Span<byte> Prepare(ulong sequence, long timestamp, long ttl, int subjectLength, int headersLength, int payloadLength)
    {
        int total = checked(subjectLength + headersLength + payloadLength);
        if (total > _buffer.Length) Grow(total);
        Sequence = sequence;
        Timestamp = timestamp;
        Ttl = ttl;
        SubjectLength = subjectLength;
        HeadersLength = headersLength;
        PayloadLength = payloadLength;
        return _buffer.AsSpan(0, total);
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private void Grow(int total) => _buffer = new byte[Math.Max(total, Math.Min(int.MaxValue / 2, _buffer.Length) * 2)];

    /// <summary>For engines: fills the record by copying the three parts.</summary>
    public void Set(ulong sequence, long timestamp, long ttl, ReadOnlySpan<byte> subject, ReadOnlySpan<byte> headers, ReadOnlySpan<byte> payload)
    {
        var dst = Prepare(sequence, timestamp, ttl, subject.Length, headers.Length, payload.Length);
        subject.CopyTo(dst);
        headers.CopyTo(dst[subject.Length..]);
        payload.CopyTo(dst[(subject.Length + headers.Length)..]);
    }

    public void Clear()
    {
        Sequence = 0;
        Timestamp = 0;
        Ttl = 0;
        SubjectLength = HeadersLength = PayloadLength = 0;
    }
}
