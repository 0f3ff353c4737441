using System.Runtime.CompilerServices;
using NatsBroker.Contracts;

namespace NatsBroker.Storage.Internal;

/// <summary>
/// Loads (by sequence, last by subject, next matching a filter) and the deferred-read machinery that keeps
/// disk reads (of records and of paged index chunks) outside the store lock.
/// </summary>
internal abstract partial class IndexedStore
{
    private int[] _matchGen = new int[64];
    private bool[] _matchVal = new bool[64];
    private int _gen;

    /// <summary>
    /// What the loads of an engine that never defers hand to <see cref="ReadMessage"/>: never written (not
    /// <see cref="DeferredRead.Allowed"/>, so no engine may defer through it), read only under the lock.
    /// </summary>
    private DeferredRead _noDeferral;

    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    public StoreStatus Load(ulong sequence, StoredMessage into)
    {
        if (!_readsDefer)
        {
            lock (Sync) return LoadCoreLocked(sequence, into, ref _noDeferral);
        }
        var d = new DeferredRead { Allowed = true };
        var st = LoadCore(sequence, into, ref d);
        // The usual load: found in memory under the lock, nothing deferred.
        if (!d.PagePending && !d.Pending) return st;
        while (d.PagePending && FetchDeferredPage(ref d)) st = LoadCore(sequence, into, ref d);
        if (!d.Pending) return st;
        st = CompleteRead(ref d, into, out bool retry);
        if (!retry) return st;
        d = default;
        return LoadCore(sequence, into, ref d);
    }

    // Inlined into Load (AggressiveOptimization code does not inline by profile): one call level less per load.
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private StoreStatus LoadCore(ulong sequence, StoredMessage into, ref DeferredRead d)
    {
        lock (Sync)
        {
            // No index page on disk (the usual case; only a fast open leaves some): no page can be missed, so none of
            // the deferred-paging bookkeeping below (a try/finally and two index calls per load) is needed.
            if (Index.PagedChunks == 0) return LoadCoreLocked(sequence, into, ref d);
            Index.DeferPaging = d.Allowed && d.PagesFetched < MaxDeferredPages;
            try
            {
                var st = LoadCoreLocked(sequence, into, ref d);
                return DeferredPageMissed(ref d) ? StoreStatus.Ok : st;
            }
            finally
            {
                Index.DeferPaging = false;
            }
        }
    }

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private StoreStatus LoadCoreLocked(ulong sequence, StoredMessage into, ref DeferredRead d)
    {
        if (IsClosed) return StoreStatus.Closed;
        if (sequence < First || sequence > Last || !Index.Holds(sequence)) return StoreStatus.NotFound;
        ref var e = ref Index.Get(sequence);
        if (!e.IsLive || (Index.HasMiss && DeferredPageMissed(ref d))) return StoreStatus.Deleted;
        return ReadMessage(sequence, e, Subjects.ById(e.SubjectId), into, ref d);
    }

    public StoreStatus LoadLast(ReadOnlySpan<byte> subject, StoredMessage into)
    {
        if (!_readsDefer)
        {
            lock (Sync) return LoadLastCoreLocked(subject, into, ref _noDeferral);
        }
        var d = new DeferredRead { Allowed = true };
        var st = LoadLastCore(subject, into, ref d);
        if (!d.PagePending && !d.Pending) return st;
        while (d.PagePending && FetchDeferredPage(ref d)) st = LoadLastCore(subject, into, ref d);
        if (!d.Pending) return st;
        st = CompleteRead(ref d, into, out bool retry);
        if (!retry) return st;
        d = default;
        return LoadLastCore(subject, into, ref d);
    }

    /// <summary>
    /// One pass of <see cref="LoadLast"/> under the lock with every disk read deferred; a deferred read (of the record
    /// or of an index page) is not done but reported as <see cref="StoreStatus.WouldBlock"/>.
    /// </summary>
    public StoreStatus LoadLastCached(ReadOnlySpan<byte> subject, StoredMessage into)
    {
        var d = new DeferredRead { Allowed = true, CachedOnly = true };
        var st = LoadLastCore(subject, into, ref d);
        return d.Pending || d.PagePending ? StoreStatus.WouldBlock : st;
    }

    private StoreStatus LoadLastCore(ReadOnlySpan<byte> subject, StoredMessage into, ref DeferredRead d)
    {
        lock (Sync)
        {
            // As in LoadCore: without index pages on disk nothing can be missed.
            if (Index.PagedChunks == 0) return LoadLastCoreLocked(subject, into, ref d);
            Index.DeferPaging = d.Allowed && d.PagesFetched < MaxDeferredPages;
            try
            {
                var st = LoadLastCoreLocked(subject, into, ref d);
                return DeferredPageMissed(ref d) ? StoreStatus.Ok : st;
            }
            finally
            {
                Index.DeferPaging = false;
            }
        }
    }

