using System.Runtime.CompilerServices;

namespace NatsBroker.Storage.Internal;

/// <summary>
/// A chunk of the sequence index in its sparse form: the entries of its live sequences only, with their offsets in
/// the chunk (ascending), found by binary search. Entries removed after the chunk went sparse stay in place as dead
/// entries (<see cref="IndexEntry.SubjectId"/> -1) until the chunk is rebuilt smaller (<see cref="SequenceIndex"/>
/// shrinks it once its live entries fall to a quarter of its capacity), so a removal moves no memory.
/// </summary>
internal sealed class SparseChunk
{
    public readonly ushort[] Offsets;
    public readonly IndexEntry[] Entries;
    /// <summary>Slots in use, live or dead: [0, Count) of <see cref="Offsets"/> and <see cref="Entries"/>.</summary>
    public int Count;

    public SparseChunk(int capacity)
    {
        Offsets = new ushort[capacity];
        Entries = new IndexEntry[capacity];
    }

    public int Capacity => Entries.Length;

    /// <summary>Approximate managed bytes: two array headers, the object, 2 + 48 bytes per slot.</summary>
    public long HeapBytes => 88 + (long)Capacity * (sizeof(ushort) + SequenceIndex.EntrySize);

    /// <summary>Position of <paramref name="offset"/>, or a negative number if the chunk does not hold it.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public int IndexOf(int offset) => Offsets.AsSpan(0, Count).BinarySearch((ushort)offset);

    /// <summary>The smallest offset at or above <paramref name="offset"/> whose entry is live; -1 if none.</summary>
    public int NextLive(int offset)
    {
        int i = IndexOf(offset);
        if (i < 0) i = ~i;
        for (; i < Count; i++)
        {
            if (Entries[i].IsLive) return Offsets[i];
        }
        return -1;
    }

    /// <summary>Copies the live entries of <paramref name="from"/> (live or dead slots) into this empty chunk.</summary>
    public void FillFrom(SparseChunk from)
    {
        int n = 0;
        for (int i = 0; i < from.Count; i++)
        {
            if (!from.Entries[i].IsLive) continue;
            Offsets[n] = from.Offsets[i];
            Entries[n++] = from.Entries[i];
        }
        Count = n;
    }

    /// <summary>Copies the live entries of a dense chunk into this empty chunk (its capacity must hold them).</summary>
    public void FillFrom(ReadOnlySpan<IndexEntry> dense)
    {
        int n = 0;
        for (int i = 0; i < dense.Length; i++)
        {
            if (!dense[i].IsLive) continue;
            Offsets[n] = (ushort)i;
            Entries[n++] = dense[i];
        }
        Count = n;
    }

    /// <summary>The dense form (a page of an index image): every sequence not held reads as a deleted entry.</summary>
    public void ExpandInto(Span<IndexEntry> dense)
    {
        var dead = default(IndexEntry);
        dead.SubjectId = -1;
        dead.Location = -1;
        dense.Fill(dead);
        for (int i = 0; i < Count; i++)
        {
            if (Entries[i].IsLive) dense[Offsets[i]] = Entries[i];
        }
    }

    public SparseChunk Clone()
    {
        var c = new SparseChunk(Capacity) { Count = Count };
        Array.Copy(Offsets, c.Offsets, Count);
        Array.Copy(Entries, c.Entries, Count);
        return c;
    }
}
