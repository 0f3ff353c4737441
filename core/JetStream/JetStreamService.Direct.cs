using System.Buffers;
using System.Globalization;
using System.Text;
using System.Text.Json;
using NatsBroker.Contracts;
using NatsBroker.JetStream.Api;

namespace NatsBroker.JetStream;

// $JS.API.DIRECT.GET.<stream>[.<subject>] (nats-server stream.go processDirectGetRequest,
// processDirectGetLastBySubjectRequest, getDirectRequest, getDirectMulti): the stored messages themselves with
// Nats-Stream / Nats-Subject / Nats-Sequence / Nats-Time-Stamp headers; batches and multi_last add
// Nats-Num-Pending and Nats-Last-Sequence and end with "204 EOB". Errors are status-only messages.
public sealed partial class JetStreamService
{
    private const int MaxMultiLastResults = 1024;
    private static readonly byte[] DirectNotFound = NatsHeaders.Status(404, "Message Not Found");
    private static readonly byte[] DirectNoResults = NatsHeaders.Status(404, "No Results");
    private static readonly byte[] DirectBadRequest = NatsHeaders.Status(408, "Bad Request");
    private static readonly byte[] DirectEmptyRequest = NatsHeaders.Status(408, "Empty Request");
    private static readonly byte[] DirectMalformed = NatsHeaders.Status(408, "Malformed Request");
    private static readonly byte[] DirectTooMany = NatsHeaders.Status(413, "Too Many Results");

    /// <summary>The stream itself when it allows direct gets, else a mirror of it with mirror_direct.</summary>
    private static bool TryDirectStream(JsAccount account, string name, out JsStream stream)
    {
        if (account.TryGet(name, out stream) && stream.Config.AllowDirect) return true;
        foreach (var s in account.Streams())
        {
            if (s.Config.MirrorDirect && s.Config.Mirror?.Name == name)
            {
                stream = s;
                return true;
            }
        }
        stream = null!;
        return false;
    }

    private void DirectGet(ApiRequest req, string[] t)
    {
        if (req.Reply.Length == 0) return;
        var reply = req.Reply.ToArray();
        if (!TryDirectStream(req.JetStream, t[4], out var stream))
        {
            NoRespondersTo(req);
            return;
        }
        if (ApiLevel.RequiresMore(req.Headers))
        {
            Publish(req, reply, RequiredApiLevelStatus, default);
            return;
        }
        DirectGetRequest? r;
        if (t.Length > 5)
        {
            // Last by subject in the request subject: a body may only carry fields that make sense with it.
            r = new DirectGetRequest();
            if (!req.Body.IsEmpty && !TryParseDirect(req.Body, out r))
            {
                Publish(req, reply, DirectMalformed, default);
                return;
            }
            if (r!.LastBySubj is not null || r.NextBySubj is not null || r.MultiLast is { Length: > 0 } || r.Seq is > 0 || r.Batch is > 0
                || r.StartTime is not null || r.UpToSeq is > 0 || r.UpToTime is not null)
            {
                Publish(req, reply, DirectBadRequest, default);
                return;
            }
            r.LastBySubj = string.Join('.', t, 5, t.Length - 5);
        }
        else
        {
            if (req.Body.IsEmpty)
            {
                Publish(req, reply, DirectEmptyRequest, default);
                return;
            }
            if (!TryParseDirect(req.Body, out r))
            {
                Publish(req, reply, DirectMalformed, default);
                return;
            }
            if (r!.Seq is null or 0 && string.IsNullOrEmpty(r.LastBySubj) && string.IsNullOrEmpty(r.NextBySubj) && r.MultiLast is not { Length: > 0 } && r.StartTime is null)
            {
                Publish(req, reply, DirectEmptyRequest, default);
                return;
            }
            bool seq = r.Seq is > 0, last = !string.IsNullOrEmpty(r.LastBySubj), next = !string.IsNullOrEmpty(r.NextBySubj), multi = r.MultiLast is { Length: > 0 };
            if ((seq && last) || (seq && r.StartTime is not null) || (r.StartTime is not null && last) || (last && next) || (last && r.Batch is > 0)
                || (last && multi) || (next && multi) || (r.UpToSeq is > 0 && r.UpToTime is not null))
            {
                Publish(req, reply, DirectBadRequest, default);
                return;
            }
        }
        lock (_apiMsgLock)
        {
            if (r.MultiLast is { Length: > 0 }) DirectMulti(stream, r, reply);
            else DirectSingleOrBatch(stream, r, reply);
        }
    }

