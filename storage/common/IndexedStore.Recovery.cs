using NatsBroker.Contracts;

namespace NatsBroker.Storage.Internal;

/// <summary>
/// What an engine calls while it rebuilds the indexes at open: recovered messages and TTLs, counters from an
/// index image, the last sequence and floor; and the pending TTLs an index image records.
/// </summary>
internal abstract partial class IndexedStore
{
    /// <summary>Registers a recovered message's TTL (engines call this while rebuilding).</summary>
    protected void TrackTtl(ulong seq, long expires) => _ttl.Enqueue(seq, expires);

    /// <summary>
    /// Adds a recovered message to the indexes (engines call this at open, in sequence order); <paramref name="size"/>
    /// is its <see cref="StoredSize"/>.
    /// </summary>
    protected ref IndexEntry RecoverAdd(ulong seq, ReadOnlySpan<byte> subject, long ts, int size)
    {
        if (Msgs == 0 && Index.End != seq) Index.Reset(seq);
        Index.AdvanceTo(seq);
        var subj = Subjects.GetOrAdd(subject);
        ref var e = ref Index.Add();
        Index.MarkLive(seq);
        e.Timestamp = ts;
        e.Size = size;
        LinkLive(ref e, subj, seq);
        if (seq > Last) { Last = seq; LastTs = ts; }
        return ref e;
    }

    /// <summary>The stream counters as an index image recorded them (fast open; the engine restored the indexes).</summary>
    protected void RestoreCounters(ulong first, ulong last, long lastTs, ulong msgs, ulong bytes)
    {
        First = first;
        Last = last;
        LastTs = lastTs;
        Msgs = msgs;
        Bytes = bytes;
        FloorDirty = false;
    }

    /// <summary>Pending per-message TTL expiries (sequence, expiry in Unix ns), for an index image.</summary>
    protected IEnumerable<(ulong Seq, long Expires)> PendingTtls()
    {
        foreach (var (seq, expires) in _ttl.UnorderedItems) yield return (seq, expires);
    }

    /// <summary>Sets the last sequence after recovery (from block headers, skip and floor records).</summary>
    protected void RecoverLast(ulong last, ulong floor)
    {
        if (floor > First || Msgs == 0)
        {
            // Drop everything below the floor without persisting anything.
            while (Msgs > 0 && First < floor) RemoveLocked(First, RemoveKind.Lazy);
        }
        if (last > Last) Last = last;
        if (Msgs == 0)
        {
            if (floor > Last + 1) Last = floor - 1;
            First = Last + 1;
            Index.Reset(Last + 1);
        }
        else
        {
            Index.AdvanceTo(Last + 1);
        }
        FloorDirty = false;
    }

    /// <summary>
    /// A live entry (its Size set) joins the tail of its subject's list and the stream counters: the one place an
    /// append and a recovery both go through, so the list links and Msgs/Bytes cannot drift apart between them.
    /// </summary>
    [System.Runtime.CompilerServices.MethodImpl(System.Runtime.CompilerServices.MethodImplOptions.AggressiveInlining)]
    private void LinkLive(ref IndexEntry e, SubjectInfo subj, ulong seq)
    {
        e.SubjectId = subj.Id;
        e.Prev = subj.Last;
        if (subj.Last != 0) Index.GetForWrite(subj.Last).Next = seq;
        else subj.First = seq;
        subj.Last = seq;
        subj.Count++;
        if (Msgs == 0) First = seq;
        Msgs++;
        Bytes += (ulong)e.Size;
    }
}
