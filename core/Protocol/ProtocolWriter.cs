using System.Buffers.Text;

namespace NatsBroker.Protocol;

/// <summary>Fixed server-to-client protocol lines, sized up front and written with one copy.</summary>
public static class ProtocolWriter
{
    public static ReadOnlySpan<byte> Ping => "PING\r\n"u8;
    public static ReadOnlySpan<byte> Pong => "PONG\r\n"u8;
    public static ReadOnlySpan<byte> Ok => "+OK\r\n"u8;

    // The status header block of a no-responders reply, as nats-server 2.10+ writes it (client.go
    // processInboundClientMsg): NATS/1.0 503\r\nNats-Subject: <subject>\r\n\r\n, 32 bytes plus the subject.
    private static ReadOnlySpan<byte> NoRespondersStatus => "NATS/1.0 503\r\nNats-Subject: "u8;

    /// <summary>Length of the no-responders header block for a request on a subject of <paramref name="subjectLength"/> bytes.</summary>
    public static int NoRespondersHeaderLength(int subjectLength) => NoRespondersStatus.Length + subjectLength + 4;

    /// <summary>Writes the no-responders header block (<see cref="NoRespondersHeaderLength"/> bytes); returns bytes written.</summary>
    public static int WriteNoRespondersHeader(Span<byte> dest, ReadOnlySpan<byte> subject)
    {
        var status = NoRespondersStatus;
        status.CopyTo(dest);
        subject.CopyTo(dest[status.Length..]);
        int o = status.Length + subject.Length;
        "\r\n\r\n"u8.CopyTo(dest[o..]);
        return o + 4;
    }

    /// <summary>Number of decimal digits of a non-negative integer (a line sized before it is written).</summary>
    public static int DigitCount(long value)
    {
        int n = 1;
        while (value >= 10) { value /= 10; n++; }
        return n;
    }

    /// <summary>-ERR '&lt;text&gt;'\r\n</summary>
    public static byte[] Error(string text) => System.Text.Encoding.ASCII.GetBytes($"-ERR '{text}'\r\n");

    /// <summary>Writes a decimal integer; returns bytes written.</summary>
    public static int WriteInt(Span<byte> dest, long value)
    {
        Utf8Formatter.TryFormat(value, dest, out int written);
        return written;
    }
}
