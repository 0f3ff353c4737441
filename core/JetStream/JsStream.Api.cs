using System.Text;
using NatsBroker.Contracts;
using NatsBroker.JetStream.Api;

namespace NatsBroker.JetStream;

// What the API asks of a stream: info, purge, message get/delete, and retention after acks.
internal sealed partial class JsStream
{
    /// <summary>nats-server's limit on subject details in one STREAM.INFO (JSMaxSubjectDetails).</summary>
    private const int MaxSubjectDetails = 100_000;

    public StreamInfo Info(string? subjectsFilter = null, bool deletedDetails = false) => Info(subjectsFilter, deletedDetails, 0, out _);

    /// <summary>
    /// The info with subject details paged as jsStreamInfoRequest pages them: <paramref name="subjectsTotal"/> is the
    /// number of subjects matching <paramref name="subjectsFilter"/>; the details hold at most 100,000 of them from
    /// <paramref name="subjectsOffset"/> on, in subject order (all of them, unsorted, when they fit from offset 0).
    /// </summary>
    public StreamInfo Info(string? subjectsFilter, bool deletedDetails, int subjectsOffset, out int subjectsTotal)
    {
        subjectsTotal = 0;
        var st = Store.GetState();
        var state = new StreamStateInfo
        {
            Messages = st.Messages,
            Bytes = st.Bytes,
            // A stream that never held a message reports first_seq 0, as nats-server's stores do.
            FirstSeq = st.LastSequence == 0 && st.Messages == 0 ? 0 : st.FirstSequence,
            FirstTs = GoTime.FromUnixNanos(st.Messages == 0 ? 0 : st.FirstTimestamp),
            LastSeq = st.LastSequence,
            LastTs = GoTime.FromUnixNanos(st.LastTimestamp),
            NumDeleted = st.Deleted > 0 ? (long)st.Deleted : null,
            NumSubjects = st.Subjects > 0 ? st.Subjects : null,
            ConsumerCount = ConsumerCount,
        };
        if (!string.IsNullOrEmpty(subjectsFilter))
        {
            var subjects = new Dictionary<string, ulong>(StringComparer.Ordinal);
            Store.GetSubjectCounts(subjectsFilter == ">" ? default : Encoding.UTF8.GetBytes(subjectsFilter), subjects);
            subjectsTotal = subjects.Count;
            if (subjects.Count > 0 && subjectsOffset == 0 && subjects.Count <= MaxSubjectDetails) state.Subjects = subjects;
            else if (subjects.Count > subjectsOffset)
                state.Subjects = subjects.OrderBy(kv => kv.Key, StringComparer.Ordinal).Skip(subjectsOffset).Take(MaxSubjectDetails).ToDictionary(StringComparer.Ordinal);
        }
        if (deletedDetails && st.Deleted > 0)
        {
            var deleted = new List<ulong>();
            var probe = new StoredMessage(64);
            for (ulong s = st.FirstSequence; s <= st.LastSequence; s++)
            {
                if (Store.Load(s, probe) == StoreStatus.Deleted) deleted.Add(s);
            }
            state.Deleted = [.. deleted];
        }
        var info = new StreamInfo
        {
            Config = Config,
            Created = Created,
            State = state,
            Cluster = new ClusterInfo { Leader = Js.ServerName },
            Ts = DateTime.UtcNow,
        };
        AddSourcingInfo(info);
        return info;
    }

    public ApiError? Purge(StreamPurgeRequest req, out ulong purged)
    {
        purged = 0;
        var cfg = Config;
        if (cfg.Sealed) return JsErrors.StreamSealed;
        if (cfg.DenyPurge) return JsErrors.StreamPurgeFailed("stream purge not permitted");
        if (req.Seq is > 0 && req.Keep is > 0) return JsErrors.BadRequest;
        var filter = string.IsNullOrEmpty(req.Filter) || req.Filter == ">" ? default : Encoding.UTF8.GetBytes(req.Filter);
        var r = Store.Purge(filter, req.Seq ?? 0, req.Keep ?? 0);
        if (r.Status != StoreStatus.Ok) return JsErrors.StreamPurgeFailed(Store.LastError ?? r.Status.ToString());
        purged = r.Purged;
        foreach (var c in _consumerSnapshot) c.OnStreamChanged();
        return null;
    }

