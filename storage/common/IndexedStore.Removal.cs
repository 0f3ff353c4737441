using System.Runtime.CompilerServices;
using NatsBroker.Contracts;

namespace NatsBroker.Storage.Internal;

/// <summary>
/// Removal of one message (remove, erase, and every limit or expiry removal): unlinking it from its subject,
/// releasing its index entry, moving the first sequence.
/// </summary>
internal abstract partial class IndexedStore
{
    protected StoreStatus RemoveLocked(ulong seq, RemoveKind kind)
    {
        if (seq < First || seq > Last || !Index.Holds(seq)) return StoreStatus.NotFound;
        ref var e = ref Index.GetForWrite(seq);
        if (!e.IsLive) return StoreStatus.Deleted;
        OnRemoved(seq, ref e, KindAt(seq, kind));
        var s = Subjects.ById(e.SubjectId);
        if (e.Prev != 0) Index.GetForWrite(e.Prev).Next = e.Next;
        else s.First = e.Next;
        if (e.Next != 0) Index.GetForWrite(e.Next).Prev = e.Prev;
        else s.Last = e.Prev;
        s.Count--;
        if (s.Count == 0) Subjects.Remove(s);
        ReleaseEntryLocked(seq, ref e);
        return StoreStatus.Ok;
    }

    /// <summary>A removal at the stream's first sequence needs no tombstone: the floor covers it.</summary>
    private RemoveKind KindAt(ulong seq, RemoveKind kind) => kind == RemoveKind.Durable && seq == First ? RemoveKind.Lazy : kind;

    /// <summary>
    /// The end of every removal, once the engine was told (<see cref="OnRemoved"/>) and the entry is out of its
    /// subject's list (or its whole run is, <see cref="PurgeSubjectLocked"/>): the counters, the entry, the index, First.
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private void ReleaseEntryLocked(ulong seq, ref IndexEntry e)
    {
        Msgs--;
        Bytes -= (ulong)e.Size;
        e.SubjectId = -1;
        e.Prev = e.Next = 0;
        Index.MarkDead(seq); // may release the chunk: 'e' is not used after this
        if (seq == First) AdvanceFirst();
    }

    /// <summary>The message at <see cref="First"/> was just removed: First moves to the next live one.</summary>
    private void AdvanceFirst()
    {
        FloorDirty = true;
        if (Msgs == 0)
        {
            First = Last + 1;
            Index.Reset(Last + 1);
            return;
        }
        // From First + 1: First is dead now, and NextLive finds the usual answer (the next sequence) inline.
        ulong next = Index.NextLive(First + 1, Last);
        First = next != 0 ? next : Last + 1;
        Index.TrimBelow(First);
    }

    public StoreStatus Remove(ulong sequence) => RemoveOp(sequence, RemoveKind.Durable);
    public StoreStatus Erase(ulong sequence) => RemoveOp(sequence, RemoveKind.Erase);

    private StoreStatus RemoveOp(ulong sequence, RemoveKind kind)
    {
        lock (Sync)
        {
            var refused = WriteRefusal();
            if (refused != StoreStatus.Ok) return refused;
            var st = RemoveLocked(sequence, kind);
            if (st != StoreStatus.Ok) return st;
            return OnOperationDone(FloorDirty);
        }
    }
}
