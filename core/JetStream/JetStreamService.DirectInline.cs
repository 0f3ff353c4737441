using NatsBroker.Contracts;
using NatsBroker.Routing;

namespace NatsBroker.JetStream;

// DIRECT.GET of the last message on a subject named in the request subject ($JS.API.DIRECT.GET.<stream>.<subject>,
// what KV gets send), answered on the requester's thread instead of through the API queue and its workers: the
// queue's thread-pool hop was most of a KV get's round trip. nats-server 2.9.10 answers direct gets of clients
// inline in the read loop too (stream.go processDirectGetLastBySubjectRequest: inlineOk for clients). Only the plain
// case goes inline, and only when it costs no waiting: the stream itself allows direct gets, its ingest queue is
// drained (the ingest barrier would not wait), and the store has the message in memory (LoadLastCached). Anything
// else (a body, headers, mirror_direct, a cold record, an account that still has to start) takes the API queue and
// is answered by DirectGet exactly as before.
public sealed partial class JetStreamService
{
    private static ReadOnlySpan<byte> DirectGetPrefix => "$JS.API.DIRECT.GET."u8;
    /// <summary>A value larger than this is not kept in the thread's load buffer after its answer.</summary>
    private const int InlineLoadBufferKeep = 64 * 1024;

    [ThreadStatic] private static StoredMessage? t_inlineLoad;

    /// <summary>Answers the request now and counts it; false when it must go through the API queue instead.</summary>
    private bool TryDirectGetInline(Accounts.Account account, in InternalMessage msg)
    {
        // A client's request only (nats-server: inlineOk for clients): a server worker may be publishing under locks.
        if (msg.Origin is null || msg.Reply.IsEmpty || msg.HeaderSize > 0 || !msg.Payload.IsEmpty || !msg.Subject.StartsWith(DirectGetPrefix)) return false;
        var rest = msg.Subject[DirectGetPrefix.Length..];
        int dot = rest.IndexOf((byte)'.');
        // The queue path answers a missing stream token or subject (408, 503) and parses the rest the same way.
        if (dot <= 0 || dot == rest.Length - 1) return false;
        var subject = rest[(dot + 1)..];
        if (LimitsOf(account) is null || Find(account.Name) is not { } js) return false;
        if (!js.TryGet(rest[..dot], out var stream) || !stream.Config.AllowDirect || !stream.IngestCaughtUp) return false;
        var load = t_inlineLoad ??= new StoredMessage(1024);
        var status = stream.Store.LoadLastCached(subject, load);
        if (status == StoreStatus.WouldBlock) return false;
        // As DirectSingleOrBatch: any other outcome than a message is "404 Message Not Found".
        if (status == StoreStatus.Ok) SendDirect(stream, msg.Reply, load, noHeaders: false, batch: null);
        else stream.Js.Publish(msg.Reply, default, DirectNotFound, default);
        if (load.Buffer.Length > InlineLoadBufferKeep) t_inlineLoad = null;
        // Not counted in the API totals: nats-server answers direct gets outside its API layer.
        return true;
    }
}
