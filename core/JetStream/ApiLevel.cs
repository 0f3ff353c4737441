using System.Buffers;
using System.Globalization;
using System.Text;

namespace NatsBroker.JetStream;

/// <summary>
/// The JetStream API level (nats-server jetstream_versioning.go): 4 is nats-server 2.14's. A request or batch
/// message whose <c>Nats-Required-Api-Level</c> is higher, or not a number, is refused with 10185
/// (errorOnRequiredApiLevel).
/// </summary>
internal static class ApiLevel
{
    public const int Current = 4;
    public const string Header = "Nats-Required-Api-Level";

    /// <summary>True when the header is present with a value (nats-server sliceHeader != empty).</summary>
    public static bool Present(ReadOnlySpan<byte> hdr) => !hdr.IsEmpty && !NatsHeaders.Get(hdr, Header).IsEmpty;

    /// <summary>nats-server errorOnRequiredApiLevel: the header asks for more than <see cref="Current"/> (or is no number).</summary>
    public static bool RequiresMore(ReadOnlySpan<byte> hdr)
    {
        if (hdr.IsEmpty) return false;
        var v = NatsHeaders.Get(hdr, Header);
        if (v.IsEmpty) return false;
        // Go strconv.Atoi: an optional sign and decimal digits.
        return !int.TryParse(Encoding.ASCII.GetString(v), NumberStyles.AllowLeadingSign, CultureInfo.InvariantCulture, out int level) || level > Current;
    }

    /// <summary>
    /// The header block without the Nats-Required-Api-Level line(s) (nats-server removeHeaderIfPresent), written
    /// into an empty <paramref name="into"/>.
    /// </summary>
    public static void Strip(ReadOnlySpan<byte> hdr, ArrayBufferWriter<byte> into)
    {
        var key = "\r\n"u8;
        int start = 0;
        while (start < hdr.Length)
        {
            int end = hdr[start..].IndexOf(key);
            int lineEnd = end < 0 ? hdr.Length : start + end + 2;
            var line = hdr[start..lineEnd];
            bool drop = start > 0 && line.StartsWith(Encoding.ASCII.GetBytes(Header + ":"));
            if (!drop)
            {
                line.CopyTo(into.GetSpan(line.Length));
                into.Advance(line.Length);
            }
            start = lineEnd;
        }
        // Only the status line left: no headers at all (nats-server returns nil below len("NATS/1.0\r\n\r\n")).
        if (into.WrittenCount <= "NATS/1.0\r\n\r\n".Length) into.ResetWrittenCount();
    }
}
