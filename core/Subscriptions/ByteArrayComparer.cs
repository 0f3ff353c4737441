using System.Runtime.CompilerServices;

namespace NatsBroker.Subscriptions;

/// <summary>
/// Content equality for byte[] keys with a <see cref="ReadOnlySpan{T}"/> alternate key, so dictionaries keyed by
/// subject or token bytes can be probed straight from a parser's span without allocating a key.
/// </summary>
/// <remarks>
/// Hashing uses <see cref="HashCode.AddBytes"/>, which is seeded randomly per process: subjects and tokens are
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

    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    public int GetHashCode(ReadOnlySpan<byte> alternate)
    {
        var hash = default(HashCode);
        hash.AddBytes(alternate);
        return hash.ToHashCode();
    }

    /// <summary>Materialises a key; only called when an entry is actually added (a cache miss or a new token).</summary>
    public byte[] Create(ReadOnlySpan<byte> alternate) => alternate.ToArray();
}
