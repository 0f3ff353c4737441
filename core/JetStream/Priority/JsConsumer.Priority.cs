using System.Buffers;
using System.Runtime.CompilerServices;
using System.Text;
using System.Text.Json;
using System.Text.Json.Serialization.Metadata;
using NatsBroker.JetStream.Api;
using NatsBroker.JetStream.Priority;

namespace NatsBroker.JetStream;

// Pull consumer priority groups (ADR-42; nats-server 2.11+ consumer.go processNextMsgRequest, nextWaiting,
// assignNewPinId, setPinnedTimer, waitQueue.addPrioritized / popAndRequeue):
// - pinned_client: one pin id per consumer. The first waiting request of a group without an id is pinned when a
//   message is delivered to it; every message then carries Nats-Pin-Id. Requests without an id wait as standby,
//   requests with another id get 423. priority_timeout without a pull carrying the pin (or CONSUMER.UNPIN) unpins.
// - overflow: a request with min_pending / min_ack_pending is served only while either is reached.
// - prioritized: requests are kept sorted by priority (0 first), round-robin within a priority.
// Under a policy, a served request that wants more goes to the back (of its priority), as nats-server's waitQueue.
// All state here is under the consumer's lock and changed only by its loop (UNPIN takes the lock too).
internal sealed partial class JsConsumer
{
    private static readonly byte[] PinIdMismatch = NatsHeaders.Status(423, "Nats-Pin-Id mismatch");
    private const string PinIdHeader = "Nats-Pin-Id";
    public const string PinnedAdvisoryPrefix = "$JS.EVENT.ADVISORY.CONSUMER.PINNED";
    public const string UnpinnedAdvisoryPrefix = "$JS.EVENT.ADVISORY.CONSUMER.UNPINNED";

    private string? _pinId;
    /// <summary>The group of the request that got the pin (named by the timeout advisory, as nats-server's timer).</summary>
    private string _pinGroup = "";
    /// <summary>"Nats-Pin-Id: &lt;id&gt;\r\n", built once per pin so deliveries do not allocate it.</summary>
    private byte[]? _pinHeaderLine;
    private DateTime _pinnedAt;
    private long _pinDeadlineTick = long.MaxValue;
    private byte[]? _pinnedSubject, _unpinnedSubject;

    private bool Pinned => Config.PriorityPolicy == PriorityConfigCheck.PinnedClient;

    /// <summary>
    /// The 400 statuses nats-server answers a JSON pull request with before queueing it (processNextMsgRequest),
    /// from the config alone; null when the request may be queued.
    /// </summary>
    internal byte[]? RefusePriorityFields(in PullFields next)
    {
        var cfg = Config;
        if ((next.MinPending != 0 || next.MinAckPending != 0) && cfg.PriorityPolicy != PriorityConfigCheck.Overflow)
            return NatsHeaders.Status(400, "Bad Request - Not a Overflow Priority consumer");
        if (!string.IsNullOrEmpty(next.Id) && cfg.PriorityPolicy != PriorityConfigCheck.PinnedClient)
            return NatsHeaders.Status(400, "Bad Request - Not a Pinned Client Priority consumer");
        if (next.Priority is < 0 or > 9) return NatsHeaders.Status(400, "Bad Request - Priority must be between 0 and 9");
        if (cfg.PriorityPolicy is not null)
        {
            if (string.IsNullOrEmpty(next.Group)) return NatsHeaders.Status(400, "Bad Request - Priority Group missing");
            if (Array.IndexOf(cfg.PriorityGroups ?? [], next.Group) < 0) return NatsHeaders.Status(400, "Bad Request - Invalid Priority Group");
        }
        return null;
    }

    /// <summary>
    /// On the loop, as a request is taken from the inbox: a pull carrying the current pin keeps it alive for another
    /// priority_timeout; one carrying another id is answered 423 "Nats-Pin-Id mismatch" and dropped (false).
    /// </summary>
    private bool AdmitPinned(PullRequest req, long now)
    {
        if (!req.HasPriorityGroup || Config.PriorityPolicy is null || _pinId is null) return true;
        if (req.PinId == _pinId)
        {
            _pinDeadlineTick = now + PinnedTtlMs;
            return true;
        }
        if (string.IsNullOrEmpty(req.PinId)) return true;
        _stream.Js.Publish(req.Reply, default, PinIdMismatch, default);
        return false;
    }

