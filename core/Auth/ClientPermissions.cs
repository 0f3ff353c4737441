using System.Collections.Concurrent;
using NatsBroker.Configuration;

namespace NatsBroker.Auth;

/// <summary>
/// One connection's view of its user's permissions (server/client.go c.perms + c.mperms + c.replies): the
/// shared compiled rules plus this connection's caches (publish, delivery deny) and response tracker. Create one per
/// authenticated connection (<see cref="IAuthenticator"/> does); <c>null</c> permissions mean "allow all".
/// <para>Threading: <see cref="CanPublish"/> and <see cref="CanSubscribe"/> are called by the connection's own read
/// loop; <see cref="IsDeliveryDenied"/> and <see cref="ResponseTracker.OnDelivered"/> by whichever producer delivers
/// to this connection. All are safe to call concurrently.</para>
/// </summary>
public sealed class ClientPermissions
{
    /// <summary>Publish cache bound and prune batch (client.go maxPermCacheSize / pruneSize).</summary>
    public const int MaxPublishCacheSize = 128;
    public const int PruneSize = 32;
    /// <summary>Delivery-deny cache bound (client.go maxDenyPermCacheSize).</summary>
    public const int MaxDenyCacheSize = 256;

    private readonly PermissionRules _rules;
    private readonly ConcurrentDictionary<byte[], bool> _pubCache = new(ByteKeyComparer.Instance);
    private readonly ConcurrentDictionary<byte[], bool>.AlternateLookup<ReadOnlySpan<byte>> _pubLookup;
    private int _pubCacheCount;
    private int _pubPruning;

    private readonly ConcurrentDictionary<byte[], bool> _denyCache = new(ByteKeyComparer.Instance);
    private readonly ConcurrentDictionary<byte[], bool>.AlternateLookup<ReadOnlySpan<byte>> _denyLookup;
    private int _denyCacheCount;
    private int _denyPruning;
    private volatile bool _anyFiltered;

    internal ClientPermissions(PermissionRules rules, TimeProvider? time = null)
    {
        _rules = rules;
        _pubLookup = _pubCache.GetAlternateLookup<ReadOnlySpan<byte>>();
        _denyLookup = _denyCache.GetAlternateLookup<ReadOnlySpan<byte>>();
        if (rules.Response is { } rp) Responses = new ResponseTracker(rp, time);
    }

    /// <summary>Compiles <paramref name="permissions"/> for one connection; null stays null (no restrictions).</summary>
    public static ClientPermissions? Create(Permissions? permissions, TimeProvider? time = null) =>
        permissions is null ? null : new ClientPermissions(new PermissionRules(permissions), time);

    /// <summary>
    /// <paramref name="permissions"/> (null = allow all) with publishing to <paramref name="subject"/> denied as well:
    /// users bound to the auth callout account may not publish authorization requests (auth.go mergeDenyPermissions
    /// of <c>$SYS.REQ.USER.AUTH</c>). Returns a fresh per-connection object.
    /// </summary>
    public static ClientPermissions DenyPublish(ClientPermissions? permissions, string subject, TimeProvider? time = null) =>
        permissions is null
            ? new ClientPermissions(new PermissionRules(new Permissions { Publish = new SubjectPermission { Deny = [subject] } }), time)
            : new ClientPermissions(permissions._rules.WithPublishDeny(subject), time);

    /// <summary>
    /// The permissions as nats-server shows them to their user (client.go publicPermissions, for
    /// <c>$SYS.REQ.USER.INFO</c>): <c>{"publish":{"allow","deny"},"subscribe":{"allow","deny"},"responses":{"max","ttl"}}</c>,
    /// subscribe entries as "subject" or "subject queue", empty lists left out, ttl in nanoseconds.
    /// </summary>
    public void WritePublic(System.Text.Json.Utf8JsonWriter w)
    {
        ArgumentNullException.ThrowIfNull(w);
        w.WriteStartObject();
        w.WriteStartObject("publish");
        WriteList(w, "allow", _rules.PublishAllow);
        WriteList(w, "deny", _rules.PublishDeny);
        w.WriteEndObject();
        w.WriteStartObject("subscribe");
        WriteSubscribe(w, "allow", _rules.SubscribeAllow);
        WriteSubscribe(w, "deny", _rules.SubscribeDeny);
        w.WriteEndObject();
        if (_rules.Response is { } rp)
        {
            w.WriteStartObject("responses");
            w.WriteNumber("max", rp.MaxMsgs);
            w.WriteNumber("ttl", rp.Expires.Ticks * 100);
            w.WriteEndObject();
        }
        w.WriteEndObject();
    }

    private static void WriteList(System.Text.Json.Utf8JsonWriter w, string name, byte[][]? subjects)
    {
        if (subjects is not { Length: > 0 }) return;
        w.WriteStartArray(name);
        foreach (var s in subjects) w.WriteStringValue(s);
        w.WriteEndArray();
    }