    /// <summary>jsMsgGetRequest's refusals of a request (before the stream is looked up): 10003 bad request.</summary>
    internal static ApiError? RefuseMsgGet(MsgGetRequest r)
    {
        if (r.Batch > 0 || r.MaxBytes > 0) return JsErrors.BadRequest;
        bool seq = r.Seq > 0, last = !string.IsNullOrEmpty(r.LastBySubj), next = !string.IsNullOrEmpty(r.NextBySubj), start = r.StartTime is not null;
        if ((seq && last) || (!seq && !last && !next && !start) || (seq && start) || (start && last) || (last && next)) return JsErrors.BadRequest;
        return null;
    }

    /// <summary>A request that passed <see cref="RefuseMsgGet"/>: by sequence, next by subject from a sequence, or last by subject.</summary>
    public ApiError? GetMessage(MsgGetRequest req, StoredMessage into)
    {
        ulong seq = req.StartTime is { } start ? SequenceFromTime(GoTime.ToUnixNanos(start), into) : req.Seq ?? 0;
        StoreStatus status;
        if (seq > 0 && string.IsNullOrEmpty(req.NextBySubj)) status = Store.Load(seq, into);
        else if (!string.IsNullOrEmpty(req.NextBySubj)) status = Store.LoadNext(Encoding.UTF8.GetBytes(req.NextBySubj), Math.Max(1, seq), into);
        else status = Store.LoadLast(Encoding.UTF8.GetBytes(req.LastBySubj ?? ""), into);
        return status == StoreStatus.Ok ? null : JsErrors.NoMessageFound;
    }

    /// <summary>The first sequence stored at or after <paramref name="unixNanos"/>, or last+1 (store GetSeqFromTime), by a scan.</summary>
    private ulong SequenceFromTime(long unixNanos, StoredMessage probe)
    {
        var st = Store.GetState();
        for (ulong s = st.FirstSequence; s <= st.LastSequence && s > 0; s++)
        {
            if (Store.Load(s, probe) == StoreStatus.Ok && probe.Timestamp >= unixNanos) return s;
        }
        return st.LastSequence + 1;
    }

    public ApiError? DeleteMessage(MsgDeleteRequest req)
    {
        var cfg = Config;
        if (cfg.Sealed) return JsErrors.StreamSealed;
        if (cfg.DenyDelete) return JsErrors.StreamMsgDeleteFailed("message delete not permitted");
        var status = req.NoErase == true ? Store.Remove(req.Seq) : Store.Erase(req.Seq);
        if (status is StoreStatus.NotFound or StoreStatus.Deleted)
        {
            // nats-server's file store tells a sequence outside its blocks apart (filestore.go removeMsg):
            // 0 or below the first sequence "no message found", above the last "stream store EOF"; its memory
            // store, and a deleted sequence inside a block, answer 10043.
            if (cfg.Storage == StorageType.File)
            {
                var st = Store.GetState();
                if (req.Seq == 0 || (req.Seq < st.FirstSequence && req.Seq <= st.LastSequence)) return JsErrors.StreamMsgDeleteFailed("no message found");
                if (req.Seq > st.LastSequence) return JsErrors.StreamMsgDeleteFailed("stream store EOF");
            }
            return JsErrors.SequenceNotFound(req.Seq);
        }
        if (status != StoreStatus.Ok) return JsErrors.StreamMsgDeleteFailed(Store.LastError ?? status.ToString());
        foreach (var c in _consumerSnapshot) c.OnStreamChanged();
        return null;
    }

    /// <summary>
    /// After acks on a work-queue or interest stream (called by a consumer with no lock held): remove messages no
    /// consumer still needs (nats-server stream.go ackMsg).
    /// </summary>
    internal void OnConsumerAcked(List<ulong> sequences)
    {
        var cfg = Config;
        if (cfg.Retention == RetentionPolicy.WorkQueue)
        {
            foreach (var s in sequences) Store.Remove(s);
            return;
        }
        if (cfg.Retention != RetentionPolicy.Interest) return;
        var probe = new StoredMessage(128);
        var consumers = _consumerSnapshot;
        foreach (var s in sequences)
        {
            if (Store.Load(s, probe) != StoreStatus.Ok) continue;
            bool done = true;
            foreach (var c in consumers)
            {
                if (!c.IsDoneWith(s, probe.Subject)) { done = false; break; }
            }
            if (done) Store.Remove(s);
        }
    }
}
