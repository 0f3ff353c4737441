using NatsBroker.Contracts;

namespace NatsBroker.Storage.Internal;

/// <summary>
/// Read-only queries over the indexes: the stream state, per-subject counts, messages matching a filter.
/// </summary>
internal abstract partial class IndexedStore
{
    public StreamState GetState()
    {
        // The first message's timestamp may sit in an index page still on disk: read outside the lock (see FetchDeferredPage).
        var d = new DeferredRead { Allowed = true };
        StreamState state;
        while (!TryGetState(ref d, out state)) FetchDeferredPage(ref d);
        return state;
    }

    private bool TryGetState(ref DeferredRead d, out StreamState state)
    {
        lock (Sync)
        {
            if (!IsClosed && (Limits.MaxAge > TimeSpan.Zero || _ttl.Count > 0)) ExpireLocked(NowNanos());
            long firstTs;
            Index.DeferPaging = d.PagesFetched < MaxDeferredPages;
            try
            {
                firstTs = Msgs > 0 ? Index.Get(First).Timestamp : 0;
                if (DeferredPageMissed(ref d))
                {
                    state = default;
                    return false;
                }
            }
            finally
            {
                Index.DeferPaging = false;
            }
            state = new StreamState
            {
                Messages = Msgs,
                Bytes = Bytes,
                FirstSequence = Msgs > 0 ? First : Last + 1,
                FirstTimestamp = firstTs,
                LastSequence = Last,
                LastTimestamp = LastTs,
                Deleted = Msgs > 0 ? Last - First + 1 - Msgs : 0,
                Subjects = Subjects.Count,
                Consumers = _consumers.Count,
            };
            return true;
        }
    }

    public int GetSubjectCounts(ReadOnlySpan<byte> filter, IDictionary<string, ulong> into)
    {
        lock (Sync)
        {
            int n = 0;
            foreach (var s in Subjects.All)
            {
                if (!SubjectMatch.Matches(s.Key, filter)) continue;
                var key = System.Text.Encoding.UTF8.GetString(s.Key);
                into[key] = into.TryGetValue(key, out var c) ? c + s.Count : s.Count;
                n++;
            }
            return n;
        }
    }

    public ulong CountMatching(ReadOnlySpan<byte> filter)
    {
        lock (Sync)
        {
            if (SubjectMatch.IsAll(filter)) return Msgs;
            if (SubjectMatch.IsLiteral(filter)) return Subjects.Find(filter)?.Count ?? 0;
            ulong n = 0;
            foreach (var s in Subjects.All) if (SubjectMatch.Matches(s.Key, filter)) n += s.Count;
            return n;
        }
    }
}
