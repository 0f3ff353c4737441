namespace NatsBroker.Auth;

/// <summary>
/// Content equality for byte-array keys, with a <see cref="ReadOnlySpan{T}"/> alternate key so lookups from the
/// parser's buffers allocate nothing. Hashing goes through <see cref="HashCode"/>, which is seeded per process,
/// so clients cannot precompute colliding subjects.
/// </summary>
internal sealed class ByteKeyComparer : IEqualityComparer<byte[]>, IAlternateEqualityComparer<ReadOnlySpan<byte>, byte[]>
{
    public static readonly ByteKeyComparer Instance = new();

    public bool Equals(byte[]? x, byte[]? y) =>
        ReferenceEquals(x, y) || (x is not null && y is not null && x.AsSpan().SequenceEqual(y));

    public int GetHashCode(byte[] obj) => GetHashCode((ReadOnlySpan<byte>)obj);

    public bool Equals(ReadOnlySpan<byte> alternate, byte[] other) => alternate.SequenceEqual(other);

    public int GetHashCode(ReadOnlySpan<byte> alternate)
    {
        var h = new HashCode();
        h.AddBytes(alternate);
        return h.ToHashCode();
    }

    public byte[] Create(ReadOnlySpan<byte> alternate) => alternate.ToArray();
}
