namespace NatsBroker.Storage.Internal;

/// <summary>Per-subject state: message count and first/last sequence (heads of the subject's linked list).</summary>
internal sealed class SubjectInfo(byte[] key, int id)
{
    public readonly byte[] Key = key;
    public readonly int Id = id;
    public ulong Count;
    public ulong First;
    public ulong Last;
}

/// <summary>
/// Subject -> <see cref="SubjectInfo"/>, looked up by UTF-8 span without allocating (Dictionary alternate
/// lookup), plus id -> info. Only a new subject allocates (its key and info).
/// </summary>
internal sealed class SubjectTable
{
    private readonly Dictionary<byte[], SubjectInfo> _map;
    private readonly Dictionary<byte[], SubjectInfo>.AlternateLookup<ReadOnlySpan<byte>> _alt;
    private SubjectInfo?[] _byId = new SubjectInfo?[64];
    private readonly Stack<int> _freeIds = new();
    private int _nextId;
    /// <summary>
    /// The subject the last <see cref="GetOrAdd"/> returned, while it is in the table: a stream whose appends repeat
    /// one subject skips the hash (perf: hashing was ~4% of a fast-ingest stream's ingest thread). Another subject
    /// costs one failed compare, usually decided by the length.
    /// </summary>
    private SubjectInfo? _lastAdded;

    public SubjectTable()
    {
        _map = new Dictionary<byte[], SubjectInfo>(ByteKeyComparer.Instance);
        _alt = _map.GetAlternateLookup<ReadOnlySpan<byte>>();
    }

    public int Count => _map.Count;
    public int IdCapacity => _byId.Length;
    public Dictionary<byte[], SubjectInfo>.ValueCollection All => _map.Values;

    public SubjectInfo? Find(ReadOnlySpan<byte> subject) => _alt.TryGetValue(subject, out var s) ? s : null;

    public SubjectInfo GetOrAdd(ReadOnlySpan<byte> subject)
    {
        if (_lastAdded is { } last && subject.SequenceEqual(last.Key)) return last;
        if (_alt.TryGetValue(subject, out var s)) return _lastAdded = s;
        int id = _freeIds.Count > 0 ? _freeIds.Pop() : _nextId++;
        if (id >= _byId.Length) Array.Resize(ref _byId, _byId.Length * 2);
        s = new SubjectInfo(subject.ToArray(), id);
        _map.Add(s.Key, s);
        _byId[id] = s;
        return _lastAdded = s;
    }

    public SubjectInfo ById(int id) => _byId[id]!;

    public void Remove(SubjectInfo s)
    {
        if (_lastAdded == s) _lastAdded = null;
        _map.Remove(s.Key);
        _byId[s.Id] = null;
        _freeIds.Push(s.Id);
    }

    /// <summary>Re-creates a subject under the id it had when an index image was written (fast open).</summary>
    public SubjectInfo Restore(int id, byte[] key, ulong count, ulong first, ulong last)
    {
        while (id >= _byId.Length) Array.Resize(ref _byId, _byId.Length * 2);
        var s = new SubjectInfo(key, id) { Count = count, First = first, Last = last };
        _map.Add(key, s);
        _byId[id] = s;
        if (id >= _nextId) _nextId = id + 1;
        return s;
    }

    /// <summary>After <see cref="Restore"/> calls: the ids below the highest one that are unused become free.</summary>
    public void FinishRestore()
    {
        _freeIds.Clear();
        for (int id = _nextId - 1; id >= 0; id--) if (_byId[id] is null) _freeIds.Push(id);
    }

    public void Clear()
    {
        _lastAdded = null;
        _map.Clear();
        Array.Clear(_byId);
        _freeIds.Clear();
        _nextId = 0;
    }
}

internal sealed class ByteKeyComparer : IEqualityComparer<byte[]>, IAlternateEqualityComparer<ReadOnlySpan<byte>, byte[]>
{
    public static readonly ByteKeyComparer Instance = new();

    public bool Equals(byte[]? x, byte[]? y) => x is null ? y is null : y is not null && x.AsSpan().SequenceEqual(y);
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
