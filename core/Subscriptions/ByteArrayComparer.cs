using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;

namespace NatsBroker.Subscriptions;

/// <summary>
/// Content equality for byte[] keys with a <see cref="ReadOnlySpan{T}"/> alternate key, so dictionaries keyed by
/// subject or token bytes can be probed straight from a parser's span without allocating a key.
/// </summary>
/// <remarks>
/// Hashing (<see cref="Hash"/>) is seeded randomly per process: subjects and tokens are
/// client-controlled, and a fixed hash would let a client degrade the trie's level dictionaries by flooding them
/// with colliding tokens.
/// </remarks>
public sealed class ByteArrayComparer : IEqualityComparer<byte[]>, IAlternateEqualityComparer<ReadOnlySpan<byte>, byte[]>
{
    public static readonly ByteArrayComparer Instance = new();

    private ByteArrayComparer()
    {
    }

    public bool Equals(byte[]? x, byte[]? y) =>
        ReferenceEquals(x, y) || (x is not null && y is not null && x.AsSpan().SequenceEqual(y));

    public int GetHashCode(byte[] obj) => GetHashCode(obj.AsSpan());

    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    public bool Equals(ReadOnlySpan<byte> alternate, byte[] other) => alternate.SequenceEqual(other);

    public int GetHashCode(ReadOnlySpan<byte> alternate) => Hash(alternate);

    /// <summary>
    /// The randomly seeded hash of a byte string: the runtime's string hash (Marvin, seeded per process) over the
    /// bytes taken two at a time, plus an odd last byte. Several times faster than <see cref="HashCode.AddBytes"/>,
    /// which runs its mixing step per 4-byte word through a general-purpose accumulator; it ran once per published
    /// message (L1 cache, shared match cache).
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    public static int Hash(ReadOnlySpan<byte> bytes)
    {
        int hash = string.GetHashCode(MemoryMarshal.Cast<byte, char>(bytes));
        return (bytes.Length & 1) == 0 ? hash : (hash * 31) ^ bytes[^1] ^ (bytes.Length << 8);
    }

    /// <summary>Materialises a key; only called when an entry is actually added (a cache miss or a new token).</summary>
    public byte[] Create(ReadOnlySpan<byte> alternate) => alternate.ToArray();
}