    private static void WriteSubscribe(System.Text.Json.Utf8JsonWriter w, string name, SubscribeRules? rules)
    {
        if (rules is null || rules.Plain.Length + rules.Queued.Length == 0) return;
        w.WriteStartArray(name);
        foreach (var s in rules.Plain) w.WriteStringValue(s);
        foreach (var (s, q, _) in rules.Queued)
            w.WriteStringValue(System.Text.Encoding.UTF8.GetString(s) + " " + System.Text.Encoding.UTF8.GetString(q));
        w.WriteEndArray();
    }

    /// <summary>
    /// allow_responses tracking, or null. The delivery path calls <see cref="ResponseTracker.OnDelivered"/> with the
    /// reply subject of every message it hands to this client (client.go deliverMsg, only when non-null).
    /// </summary>
    public ResponseTracker? Responses { get; }

    /// <summary>False when neither publish allow nor deny is set: every publish is allowed without a lookup.</summary>
    public bool HasPublishRules => _rules.HasPublishRules;

    /// <summary>
    /// client.go pubAllowedFullCheck: allowed when (no allow list, or an allow entry matches) and no deny entry
    /// matches; otherwise, with allow_responses, when the subject is a reply this client received and may still
    /// answer (consumes one response). The rule result is cached per subject (bounded; a hit allocates nothing);
    /// the response part is never cached, as in nats-server. nats-server checks the subject after the account's
    /// subject mapping (parser.go selectMappedSubject runs before processInboundClientMsg), so callers pass that.
    /// </summary>
    public bool CanPublish(ReadOnlySpan<byte> subject)
    {
        if (!_rules.HasPublishRules) return true;
        if (!_pubLookup.TryGetValue(subject, out bool allowed))
        {
            allowed = EvaluatePublish(subject);
            if (_pubLookup.TryAdd(subject, allowed) && Interlocked.Increment(ref _pubCacheCount) > MaxPublishCacheSize)
                Prune(_pubCache, ref _pubCacheCount, ref _pubPruning, MaxPublishCacheSize);
        }
        if (!allowed && Responses is { } responses) allowed = responses.TryConsume(subject);
        return allowed;
    }

    /// <summary><see cref="CanSubscribe(ReadOnlySpan{byte}, ReadOnlySpan{byte}, out bool)"/> without the delivery flag.</summary>
    public bool CanSubscribe(ReadOnlySpan<byte> subject, ReadOnlySpan<byte> queue = default) => CanSubscribe(subject, queue, out _);

    /// <summary>
    /// client.go canSubscribe (nats-server 2.14.5), including its quirks:
    /// <list type="bullet">
    /// <item>Allow (canSubscribeInternal): a plain entry must match (tokens of a wildcard SUB compared literally, see
    /// <see cref="PermissionMatching"/>). For a queue SUB, if any "subject queue" entry matches the subject the
    /// queue must match one of them (exact or wildcard-queue subset), whatever the plain entries say.</item>
    /// <item>Deny: denied when a plain entry matches; otherwise, for a queue SUB, denied when a queue-scoped deny
    /// entry matching the subject names the queue (so deny ["foo", "foo q1"] refuses SUB foo q2 too; 2.9 let it
    /// through).</item>
    /// <item><paramref name="filterDeliveries"/> (client.go loadMsgDenyFilterIfNeeded): an allowed SUB that has a
    /// wildcard or a queue group and collides with a deny entry (sublist.go SubjectsCollide) can still receive
    /// denied subjects, e.g. deny "pub.secret.&gt;" and SUB "pub.*.x": each of its deliveries must then pass
    /// <see cref="IsDeliveryDenied"/>. nats-server switches that check on for the whole connection (c.mperms);
    /// only the colliding SUB needs it (any other SUB's deliveries are matched by its own subject, which no deny
    /// entry overlaps), so the flag is per subscription here.</item>
    /// </list>
    /// The reserved queue "_sys_" is not checked here; see <see cref="IsSubscribeAllowed"/>.
    /// </summary>
    public bool CanSubscribe(ReadOnlySpan<byte> subject, ReadOnlySpan<byte> queue, out bool filterDeliveries)
    {
        filterDeliveries = false;
        bool allowed = true;
        if (_rules.SubscribeAllow is { } allow)
        {
            allow.Match(subject, queue, out bool plain, out bool queueEntry, out bool queueOk);
            allowed = plain;
            if (!queue.IsEmpty && queueEntry) allowed = queueOk;
        }
        if (allowed && _rules.SubscribeDeny is { } deny)
        {
            deny.Match(subject, queue, out bool plain, out bool queueEntry, out bool queueOk);
            allowed = !plain;
            if (allowed && !queue.IsEmpty && queueEntry) allowed = !queueOk;
            if (allowed && (!queue.IsEmpty || PermissionMatching.HasWildcard(subject)))
            {
                foreach (var d in _rules.DenySubjects)
                {
                    if (PermissionMatching.SubjectsCollide(d, subject))
                    {
                        filterDeliveries = true;
                        _anyFiltered = true;
                        break;
                    }
                }
            }
        }
        return allowed;
    }