    private long PinnedTtlMs => Math.Max(1, (Config.PriorityTimeout ?? PriorityConfigCheck.DefaultPinnedTtlNanos) / 1_000_000);

    /// <summary>Queues a request: by priority under the prioritized policy (after those of the same priority), else last.</summary>
    private void AddWaiting(PullRequest req)
    {
        if (Config.PriorityPolicy == PriorityConfigCheck.Prioritized) InsertByPriority(_waiting, new LinkedListNode<PullRequest>(req));
        else _waiting.AddLast(req);
    }

    private static void InsertByPriority(LinkedList<PullRequest> list, LinkedListNode<PullRequest> node)
    {
        var after = list.Last;
        while (after is not null && after.Value.Priority > node.Value.Priority) after = after.Previous;
        if (after is null) list.AddFirst(node);
        else list.AddAfter(after, node);
    }

    /// <summary>
    /// The waiting request the next message goes to (nats-server nextWaiting), dropping requests nobody listens to;
    /// <paramref name="pinOnSend"/> when delivering to it pins it (the pin is assigned only once a message goes out).
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    private LinkedListNode<PullRequest>? NextWaiting(out bool pinOnSend)
    {
        pinOnSend = false;
        var policy = Config.PriorityPolicy;
        for (var node = _waiting.First; node is not null;)
        {
            var next = node.Next;
            var r = node.Value;
            if (!_stream.Js.HasInterest(r.Reply))
            {
                // Nobody listens any more (client gone), as nats-server drops stale requests.
                _waiting.Remove(node);
                node = next;
                continue;
            }
            if (policy is null) return node;
            if (policy == PriorityConfigCheck.PinnedClient)
            {
                if (_pinId is null)
                {
                    if (r.HasPriorityGroup && !string.IsNullOrEmpty(r.PinId))
                    {
                        // A stale id from an earlier pin: the client must pull without one to become a candidate.
                        WrongPinId(r);
                        _waiting.Remove(node);
                        node = next;
                        continue;
                    }
                    pinOnSend = r.HasPriorityGroup;
                    return node;
                }
                if (r.PinId == _pinId) return node;
                if (r.HasPriorityGroup && !string.IsNullOrEmpty(r.PinId))
                {
                    WrongPinId(r);
                    _waiting.Remove(node);
                }
                node = next; // no id: standby while another client holds the pin
                continue;
            }
            if (policy == PriorityConfigCheck.Overflow && !OverflowReady(r))
            {
                node = next;
                continue;
            }
            return node;
        }
        return null;
    }

    /// <summary>
    /// overflow: no condition, or either of min_pending / min_ack_pending reached. num_pending still counts the
    /// message about to be delivered, as nats-server's o.npc+1.
    /// </summary>
    private bool OverflowReady(PullRequest r)
    {
        if (r.MinPending <= 0 && r.MinAckPending <= 0) return true;
        return (r.MinPending > 0 && r.MinPending <= Interlocked.Read(ref _numPending))
            || (r.MinAckPending > 0 && r.MinAckPending <= _pending.Count);
    }

    private void WrongPinId(PullRequest r)
    {
        _stream.Js.Publish(r.Reply, default, PendingStatus(423, "Nats-Wrong-Pin-Id", r), default);
    }

    /// <summary>
    /// After a message, a request that still wants more goes to the back: behind the others of its priority under
    /// prioritized (nats-server popAndRequeue), behind all others otherwise (waitQueue.pop, also without a policy:
    /// waiting requests are served in turn).
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    private void RequeueServed(LinkedListNode<PullRequest> node)
    {
        var policy = Config.PriorityPolicy;
        if (node.List is null || _waiting.Count < 2) return;
        _waiting.Remove(node);
        if (policy == PriorityConfigCheck.Prioritized) InsertByPriority(_waiting, node);
        else _waiting.AddLast(node);
    }