    private StoreStatus LoadLastCoreLocked(ReadOnlySpan<byte> subject, StoredMessage into, ref DeferredRead d)
    {
        if (IsClosed) return StoreStatus.Closed;
        if (Msgs == 0) return StoreStatus.NotFound;
        ulong seq = 0;
        if (SubjectMatch.IsAll(subject))
        {
            seq = Last;
            while (seq >= First && !Index.Get(seq).IsLive && !Index.HasMiss) seq--;
        }
        else if (SubjectMatch.IsLiteral(subject))
        {
            var s = Subjects.Find(subject);
            if (s is null) return StoreStatus.NotFound;
            seq = s.Last;
        }
        else
        {
            foreach (var s in Subjects.All)
            {
                if (s.Last > seq && SubjectMatch.Matches(s.Key, subject)) seq = s.Last;
            }
        }
        if (seq == 0 || seq < First) return StoreStatus.NotFound;
        ref var e = ref Index.Get(seq);
        if (Index.HasMiss && DeferredPageMissed(ref d)) return StoreStatus.Ok;
        return ReadMessage(seq, e, Subjects.ById(e.SubjectId), into, ref d);
    }

    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    public StoreStatus LoadNext(ReadOnlySpan<byte> filter, ulong fromSequence, StoredMessage into)
    {
        if (!_readsDefer)
        {
            lock (Sync) return LoadNextCoreLocked(filter, fromSequence, into, ref _noDeferral);
        }
        var d = new DeferredRead { Allowed = true };
        var st = LoadNextCore(filter, fromSequence, into, ref d);
        if (!d.PagePending && !d.Pending) return st;
        while (d.PagePending && FetchDeferredPage(ref d)) st = LoadNextCore(filter, fromSequence, into, ref d);
        if (!d.Pending) return st;
        st = CompleteRead(ref d, into, out bool retry);
        if (!retry) return st;
        d = default;
        return LoadNextCore(filter, fromSequence, into, ref d);
    }

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private StoreStatus LoadNextCore(ReadOnlySpan<byte> filter, ulong fromSequence, StoredMessage into, ref DeferredRead d)
    {
        lock (Sync)
        {
            // As in LoadCore: without index pages on disk nothing can be missed.
            if (Index.PagedChunks == 0) return LoadNextCoreLocked(filter, fromSequence, into, ref d);
            Index.DeferPaging = d.Allowed && d.PagesFetched < MaxDeferredPages;
            try
            {
                var st = LoadNextCoreLocked(filter, fromSequence, into, ref d);
                return DeferredPageMissed(ref d) ? StoreStatus.Ok : st;
            }
            finally
            {
                Index.DeferPaging = false;
            }
        }
    }

    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    private StoreStatus LoadNextCoreLocked(ReadOnlySpan<byte> filter, ulong fromSequence, StoredMessage into, ref DeferredRead d)
    {
        if (IsClosed) return StoreStatus.Closed;
        if (Msgs == 0) return StoreStatus.NotFound;
        ulong seq = Math.Max(fromSequence, First);
        ulong found = 0;
        if (SubjectMatch.IsAll(filter))
        {
            // A sequential reader mostly asks for a live sequence: NextLive checks that one inline before its walk.
            found = Index.NextLive(seq, Last);
        }
        else if (SubjectMatch.IsLiteral(filter))
        {
            var s = Subjects.Find(filter);
            if (s is null || s.Last < seq) return StoreStatus.NotFound;
            if (seq <= s.First) found = s.First;
            else
            {
                // Walk forward over sequences and backward over the subject's list at once:
                // O(min(gap to the next match, messages of the subject after 'seq')).
                ulong back = s.Last, fwd = seq;
                while (true)
                {
                    if (Index.Get(fwd).SubjectId == s.Id) { found = fwd; break; }
                    fwd++;
                    ulong p = Index.Get(back).Prev;
                    if (p < seq) { found = back; break; }
                    back = p;
                }
            }
        }
        else
        {
            int gen = NextGen();
            for (; seq <= Last; seq++)
            {
                seq = Index.NextLive(seq, Last);
                if (seq == 0) break;
                ref var e = ref Index.Get(seq);
                int id = e.SubjectId;
                if (_matchGen[id] != gen)
                {
                    _matchGen[id] = gen;
                    _matchVal[id] = SubjectMatch.Matches(Subjects.ById(id).Key, filter);
                }
                if (_matchVal[id]) { found = seq; break; }
            }
        }
        if (found == 0) return StoreStatus.NotFound;
        ref var fe = ref Index.Get(found);
        if (Index.HasMiss && DeferredPageMissed(ref d)) return StoreStatus.Ok;
        return ReadMessage(found, fe, Subjects.ById(fe.SubjectId), into, ref d);
    }

    /// <summary>
    /// Loads after a fast open touch index pages still on disk (file engine). A load under the lock does not read
    /// them (<see cref="SequenceIndex.DeferPaging"/>): it records the page and gives up; the page is read here,
    /// without the lock, installed under it, and the load starts again, so a reader waiting on the disk never
    /// stalls appends (issue 9, "reads never block appends"). A walk may touch several pages: after
    /// <see cref="MaxDeferredPages"/> of them, or a page that cannot be read detached, the last attempt pages in
    /// under the lock (which reports a damaged page exactly).
    /// </summary>
    private bool FetchDeferredPage(ref DeferredRead d)
    {
        if (!d.PagePending) return false;
        d.PagePending = false;
        d.PagesFetched++;
        var page = Index.ReadDetached(d.PageChunk);
        if (page is null)
        {
            d.PagesFetched = MaxDeferredPages;
            return true;
        }
        lock (Sync) Index.InstallDetached(d.PageChunk, page);
        return true;
    }

    /// <summary>Pages a single load may read outside the lock before it pages in under it.</summary>
    private const int MaxDeferredPages = 64;

    /// <summary>Under the lock, after a load touched the index: true if it missed a paged chunk (what it found is void).</summary>
    private bool DeferredPageMissed(ref DeferredRead d)
    {
        if (!Index.TakeMiss(out ulong chunk)) return false;
        d.PagePending = true;
        d.PageChunk = chunk;
        return true;
    }

    private int NextGen()
    {
        if (_matchGen.Length < Subjects.IdCapacity)
        {
            _matchGen = new int[Subjects.IdCapacity];
            _matchVal = new bool[Subjects.IdCapacity];
        }
        if (++_gen == int.MaxValue)
        {
            Array.Clear(_matchGen);
            _gen = 1;
        }
        return _gen;
    }
}
