using System.Buffers.Binary;
using System.Runtime.InteropServices;

namespace NatsBroker.Storage.Internal;

/// <summary>
/// The compact page of an index chunk with few live entries (file engine index image version 3, FORMAT.md "Index
/// image"): the chunk's n live entries in the in-memory layout (48 bytes each, ascending offset), then their n offsets
/// in the chunk (u16 little-endian, strictly ascending). Its length is 50 n bytes; every offset it does not list reads
/// as a deleted entry, as in a dense page written from a sparse chunk. A store whose survivors are scattered (a KV
/// bucket, a stream after random removals) keeps one live entry in many chunks: a dense page is 48 KiB for each of
/// them, a compact one 50 bytes.
/// </summary>
internal static class CompactIndexPage
{
    /// <summary>Bytes per live entry: the entry and its offset.</summary>
    public const int BytesPerEntry = SequenceIndex.EntrySize + sizeof(ushort);

    /// <summary>A chunk with at most this many live entries is written compact (the same bound as an in-memory sparse chunk).</summary>
    public const int MaxEntries = SequenceIndex.SparseMax;

    /// <summary>Writes the live entries of a dense chunk; the page's length.</summary>
    public static int Encode(ReadOnlySpan<IndexEntry> dense, int live, Span<byte> into)
    {
        var entries = MemoryMarshal.Cast<byte, IndexEntry>(into[..(live * SequenceIndex.EntrySize)]);
        var offsets = into.Slice(live * SequenceIndex.EntrySize, live * sizeof(ushort));
        int n = 0;
        for (int i = 0; i < dense.Length && n < live; i++)
        {
            if (!dense[i].IsLive) continue;
            entries[n] = dense[i];
            BinaryPrimitives.WriteUInt16LittleEndian(offsets[(n * sizeof(ushort))..], (ushort)i);
            n++;
        }
        if (n != live) throw new InvalidOperationException($"index chunk holds {n} live entries, not {live}");
        return live * BytesPerEntry;
    }

    /// <summary>Writes the live entries of a sparse chunk (its dead slots are left out); the page's length.</summary>
    public static int Encode(SparseChunk sparse, int live, Span<byte> into)
    {
        var entries = MemoryMarshal.Cast<byte, IndexEntry>(into[..(live * SequenceIndex.EntrySize)]);
        var offsets = into.Slice(live * SequenceIndex.EntrySize, live * sizeof(ushort));
        int n = 0;
        for (int i = 0; i < sparse.Count && n < live; i++)
        {
            if (!sparse.Entries[i].IsLive) continue;
            entries[n] = sparse.Entries[i];
            BinaryPrimitives.WriteUInt16LittleEndian(offsets[(n * sizeof(ushort))..], sparse.Offsets[i]);
            n++;
        }
        if (n != live) throw new InvalidOperationException($"sparse index chunk holds {n} live entries, not {live}");
        return live * BytesPerEntry;
    }

    /// <summary>
    /// Expands a compact page into the dense form (<see cref="SequenceIndex.EntriesPerChunk"/> entries); false with
    /// <paramref name="error"/> if it is malformed (a length that is not a whole number of entries, offsets out of
    /// order or out of the chunk, an entry that is not live). The page's checksum was verified by the caller.
    /// </summary>
    public static bool Decode(ReadOnlySpan<byte> page, Span<IndexEntry> dense, out string? error)
    {
        error = null;
        if (page.Length % BytesPerEntry != 0 || page.Length / BytesPerEntry > dense.Length)
        {
            error = $"compact index page of {page.Length} bytes is not a whole number of entries";
            return false;
        }
        int n = page.Length / BytesPerEntry;
        var entries = MemoryMarshal.Cast<byte, IndexEntry>(page[..(n * SequenceIndex.EntrySize)]);
        var offsets = page.Slice(n * SequenceIndex.EntrySize, n * sizeof(ushort));
        var dead = default(IndexEntry);
        dead.SubjectId = -1;
        dead.Location = -1;
        dense.Fill(dead);
        int prev = -1;
        for (int i = 0; i < n; i++)
        {
            int off = BinaryPrimitives.ReadUInt16LittleEndian(offsets[(i * sizeof(ushort))..]);
            if (off <= prev || off >= dense.Length || !entries[i].IsLive)
            {
                error = $"compact index page entry {i} (offset {off}) is out of order, out of the chunk or not live";
                return false;
            }
            dense[off] = entries[i];
            prev = off;
        }
        return true;
    }
}
