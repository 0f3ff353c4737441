using System.Diagnostics.CodeAnalysis;
using System.Runtime.CompilerServices;

namespace NatsBroker.Subscriptions;

/// <summary>
/// Per-connection L1 cache of match results in front of <see cref="SubList"/> (nats-server's per-client results map
/// with its genid). Owned by one connection's read loop, so it is single-threaded: no locks, no atomics. Entries are
/// valid for one <see cref="SubList.Generation"/>; any change of generation clears everything, which is cheaper and
/// simpler than tracking which subjects a write affected.
/// </summary>
public sealed class SubjectResultCache
{
    public const int DefaultCapacity = 512;

    private readonly Dictionary<byte[], SubListResult> _map;
    private readonly Dictionary<byte[], SubListResult>.AlternateLookup<ReadOnlySpan<byte>> _bySpan;
    private readonly int _capacity;
    private long _generation;

    public SubjectResultCache(int capacity = DefaultCapacity)
    {
        ArgumentOutOfRangeException.ThrowIfLessThan(capacity, 2);
        _capacity = capacity;
        // Grows on demand up to the capacity bound: pre-sizing for 512 entries cost ~14 KB per connection (most
        // connections publish to a handful of subjects), the largest part of an idle connection's memory.
        _map = new Dictionary<byte[], SubListResult>(ByteArrayComparer.Instance);
        _bySpan = _map.GetAlternateLookup<ReadOnlySpan<byte>>();
    }

    public int Count => _map.Count;

    /// <summary>The generation the current entries belong to.</summary>
    public long Generation => _generation;

    /// <summary>Cached result for the subject at this generation; a different generation clears the cache.</summary>
    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    public bool TryGet(ReadOnlySpan<byte> subject, long generation, [MaybeNullWhen(false)] out SubListResult result)
    {
        if (generation != _generation)
        {
            Reset(generation);
            result = null;
            return false;
        }
        return _bySpan.TryGetValue(subject, out result);
    }

    /// <summary>
    /// Caches a result computed at <paramref name="generation"/> (read before computing it). When full, the older
    /// half is evicted: a connection publishing to many distinct subjects keeps its recent ones.
    /// </summary>
    public void Add(ReadOnlySpan<byte> subject, SubListResult result, long generation)
    {
        if (generation != _generation) Reset(generation);
        if (_map.Count >= _capacity && !_bySpan.ContainsKey(subject)) EvictHalf();
        _bySpan[subject] = result;
    }

    public void Clear() => _map.Clear();

    private void Reset(long generation)
    {
        if (_map.Count > 0) _map.Clear();
        _generation = generation;
    }

    /// <summary>
    /// Dictionary enumerates in insertion order while nothing has been removed since the last clear, so this drops
    /// roughly the oldest entries. Removing while enumerating is allowed for Dictionary since .NET Core 3.0.
    /// </summary>
    private void EvictHalf()
    {
        int target = _capacity / 2;
        foreach (var key in _map.Keys)
        {
            if (_map.Count <= target) break;
            _map.Remove(key);
        }
    }
}