    /// <summary>Pins <paramref name="r"/> with a new id (nats-server assignNewPinId) and says so.</summary>
    private void AssignPin(PullRequest r, long now)
    {
        _pinId = Nuid.Next();
        _pinHeaderLine = Encoding.ASCII.GetBytes($"{PinIdHeader}: {_pinId}\r\n");
        _pinnedAt = DateTime.UtcNow;
        _pinDeadlineTick = now + PinnedTtlMs;
        r.PinId = _pinId;
        var group = _pinGroup = r.Group ?? "";
        var subject = _pinnedSubject ??= JsAdvisories.ConsumerSubject(PinnedAdvisoryPrefix, _stream.Name, Name);
        if (!_stream.Js.HasInterest(subject)) return;
        SendAdvisory(subject, new ConsumerGroupPinnedAdvisory
        {
            Type = "io.nats.jetstream.advisory.v1.consumer_group_pinned",
            Account = _stream.Js.Name,
            Stream = _stream.Name,
            Consumer = Name,
            Domain = string.IsNullOrEmpty(_stream.Js.Domain) ? null : _stream.Js.Domain,
            Group = group,
            PinnedClientId = _pinId,
        }, PriorityJsonContext.Default.ConsumerGroupPinnedAdvisory);
    }

    /// <summary>Clears the pin (nats-server unassignPinId) and sends the unpinned advisory with the reason.</summary>
    private void Unpin(string group, string reason)
    {
        _pinId = null;
        _pinHeaderLine = null;
        _pinnedAt = default;
        _pinDeadlineTick = long.MaxValue;
        var subject = _unpinnedSubject ??= JsAdvisories.ConsumerSubject(UnpinnedAdvisoryPrefix, _stream.Name, Name);
        if (!_stream.Js.HasInterest(subject)) return;
        SendAdvisory(subject, new ConsumerGroupUnpinnedAdvisory
        {
            Type = "io.nats.jetstream.advisory.v1.consumer_group_unpinned",
            Account = _stream.Js.Name,
            Stream = _stream.Name,
            Consumer = Name,
            Domain = string.IsNullOrEmpty(_stream.Js.Domain) ? null : _stream.Js.Domain,
            Group = group,
            Reason = reason,
        }, PriorityJsonContext.Default.ConsumerGroupUnpinnedAdvisory);
    }

    private void SendAdvisory<T>(byte[] subject, T advisory, JsonTypeInfo<T> info) where T : TypedEvent
    {
        advisory.Id = Nuid.Next();
        advisory.Timestamp = DateTime.UtcNow;
        _stream.Js.Router.PublishInternal(subject, default, default, JsonSerializer.SerializeToUtf8Bytes(advisory, info));
    }

    /// <summary>
    /// CONSUMER.UNPIN for a group of this consumer: the pin is dropped (the unpinned advisory goes out even when
    /// nobody was pinned, as nats-server) and the next waiting request without an id is pinned.
    /// </summary>
    public void UnpinByAdmin(string group)
    {
        lock (_lock) Unpin(group, "admin");
        Kick();
    }

    /// <summary>On the loop: priority_timeout passed without a pull carrying the pin (nats-server's pinnedTtl timer).</summary>
    private void ExpirePin(long now)
    {
        if (_pinId is null || now < _pinDeadlineTick) return;
        Unpin(_pinGroup, "timeout");
    }

    /// <summary>The pin's deadline for the loop's wake-up, long.MaxValue when nobody is pinned.</summary>
    private long PinWakeTick => _pinId is null ? long.MaxValue : _pinDeadlineTick;

    /// <summary>The pin header for a delivery: only under pinned_client while a pin is held (nats-server genHeader).</summary>
    private byte[]? PinHeaderLine => Pinned ? _pinHeaderLine : null;

    /// <summary>Writes <paramref name="existing"/> (a header block or empty) with the pin header line added.</summary>
    private static void AppendPinHeader(ReadOnlySpan<byte> existing, byte[] line, ArrayBufferWriter<byte> into)
    {
        var head = existing.Length >= 4 && existing.EndsWith("\r\n\r\n"u8) ? existing[..^2] : "NATS/1.0\r\n"u8;
        int n = head.Length + line.Length + 2;
        var span = into.GetSpan(n);
        head.CopyTo(span);
        line.CopyTo(span[head.Length..]);
        "\r\n"u8.CopyTo(span[(head.Length + line.Length)..]);
        into.Advance(n);
    }

    /// <summary>consumer info priority_groups: the first group with its pin (nats-server reports one group today).</summary>
    private List<PriorityGroupState>? PriorityGroupsInfo()
    {
        if (Config.PriorityGroups is not { Length: > 0 } groups) return null;
        return
        [
            new PriorityGroupState
            {
                Group = groups[0],
                PinnedClientId = _pinId,
                PinnedTs = _pinId is null ? DateTime.SpecifyKind(DateTime.MinValue, DateTimeKind.Utc) : _pinnedAt,
            },
        ];
    }
}