    private static bool TryParseDirect(ReadOnlySpan<byte> body, out DirectGetRequest? r)
    {
        try
        {
            r = JsonSerializer.Deserialize(body, JsDirectJsonContext.Default.DirectGetRequest) ?? new DirectGetRequest();
            return true;
        }
        catch (JsonException)
        {
            r = null;
            return false;
        }
    }

    private void DirectSingleOrBatch(JsStream stream, DirectGetRequest r, byte[] reply)
    {
        var store = stream.Store;
        ulong seq = r.StartTime is { } st ? SeqFromTime(store, GoTime.ToUnixNanos(st)) : r.Seq ?? 0;
        bool isBatch = r.Batch is > 0;
        int batch = isBatch ? r.Batch!.Value : 1;
        long maxBytes = r.MaxBytes is > 0 ? r.MaxBytes.Value : Options.MaxPending;
        byte[]? next = string.IsNullOrEmpty(r.NextBySubj) ? null : Encoding.UTF8.GetBytes(r.NextBySubj);
        ulong pending = isBatch ? CountFrom(store, Math.Max(1, seq), next) : 0;
        ulong lastSent = 0;
        long sentBytes = 0;
        var msg = _apiMsg;
        for (int i = 0; i < batch; i++)
        {
            StoreStatus status;
            if (seq > 0 && next is null)
            {
                status = i == 0 && !isBatch ? store.Load(seq, msg) : store.LoadNext(default, seq, msg);
                seq = msg.Sequence + 1;
            }
            else if (next is not null)
            {
                status = store.LoadNext(next, Math.Max(1, seq), msg);
                seq = msg.Sequence + 1;
            }
            else
            {
                status = store.LoadLast(Encoding.UTF8.GetBytes(r.LastBySubj!), msg);
            }
            if (status != StoreStatus.Ok)
            {
                if (isBatch && i > 0) break;
                stream.Js.Publish(reply, default, DirectNotFound, default);
                return;
            }
            if (isBatch && pending > 0) pending--;
            SendDirect(stream, reply, msg, r.NoHeaders == true, isBatch ? (pending, lastSent) : null);
            lastSent = msg.Sequence;
            // Subject + stored headers + payload, not the store's stored size (stream.go getDirectRequest).
            sentBytes += msg.ContentLength;
            if (sentBytes >= maxBytes) break;
        }
        if (isBatch)
        {
            var eob = NatsHeaders.Status(204, "EOB",
                ("Nats-Num-Pending", pending.ToString(CultureInfo.InvariantCulture)),
                ("Nats-Last-Sequence", lastSent.ToString(CultureInfo.InvariantCulture)));
            stream.Js.Publish(reply, default, eob, default);
        }
    }

