using System.Buffers;
using System.Buffers.Text;
using System.Text;

namespace NatsBroker.JetStream;

/// <summary>
/// Reading and writing NATS header blocks ("NATS/1.0[ code text]\r\nKey: Value\r\n...\r\n\r\n"). Lookups match
/// the key exactly, as nats-server's getHeader does for the Nats-* headers it interprets.
/// </summary>
internal static class NatsHeaders
{
    public const string MsgId = "Nats-Msg-Id";
    public const string ExpectedStream = "Nats-Expected-Stream";
    public const string ExpectedLastSeq = "Nats-Expected-Last-Sequence";
    public const string ExpectedLastSubjSeq = "Nats-Expected-Last-Subject-Sequence";
    public const string ExpectedLastMsgId = "Nats-Expected-Last-Msg-Id";
    public const string Rollup = "Nats-Rollup";

    /// <summary>The value of <paramref name="key"/> (trimmed), or an empty span when absent.</summary>
    public static ReadOnlySpan<byte> Get(ReadOnlySpan<byte> block, string key)
    {
        int at = ValueStart(block, key);
        if (at < 0) return default;
        var rest = block[at..];
        int end = rest.IndexOf("\r\n"u8);
        if (end >= 0) rest = rest[..end];
        return rest.Trim((byte)' ');
    }

    public static bool Has(ReadOnlySpan<byte> block, string key) => ValueStart(block, key) >= 0;

    /// <summary>True when some line may be a Nats-Expected-* header (a cheap filter before those lookups).</summary>
    public static bool MentionsExpected(ReadOnlySpan<byte> block) => block.IndexOf("\r\nNats-Expected-"u8) >= 0;

    /// <summary>
    /// Where the value of the first line "<paramref name="key"/>:" starts (after the colon), or -1. Walks the block's
    /// lines and compares the key's chars with the line's bytes, so a lookup neither allocates nor encodes the key:
    /// every publish with headers runs several of these (Nats-Msg-Id, the Nats-Expected-* checks, batches).
    /// </summary>
    private static int ValueStart(ReadOnlySpan<byte> block, string key)
    {
        int line = block.IndexOf("\r\n"u8);
        while (line >= 0)
        {
            int start = line + 2;
            var rest = block[start..];
            if (rest.Length > key.Length && rest[key.Length] == (byte)':' && KeyEquals(rest, key)) return start + key.Length + 1;
            int next = rest.IndexOf("\r\n"u8);
            line = next < 0 ? -1 : start + next;
        }
        return -1;
    }

    private static bool KeyEquals(ReadOnlySpan<byte> line, string key)
    {
        for (int i = 0; i < key.Length; i++)
        {
            if (line[i] != key[i]) return false;
        }
        return true;
    }

    public static string GetString(ReadOnlySpan<byte> block, string key)
    {
        var v = Get(block, key);
        return v.IsEmpty ? "" : Encoding.UTF8.GetString(v);
    }

    /// <summary>Parses a decimal header value; false when absent or not a number.</summary>
    public static bool TryGetUInt64(ReadOnlySpan<byte> block, string key, out ulong value, out bool present)
    {
        var v = Get(block, key);
        present = !v.IsEmpty || Has(block, key);
        return Utf8Parser.TryParse(v, out value, out int used) && used == v.Length && v.Length > 0;
    }

    /// <summary>A status-only block: "NATS/1.0 404 No Messages\r\n\r\n" plus optional extra header lines.</summary>
    public static byte[] Status(int code, string text, params (string Key, string Value)[] extra)
    {
        var sb = new StringBuilder("NATS/1.0 ").Append(code).Append(' ').Append(text).Append("\r\n");
        foreach (var (k, v) in extra) sb.Append(k).Append(": ").Append(v).Append("\r\n");
        sb.Append("\r\n");
        return Encoding.ASCII.GetBytes(sb.ToString());
    }

    /// <summary>Writes <paramref name="existing"/> (a full block, or empty) with extra header lines appended.</summary>
    public static int AppendHeaders(ReadOnlySpan<byte> existing, ReadOnlySpan<(string Key, string Value)> extra, ArrayBufferWriter<byte> into)
    {
        int start = into.WrittenCount;
        if (existing.Length >= 4 && existing.EndsWith("\r\n\r\n"u8))
        {
            Write(into, existing[..^2]);
        }
        else
        {
            Write(into, "NATS/1.0\r\n"u8);
        }
        foreach (var (k, v) in extra)
        {
            Write(into, Encoding.ASCII.GetBytes(k));
            Write(into, ": "u8);
            Write(into, Encoding.UTF8.GetBytes(v));
            Write(into, "\r\n"u8);
        }
        Write(into, "\r\n"u8);
        return into.WrittenCount - start;
    }

    /// <summary>
    /// nats-server setHeader (client.go): <paramref name="block"/> with the first <paramref name="key"/> line's value
    /// replaced (one space after the colon kept), or the line appended when absent; written into
    /// <paramref name="into"/>.
    /// </summary>
    public static void Set(ReadOnlySpan<byte> block, string key, string value, ArrayBufferWriter<byte> into)
    {
        int valStart = ValueStart(block, key);
        if (valStart < 0)
        {
            AppendHeaders(block, [(key, value)], into);
            return;
        }
        if (valStart < block.Length && block[valStart] == (byte)' ') valStart++;
        int valEnd = block[valStart..].IndexOf((byte)'\r');
        if (valEnd < 0)
        {
            Write(into, block); // malformed: kept as it is, as nats-server does
            return;
        }
        Write(into, block[..valStart]);
        Write(into, Encoding.UTF8.GetBytes(value));
        Write(into, block[(valStart + valEnd)..]);
    }

    private static void Write(ArrayBufferWriter<byte> w, ReadOnlySpan<byte> s)
    {
        s.CopyTo(w.GetSpan(s.Length));
        w.Advance(s.Length);
    }
}
