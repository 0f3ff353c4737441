using System.Buffers;
using System.Text;

namespace NatsBroker.Transport.Text;

/// <summary>
/// Invalid UTF-8 in JSON text, repaired the way Go's encoding/json reads it: each byte that does not start a valid
/// sequence becomes U+FFFD and decoding goes on at the next byte (encoding/json decode.go unquoteBytes uses
/// utf8.DecodeRune, which reports width 1 for an invalid byte). nats-server therefore accepts a CONNECT whose strings
/// hold invalid UTF-8 (a client name with a stray 0xFF shows up in /connz as "a\uFFFDb"); System.Text.Json refuses
/// such text, so the readers of CONNECT lines repair it first.
/// <para>
/// .NET's own replacement (<see cref="Encoding.UTF8"/>) replaces a maximal invalid subsequence with one U+FFFD
/// (WHATWG), where Go writes one per byte: a truncated 3-byte sequence becomes two U+FFFD in Go and one in .NET.
/// </para>
/// </summary>
public static class GoUtf8
{
    private static ReadOnlySpan<byte> Replacement => [0xEF, 0xBF, 0xBD];

    /// <summary>A repaired copy of <paramref name="text"/> (always a new array).</summary>
    public static byte[] RepairCopy(ReadOnlySpan<byte> text)
    {
        var output = new ArrayBufferWriter<byte>(text.Length + 8);
        while (!text.IsEmpty)
        {
            var status = Rune.DecodeFromUtf8(text, out _, out int consumed);
            if (status == OperationStatus.Done)
            {
                output.Write(text[..consumed]);
                text = text[consumed..];
            }
            else
            {
                output.Write(Replacement);
                text = text[1..];
            }
        }
        return output.WrittenSpan.ToArray();
    }
}
