using System.Buffers.Binary;

namespace NatsBroker.Storage.CrashChild;

/// <summary>Deterministic per-sequence content, shared with the tests (linked source).</summary>
public static class CrashPayload
{
    public static int Fill(ulong seq, Span<byte> dst)
    {
        int len = 16 + (int)(seq % 150);
        BinaryPrimitives.WriteUInt64LittleEndian(dst, seq);
        BinaryPrimitives.WriteUInt64LittleEndian(dst[8..], ~seq);
        for (int i = 16; i < len; i++) dst[i] = (byte)((seq * 31) + (ulong)i);
        return len;
    }

    public static int Subject(ulong seq, Span<byte> dst)
    {
        var s = $"crash.{seq % 7}";
        return System.Text.Encoding.ASCII.GetBytes(s, dst);
    }
}
