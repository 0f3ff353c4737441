using System.Text;

namespace NatsBroker.Bench.Raw;

/// <summary>Pre-built protocol buffers.</summary>
internal static class Frames
{
    public static byte[] Payload(int size)
    {
        var p = new byte[size];
        for (int i = 0; i < size; i++)
        {
            p[i] = (byte)('a' + (i % 26));
        }

        return p;
    }

    /// <summary>"PUB subject [reply] size\r\n payload \r\n" once.</summary>
    public static byte[] Pub(string subject, string? reply, int size)
    {
        string head = reply is null ? $"PUB {subject} {size}\r\n" : $"PUB {subject} {reply} {size}\r\n";
        var h = Encoding.ASCII.GetBytes(head);
        var f = new byte[h.Length + size + 2];
        h.CopyTo(f, 0);
        Payload(size).CopyTo(f, h.Length);
        f[^2] = (byte)'\r';
        f[^1] = (byte)'\n';
        return f;
    }

    /// <summary>A buffer holding as many copies of <paramref name="frame"/> as fit in about <paramref name="targetBytes"/> (at least one).</summary>
    public static (byte[] Buffer, int FrameLength, int Frames) Repeat(byte[] frame, int targetBytes)
    {
        int count = Math.Max(1, targetBytes / frame.Length);
        var b = new byte[count * frame.Length];
        for (int i = 0; i < count; i++)
        {
            frame.CopyTo(b, i * frame.Length);
        }

        return (b, frame.Length, count);
    }
}
