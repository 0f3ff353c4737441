using System.Runtime.CompilerServices;
using NatsBroker.Contracts;

namespace NatsBroker.Storage.Internal;

/// <summary>
/// Bulk removal: purge (all, by subject, by filter, up to a sequence, keeping some), compact, and skipping
/// sequences.
/// </summary>
internal abstract partial class IndexedStore
{
    [MethodImpl(MethodImplOptions.AggressiveOptimization)] // see PurgeSubjectLocked
    public PurgeResult Purge(ReadOnlySpan<byte> filter = default, ulong upToSequence = 0, ulong keep = 0)
    {
        lock (Sync)
        {
            var refused = WriteRefusal();
            if (refused != StoreStatus.Ok) return new(refused, 0);
            ulong before = Msgs;
            bool all = SubjectMatch.IsAll(filter);
            if (all && keep == 0 && upToSequence == 0)
            {
                if (Msgs == 0 && First == Last + 1) return new(StoreStatus.Ok, 0);
                Subjects.Clear();
                Msgs = 0;
                Bytes = 0;
                First = Last + 1;
                Index.Reset(Last + 1);
                _ttl.Clear();
                FloorDirty = false;
                return new(OnPurgedAll(Last + 1), before);
            }
            if (all)
            {
                while (Msgs > keep && (upToSequence == 0 || First < upToSequence)) RemoveLocked(First, RemoveKind.Lazy);
            }
            else if (SubjectMatch.IsLiteral(filter))
            {
                var s = Subjects.Find(filter);
                if (s is not null) PurgeSubjectLocked(s, upToSequence, keep);
            }
            else
            {
                var matched = new List<SubjectInfo>();
                ulong total = 0;
                foreach (var s in Subjects.All)
                {
                    if (SubjectMatch.Matches(s.Key, filter)) { matched.Add(s); total += s.Count; }
                }
                if (keep == 0)
                {
                    foreach (var s in matched) PurgeSubjectLocked(s, upToSequence, 0);
                }
                else
                {
                    // Remove the oldest matching messages across subjects until 'keep' remain: a k-way merge by first sequence.
                    var pq = new PriorityQueue<SubjectInfo, ulong>();
                    foreach (var s in matched) pq.Enqueue(s, s.First);
                    while (total > keep && pq.TryDequeue(out var s, out ulong f))
                    {
                        if (upToSequence != 0 && f >= upToSequence) break;
                        RemoveLocked(f, RemoveKind.Durable);
                        total--;
                        if (s.Count > 0) pq.Enqueue(s, s.First);
                    }
                }
            }
            var st = OnOperationDone(FloorDirty);
            return new(st, before - Msgs);
        }
    }

    /// <summary>
    /// Removes the oldest messages of <paramref name="s"/> until <paramref name="keep"/> remain or the next is at or
    /// above <paramref name="upTo"/> (0 = no bound). The run is unlinked from the subject's list once, at its end:
    /// each removed entry's successor is removed too, so rewriting its back link per removal (as
    /// <see cref="RemoveLocked"/> does) would be wasted (measured: the memory engine's purge row, 20 removals per
    /// purge, was 0.88x of the code before the sparse index with one <see cref="RemoveLocked"/> per message).
    /// </summary>
    // Fully optimized from its first call: a purge loops here, and at tier 0 (a JIT build before the method has been
    // called often) the loop ran at under half the speed of the RemoveLocked calls it replaced, which other paths had
    // already made hot (storage bench: 0.5-0.6x of the pre-issue code until tier 1 arrived).
    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    private void PurgeSubjectLocked(SubjectInfo s, ulong upTo, ulong keep)
    {
        ulong seq = s.First;
        ulong removed = 0;
        while (s.Count - removed > keep && seq != 0 && (upTo == 0 || seq < upTo))
        {
            ref var e = ref Index.GetForWrite(seq);
            ulong next = e.Next;
            OnRemoved(seq, ref e, KindAt(seq, RemoveKind.Durable));
            // The subject's list still starts at a removed entry here; AdvanceFirst reads only liveness.
            ReleaseEntryLocked(seq, ref e);
            removed++;
            seq = next;
        }
        if (removed == 0) return;
        s.Count -= removed;
        s.First = seq;
        if (seq != 0) Index.GetForWrite(seq).Prev = 0;
        else s.Last = 0;
        if (s.Count == 0) Subjects.Remove(s);
    }

    public PurgeResult Compact(ulong sequence)
    {
        lock (Sync)
        {
            var refused = WriteRefusal();
            if (refused != StoreStatus.Ok) return new(refused, 0);
            if (sequence <= First) return new(StoreStatus.Ok, 0);
            ulong before = Msgs;
            if (sequence > Last)
            {
                // Everything goes and the stream continues at 'sequence'.
                Subjects.Clear();
                Msgs = 0;
                Bytes = 0;
                _ttl.Clear();
                Last = sequence - 1;
                First = sequence;
                Index.Reset(sequence);
                return new(OnPurgedAll(sequence), before);
            }
            while (Msgs > 0 && First < sequence) RemoveLocked(First, RemoveKind.Lazy);
            if (Msgs == 0) First = Last + 1;
            return new(OnOperationDone(true), before - Msgs);
        }
    }

    public StoreStatus SkipTo(ulong lastSequence)
    {
        lock (Sync)
        {
            var refused = WriteRefusal();
            if (refused != StoreStatus.Ok) return refused;
            return SkipLocked(lastSequence, persist: true);
        }
    }

    private StoreStatus SkipLocked(ulong last, bool persist)
    {
        if (last <= Last) return StoreStatus.Ok;
        if (Msgs == 0)
        {
            Last = last;
            First = last + 1;
            Index.Reset(last + 1);
            return OnPurgedAll(last + 1);
        }
        if (last - Last > 1UL << 26) return StoreStatus.InvalidArgument;
        Index.AdvanceTo(last + 1);
        Last = last;
        return persist ? OnSkipped(last) : StoreStatus.Ok;
    }

    /// <summary>Sequences up to <paramref name="last"/> were skipped while messages remain.</summary>
    protected virtual StoreStatus OnSkipped(ulong last) => StoreStatus.Ok;
}
