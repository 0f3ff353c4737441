using System.Text;
using NatsBroker.Contracts;

namespace NatsBroker.Storage.Tests;

/// <summary>A clock the tests move by hand.</summary>
public sealed class ManualClock : TimeProvider
{
    public DateTimeOffset Now { get; set; } = new(2026, 1, 1, 0, 0, 0, TimeSpan.Zero);
    public override DateTimeOffset GetUtcNow() => Now;
    public void Advance(TimeSpan by) => Now += by;
}

public static class U
{
    public static byte[] B(string s) => Encoding.UTF8.GetBytes(s);
    public static string S(ReadOnlySpan<byte> b) => Encoding.UTF8.GetString(b);

    public static ulong Put(this IStreamStore s, string subject, string payload, string headers = "")
    {
        var r = s.Append(B(subject), B(headers), B(payload));
        Assert.Equal(StoreStatus.Ok, r.Status);
        return r.Sequence;
    }

    public static StoredMessage Get(this IStreamStore s, ulong seq)
    {
        var m = new StoredMessage();
        Assert.Equal(StoreStatus.Ok, s.Load(seq, m));
        return m;
    }

    public static string TempDir(string tag)
    {
        var d = Path.Combine(Path.GetTempPath(), "nbstore-" + tag + "-" + Guid.NewGuid().ToString("N")[..10]);
        return d;
    }
}

/// <summary>
/// nats-server 2.14.5's stored message sizes, written out independently of the engines so the tests check the
/// engines against them: memstore.go memStoreMsgSizeRaw and filestore.go fileStoreMsgSizeRaw.
/// </summary>
public static class GoSizes
{
    /// <summary>subject + headers + payload + 16 ("8*2 for seq + age").</summary>
    public static long Memory(int subject, int headers, int payload) => subject + headers + payload + 16;

    /// <summary>4 + 8 + 8 + 2 + subject + payload + 8, and 4 + headers more when there are headers.</summary>
    public static long File(int subject, int headers, int payload) =>
        headers == 0 ? 22 + subject + payload + 8 : 22 + subject + 4 + headers + payload + 8;
}
