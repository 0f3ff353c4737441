using System.Buffers.Text;

namespace NatsBroker.JetStream;

/// <summary>
/// The header block of a DIRECT.GET answer (nats-server stream.go getDirectRequest: Nats-Stream, Nats-Subject,
/// Nats-Sequence, Nats-Time-Stamp, and for batches Nats-Num-Pending and Nats-Last-Sequence), written into a caller's
/// buffer without allocating. Laid out as <see cref="NatsHeaders.AppendHeaders"/> lays out appended lines: the stored
/// message's own header lines first (a stored block that does not end in an empty line is replaced by
/// <c>NATS/1.0</c>), then these lines, then the empty line.
/// </summary>
internal static class DirectGetHeaders
{
    private static ReadOnlySpan<byte> Version => "NATS/1.0\r\n"u8;
    private static ReadOnlySpan<byte> StreamKey => "Nats-Stream: "u8;
    private static ReadOnlySpan<byte> SubjectKey => "Nats-Subject: "u8;
    private static ReadOnlySpan<byte> SequenceKey => "Nats-Sequence: "u8;
    private static ReadOnlySpan<byte> TimeStampKey => "Nats-Time-Stamp: "u8;
    private static ReadOnlySpan<byte> PendingKey => "Nats-Num-Pending: "u8;
    private static ReadOnlySpan<byte> LastKey => "Nats-Last-Sequence: "u8;

    /// <summary>An upper bound of what <see cref="Write"/> writes for these parts.</summary>
    public static int MaxLength(int storedHeaders, int stream, int subject) =>
        // The stored block (or the version line), six lines of at most 20 key bytes, 20 digits / a time stamp and
        // CRLF each, the values of variable length, and the final CRLF.
        Math.Max(storedHeaders, Version.Length) + 6 * (20 + 2 + 2 + GoTime.MaxRfc3339NanoLength) + stream + subject + 2;

    /// <summary>
    /// Writes the block into <paramref name="into"/> (at least <see cref="MaxLength"/> bytes) and returns its length.
    /// <paramref name="batch"/> adds Nats-Num-Pending and Nats-Last-Sequence (batch and multi_last answers).
    /// </summary>
    public static int Write(Span<byte> into, ReadOnlySpan<byte> storedHeaders, ReadOnlySpan<byte> stream, ReadOnlySpan<byte> subject,
        ulong sequence, long timestamp, (ulong Pending, ulong Last)? batch)
    {
        int n;
        if (storedHeaders.Length >= 4 && storedHeaders.EndsWith("\r\n\r\n"u8))
        {
            storedHeaders[..^2].CopyTo(into);
            n = storedHeaders.Length - 2;
        }
        else
        {
            Version.CopyTo(into);
            n = Version.Length;
        }
        n += Line(into[n..], StreamKey, stream);
        n += Line(into[n..], SubjectKey, subject);
        n += Number(into[n..], SequenceKey, sequence);
        TimeStampKey.CopyTo(into[n..]);
        n += TimeStampKey.Length;
        n += GoTime.FormatRfc3339Nano(timestamp, into[n..]);
        n += Crlf(into[n..]);
        if (batch is { } b)
        {
            n += Number(into[n..], PendingKey, b.Pending);
            n += Number(into[n..], LastKey, b.Last);
        }
        n += Crlf(into[n..]);
        return n;
    }

    private static int Line(Span<byte> into, ReadOnlySpan<byte> key, ReadOnlySpan<byte> value)
    {
        key.CopyTo(into);
        value.CopyTo(into[key.Length..]);
        return key.Length + value.Length + Crlf(into[(key.Length + value.Length)..]);
    }

    private static int Number(Span<byte> into, ReadOnlySpan<byte> key, ulong value)
    {
        key.CopyTo(into);
        Utf8Formatter.TryFormat(value, into[key.Length..], out int w);
        return key.Length + w + Crlf(into[(key.Length + w)..]);
    }

    private static int Crlf(Span<byte> into)
    {
        into[0] = (byte)'\r';
        into[1] = (byte)'\n';
        return 2;
    }
}