    /// <summary>
    /// True once some SUB of this connection was flagged (client.go c.mperms != nil; it stays on, as there). A
    /// JetStream delivery is routed on the deliver subject but checked on the stored subject (client.go
    /// processMsgResults passes pa.deliver to deliverMsg), which the subscription's own subject does not bound, so
    /// such deliveries are checked for every SUB of the connection while this is on, as in nats-server.
    /// </summary>
    public bool AnySubscriptionFiltered => _anyFiltered;

    /// <summary>Longest subject + ' ' + queue cached by <see cref="IsDeliveryDenied"/>; longer keys are evaluated uncached.</summary>
    private const int MaxDenyKeyLength = 512;

    /// <summary>
    /// client.go checkDenySub: should a message on <paramref name="subject"/> be withheld from a subscription
    /// (with queue group <paramref name="queue"/>, or none) that <see cref="CanSubscribe(ReadOnlySpan{byte}, ReadOnlySpan{byte}, out bool)"/>
    /// flagged? Denied when a plain deny entry matches the subject, or, for a queue subscription, when a
    /// queue-scoped deny entry matching the subject names its queue (queueMatches). Cached per (subject, queue)
    /// like c.mperms.dcache, bounded; a hit allocates nothing.
    /// </summary>
    public bool IsDeliveryDenied(ReadOnlySpan<byte> subject, ReadOnlySpan<byte> queue = default)
    {
        if (_rules.SubscribeDeny is not { } deny) return false;
        int keyLength = queue.IsEmpty ? subject.Length : subject.Length + 1 + queue.Length;
        if (keyLength > MaxDenyKeyLength) return EvaluateDeliveryDeny(deny, subject, queue);
        // Neither a subject nor a queue name holds a space, so "subject queue" is an unambiguous key.
        Span<byte> key = stackalloc byte[keyLength];
        subject.CopyTo(key);
        if (!queue.IsEmpty)
        {
            key[subject.Length] = (byte)' ';
            queue.CopyTo(key[(subject.Length + 1)..]);
        }
        if (_denyLookup.TryGetValue(key, out bool denied)) return denied;
        denied = EvaluateDeliveryDeny(deny, subject, queue);
        if (_denyLookup.TryAdd(key, denied) && Interlocked.Increment(ref _denyCacheCount) > MaxDenyCacheSize)
            Prune(_denyCache, ref _denyCacheCount, ref _denyPruning, MaxDenyCacheSize);
        return denied;
    }

    private static bool EvaluateDeliveryDeny(SubscribeRules deny, ReadOnlySpan<byte> subject, ReadOnlySpan<byte> queue)
    {
        deny.Match(subject, queue, out bool plain, out bool queueEntry, out bool queueOk);
        return plain || (!queue.IsEmpty && queueEntry && queueOk);
    }

    /// <summary>
    /// The whole SUB check as client.go processSubEx does it for CLIENT connections: the permissions (when any)
    /// and the reserved "_sys_" queue group, which no client may use even without permissions.
    /// </summary>
    public static bool IsSubscribeAllowed(ClientPermissions? permissions, ReadOnlySpan<byte> subject, ReadOnlySpan<byte> queue = default) =>
        IsSubscribeAllowed(permissions, subject, queue, out _);

    /// <summary><see cref="IsSubscribeAllowed(ClientPermissions?, ReadOnlySpan{byte}, ReadOnlySpan{byte})"/> with the delivery flag of <see cref="CanSubscribe(ReadOnlySpan{byte}, ReadOnlySpan{byte}, out bool)"/>.</summary>
    public static bool IsSubscribeAllowed(ClientPermissions? permissions, ReadOnlySpan<byte> subject, ReadOnlySpan<byte> queue, out bool filterDeliveries)
    {
        filterDeliveries = false;
        bool allowed = permissions is null || permissions.CanSubscribe(subject, queue, out filterDeliveries);
        return allowed && !(!queue.IsEmpty && queue.SequenceEqual("_sys_"u8));
    }

    internal int PublishCacheCount => Volatile.Read(ref _pubCacheCount);
    internal int DenyCacheCount => Volatile.Read(ref _denyCacheCount);

    private bool EvaluatePublish(ReadOnlySpan<byte> subject)
    {
        bool allowed = true;
        if (_rules.PublishAllow is { } allow) allowed = PermissionRules.AnyMatch(allow, subject);
        if (allowed && _rules.PublishDeny is { } deny) allowed = !PermissionRules.AnyMatch(deny, subject);
        return allowed;
    }

    /// <summary>
    /// client.go prunePubPermsCache: drop arbitrary entries, at least <see cref="PruneSize"/> and until back under
    /// the bound; one pruner at a time.
    /// </summary>
    private static void Prune(ConcurrentDictionary<byte[], bool> cache, ref int count, ref int pruning, int max)
    {
        if (Interlocked.CompareExchange(ref pruning, 1, 0) != 0) return;
        try
        {
            int removed = 0;
            foreach (var key in cache.Keys)
            {
                if (cache.TryRemove(key, out _))
                {
                    removed++;
                    if (Interlocked.Decrement(ref count) < max && removed > PruneSize) break;
                }
            }
        }
        finally
        {
            Volatile.Write(ref pruning, 0);
        }
    }
}