    /// <summary>The newest message of every subject matching any multi_last filter, at or below up_to_seq, in sequence order.</summary>
    private void DirectMulti(JsStream stream, DirectGetRequest r, byte[] reply)
    {
        var store = stream.Store;
        var state = store.GetState();
        ulong upTo = r.UpToSeq ?? 0;
        if (r.UpToTime is { } ut)
        {
            upTo = SeqFromTime(store, GoTime.ToUnixNanos(ut));
            if (upTo <= state.FirstSequence)
            {
                stream.Js.Publish(reply, default, DirectNoResults, default);
                return;
            }
            upTo--;
        }
        if (upTo == 0) upTo = state.LastSequence;
        ulong from = r.Seq ?? 0;
        var subjects = new Dictionary<string, ulong>(StringComparer.Ordinal);
        foreach (var f in r.MultiLast!) store.GetSubjectCounts(f == ">" ? default : Encoding.UTF8.GetBytes(f), subjects);
        var seqs = new List<ulong>();
        var msg = _apiMsg;
        foreach (var subject in subjects.Keys)
        {
            var sb = Encoding.UTF8.GetBytes(subject);
            ulong found = 0;
            if (store.LoadLast(sb, msg) == StoreStatus.Ok && msg.Sequence <= upTo) found = msg.Sequence;
            else
            {
                // The newest at or below up_to_seq: walk this subject forward (only for up_to requests).
                for (ulong s = 1; store.LoadNext(sb, s, msg) == StoreStatus.Ok && msg.Sequence <= upTo; s = msg.Sequence + 1) found = msg.Sequence;
            }
            if (found >= from && found > 0) seqs.Add(found);
            if (seqs.Count > MaxMultiLastResults)
            {
                stream.Js.Publish(reply, default, DirectTooMany, default);
                return;
            }
        }
        if (seqs.Count == 0)
        {
            stream.Js.Publish(reply, default, DirectNoResults, default);
            return;
        }
        seqs.Sort();
        long maxBytes = r.MaxBytes is > 0 ? r.MaxBytes.Value : Options.MaxPending;
        ulong lastSent = 0, pending = (ulong)seqs.Count;
        long sentBytes = 0;
        int sent = 0;
        foreach (var s in seqs)
        {
            if (store.Load(s, msg) != StoreStatus.Ok)
            {
                stream.Js.Publish(reply, default, DirectNotFound, default);
                return;
            }
            pending--;
            SendDirect(stream, reply, msg, r.NoHeaders == true, (pending, lastSent));
            lastSent = s;
            // As getDirectMulti counts: subject + stored headers + payload.
            sentBytes += msg.ContentLength;
            sent++;
            if (sentBytes >= maxBytes || (r.Batch is > 0 && sent >= r.Batch)) break;
        }
        var eob = NatsHeaders.Status(204, "EOB",
            ("Nats-Num-Pending", pending.ToString(CultureInfo.InvariantCulture)),
            ("Nats-Last-Sequence", lastSent.ToString(CultureInfo.InvariantCulture)),
            ("Nats-UpTo-Sequence", upTo.ToString(CultureInfo.InvariantCulture)));
        stream.Js.Publish(reply, default, eob, default);
    }

    private static void SendDirect(JsStream stream, ReadOnlySpan<byte> reply, StoredMessage msg, bool noHeaders, (ulong Pending, ulong Last)? batch)
    {
        if (noHeaders)
        {
            stream.Js.Publish(reply, default, default, msg.Payload);
            return;
        }
        var hdr = ArrayPool<byte>.Shared.Rent(DirectGetHeaders.MaxLength(msg.HeadersLength, stream.NameBytes.Length, msg.SubjectLength));
        try
        {
            int n = DirectGetHeaders.Write(hdr, msg.Headers, stream.NameBytes, msg.Subject, msg.Sequence, msg.Timestamp, batch);
            stream.Js.Publish(reply, default, hdr.AsSpan(0, n), msg.Payload);
        }
        finally
        {
            ArrayPool<byte>.Shared.Return(hdr);
        }
    }

    /// <summary>The first sequence stored at or after <paramref name="nanos"/> (last + 1 when none).</summary>
    private ulong SeqFromTime(IStreamStore store, long nanos)
    {
        var st = store.GetState();
        var probe = new StoredMessage(64);
        for (ulong s = st.FirstSequence; s <= st.LastSequence && s > 0;)
        {
            if (store.LoadNext(default, s, probe) != StoreStatus.Ok) break;
            if (probe.Timestamp >= nanos) return probe.Sequence;
            s = probe.Sequence + 1;
        }
        return st.LastSequence + 1;
    }

    /// <summary>Messages at or after <paramref name="from"/> matching <paramref name="filter"/> (all when null).</summary>
    private static ulong CountFrom(IStreamStore store, ulong from, byte[]? filter)
    {
        var st = store.GetState();
        if (from <= st.FirstSequence) return filter is null ? st.Messages : store.CountMatching(filter);
        ulong n = 0;
        var probe = new StoredMessage(64);
        for (ulong s = from; store.LoadNext(filter ?? default, s, probe) == StoreStatus.Ok; s = probe.Sequence + 1) n++;
        return n;
    }
}
