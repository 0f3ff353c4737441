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
