using System.Diagnostics.CodeAnalysis;
using System.Runtime.CompilerServices;

namespace NatsBroker.Subscriptions;

/// <summary>
/// Per-connection L1 cache of match results in front of <see cref="SubList"/> (nats-server's per-client results map
/// with its genid). Owned by one connection's read loop, so it is single-threaded: no locks, no atomics. Entries are
/// valid for one <see cref="SubList.Generation"/>; any change of generation clears everything, which is cheaper and
/// simpler than tracking which subjects a write affected.
/// </summary>
/// <remarks>
/// <para>
/// A hand-written open-addressing table rather than a <c>Dictionary&lt;byte[], SubListResult&gt;</c>: a lookup runs
/// once per published message, and the dictionary's shared-generic code (comparer calls through an interface, casts)
/// plus <see cref="HashCode.AddBytes"/> were about a third of the server's CPU on a publish-only load (perf, 16-byte
/// messages). Keys are hashed with <see cref="ByteArrayComparer.Hash"/> (randomly seeded per process).
/// </para>
/// <para>
/// Bounded by two tables of half the capacity each: new entries go into the current one; when it is full it becomes
/// the previous one and the old previous one is emptied, so a connection publishing to many distinct subjects keeps
/// its recent ones (an older subject in use again is looked up in the shared cache and added anew). Emptying a table clears its slots, so it
/// keeps no closed connection's subscriptions alive. Tables are allocated on first use and grow by doubling, so a
/// connection that never publishes carries none.
/// </para>
/// </remarks>
public sealed class SubjectResultCache
{
    public const int DefaultCapacity = 512;

    private struct Slot
    {
        public byte[]? Key;
        public SubListResult? Value;
        public int Hash;
    }

    private sealed class Table
    {
        public Slot[] Slots = [];
        public int Count;
    }

    private readonly int _perTable;
    private readonly int _maxSlots;
    private Table _current = new();
    private Table _previous = new();
    private long _generation;

    public SubjectResultCache(int capacity = DefaultCapacity)
    {
        ArgumentOutOfRangeException.ThrowIfLessThan(capacity, 2);
        _perTable = capacity / 2;
        // At most half full, so a probe always ends at a free slot within a few steps.
        _maxSlots = (int)System.Numerics.BitOperations.RoundUpToPowerOf2((uint)(_perTable * 2));
    }

    public int Count => _current.Count + _previous.Count;

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
        int hash = ByteArrayComparer.Hash(subject);
        int i = Find(_current, subject, hash);
        if (i >= 0)
        {
            result = _current.Slots[i].Value!;
            return true;
        }
        if (_previous.Count > 0 && (i = Find(_previous, subject, hash)) >= 0)
        {
            result = _previous.Slots[i].Value!;
            return true;
        }
        result = null;
        return false;
    }

    /// <summary>
    /// Caches a result computed at <paramref name="generation"/> (read before computing it). When full, the older
    /// entries are dropped (see remarks).
    /// </summary>
    public void Add(ReadOnlySpan<byte> subject, SubListResult result, long generation)
    {
        if (generation != _generation) Reset(generation);
        int hash = ByteArrayComparer.Hash(subject);
        int i = Find(_current, subject, hash);
        if (i >= 0)
        {
            _current.Slots[i].Value = result;
            return;
        }
        Put(subject.ToArray(), hash, result);
    }

    public void Clear()
    {
        Empty(_current);
        Empty(_previous);
    }

    private void Reset(long generation)
    {
        Clear();
        _generation = generation;
    }

    private static void Empty(Table table)
    {
        if (table.Count == 0) return;
        Array.Clear(table.Slots);
        table.Count = 0;
    }

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private static int Find(Table table, ReadOnlySpan<byte> key, int hash)
    {
        var slots = table.Slots;
        if (table.Count == 0) return -1;
        int mask = slots.Length - 1;
        for (int i = hash & mask; ; i = (i + 1) & mask)
        {
            ref var s = ref slots[i];
            if (s.Key is null) return -1;
            if (s.Hash == hash && key.SequenceEqual(s.Key)) return i;
        }
    }

    /// <summary>Adds a key absent from the current table (rotating the tables when it is full).</summary>
    private void Put(byte[] key, int hash, SubListResult value)
    {
        if (_current.Count >= _perTable)
        {
            (_current, _previous) = (_previous, _current);
            Empty(_current);
        }
        var table = _current;
        if ((table.Count + 1) * 2 > table.Slots.Length) Grow(table);
        var slots = table.Slots;
        int mask = slots.Length - 1;
        int i = hash & mask;
        while (slots[i].Key is not null) i = (i + 1) & mask;
        slots[i] = new Slot { Key = key, Value = value, Hash = hash };
        table.Count++;
    }

    private void Grow(Table table)
    {
        var old = table.Slots;
        int size = Math.Min(_maxSlots, Math.Max(8, old.Length * 2));
        if (size == old.Length) return;
        var slots = new Slot[size];
        int mask = size - 1;
        foreach (ref readonly var s in old.AsSpan())
        {
            if (s.Key is null) continue;
            int i = s.Hash & mask;
            while (slots[i].Key is not null) i = (i + 1) & mask;
            slots[i] = s;
        }
        table.Slots = slots;
    }
}
