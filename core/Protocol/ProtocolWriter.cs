using System.Buffers.Text;

namespace NatsBroker.Protocol;

/// <summary>Fixed server-to-client protocol lines, sized up front and written with one copy.</summary>
public static class ProtocolWriter
{
    public static ReadOnlySpan<byte> Ping => "PING\r\n"u8;
    public static ReadOnlySpan<byte> Pong => "PONG\r\n"u8;
    public static ReadOnlySpan<byte> Ok => "+OK\r\n"u8;
    /// <summary>The status header block of a no-responders reply: <c>NATS/1.0 503\r\n\r\n</c>.</summary>
    public static ReadOnlySpan<byte> NoRespondersHeader => "NATS/1.0 503\r\n\r\n"u8;

    /// <summary>-ERR '&lt;text&gt;'\r\n</summary>
    public static byte[] Error(string text) => System.Text.Encoding.ASCII.GetBytes($"-ERR '{text}'\r\n");

    /// <summary>Writes a decimal integer; returns bytes written.</summary>
    public static int WriteInt(Span<byte> dest, long value)
    {
        Utf8Formatter.TryFormat(value, dest, out int written);
        return written;
    }
}
