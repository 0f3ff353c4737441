using System.Buffers;
using NatsBroker.Auth;
using NatsBroker.Protocol;
using NatsBroker.Subscriptions;

namespace NatsBroker.Server;

public sealed partial class ClientConnection
{
    // Per-publish scratch: "MSG <subject> " prefix and " [reply] <size>\r\n" suffixes, formatted once per
    // publish and reused for every destination (only the sid differs).
    /// <summary>
    /// Per-thread scratch for the MSG/HMSG line pieces of the publish being routed. Routing a publish runs
    /// synchronously on its reader's thread, so one set per thread serves every connection (instead of 16 KB
    /// per connection). Sized for the longest subject and reply max_control_line allows.
    /// </summary>
    private sealed class LineScratch(int size)
    {
        [ThreadStatic] private static LineScratch? t_current;
        public readonly byte[] MsgPrefix = new byte[size];
        public readonly byte[] MsgSuffix = new byte[size];
        public readonly byte[] HmsgPrefix = new byte[size];
        public readonly byte[] HmsgSuffix = new byte[size];

        public static LineScratch For(int maxControlLine)
        {
            var s = t_current;
            if (s is null || s.MsgPrefix.Length < maxControlLine + 64) t_current = s = new LineScratch(maxControlLine + 64);
            return s;
        }
    }
    private uint _random = (uint)Environment.TickCount | 1;

    // Destinations that received data during the current read batch; each is woken once at the batch end.
    private readonly List<ClientConnection> _flushList = [];

    private void ProcessPub(ReadOnlySpan<byte> subject, ReadOnlySpan<byte> reply, int headerSize, in ReadOnlySequence<byte> payload)
    {
        InMsgs++;
        InBytes += payload.Length;
        if (_permissions is not null && !_permissions.CanPublish(subject))
        {
            SendError(AuthErrors.PublishViolation(subject));
            return;
        }
        if (!reply.IsEmpty && IsReservedReply(reply))
        {
            SendError(AuthErrors.PublishReplyViolation(reply));
            return;
        }
        if (_verbose) EnqueueProto(ProtocolWriter.Ok);

        var result = _server.SubList.Match(subject, _l1);
        if (result.IsEmpty)
        {
            if (_noResponders && !reply.IsEmpty) SendNoResponders(reply);
            return;
        }

        var msg = new OutgoingMessage(subject, reply, headerSize, payload, LineScratch.For(_server.Options.MaxControlLine));
        var plain = result.Plain;
        for (int i = 0; i < plain.Length; i++)
        {
            Deliver(plain[i], ref msg);
        }
        var queues = result.Queues;
        for (int q = 0; q < queues.Length; q++)
        {
            DeliverToQueue(queues[q], ref msg);
        }
    }

    /// <summary>Reply prefixes reserved for the server (client.go isReservedReply): service imports, JetStream acks, gateways.</summary>
    private static bool IsReservedReply(ReadOnlySpan<byte> reply) =>
        reply.StartsWith("_R_."u8) || reply.StartsWith("$JS.ACK."u8) || reply.StartsWith("_GR_."u8);

    /// <summary>Picks one member of a queue group; if that member is gone, tries the others in order.</summary>
    private void DeliverToQueue(Subscription[] members, ref OutgoingMessage msg)
    {
        // xorshift: cheap, per-connection, no shared state.
        uint x = _random;
        x ^= x << 13; x ^= x >> 17; x ^= x << 5;
        _random = x;
        int start = (int)(x % (uint)members.Length);
        for (int i = 0; i < members.Length; i++)
        {
            var sub = members[(start + i) % members.Length];
            if (Deliver(sub, ref msg)) return;
        }
    }

    /// <summary>Appends MSG/HMSG for one subscription to its client's outbound buffer. False if not delivered.</summary>
    private bool Deliver(Subscription sub, ref OutgoingMessage msg)
    {
        if (sub.Closed) return false;
        var dest = (ClientConnection)sub.Owner;
        if (ReferenceEquals(dest, this) && !_echo) return false;
        if (dest._permissions is not null && dest._permissions.IsDeliveryDenied(msg.Subject)) return false;

        bool sendHeaders = msg.HeaderSize >= 0 && dest._headers;
        if (!msg.Formatted(sendHeaders)) FormatLines(ref msg, sendHeaders);
        ReadOnlySpan<byte> prefix, suffix;
        ReadOnlySequence<byte> body;
        if (sendHeaders)
        {
            prefix = msg.Scratch.HmsgPrefix.AsSpan(0, msg.HmsgPrefixLength);
            suffix = msg.Scratch.HmsgSuffix.AsSpan(0, msg.HmsgSuffixLength);
            body = msg.Payload;
        }
        else
        {
            prefix = msg.Scratch.MsgPrefix.AsSpan(0, msg.MsgPrefixLength);
            suffix = msg.Scratch.MsgSuffix.AsSpan(0, msg.MsgSuffixLength);
            // A client without header support gets the message without its header block (as nats-server does).
            body = msg.HeaderSize > 0 ? msg.Payload.Slice(msg.HeaderSize) : msg.Payload;
        }

        var sid = sub.Sid;
        int total = prefix.Length + sid.Length + suffix.Length + (int)body.Length + 2;
        bool autoUnsub = false;
        lock (dest._out.Lock)
        {
            if (dest._closing) return false;
            if (dest._out.TryReserve(total, out var span))
            {
                prefix.CopyTo(span);
                int o = prefix.Length;
                sid.CopyTo(span[o..]); o += sid.Length;
                suffix.CopyTo(span[o..]); o += suffix.Length;
                body.CopyTo(span[o..]); o += (int)body.Length;
                span[o] = (byte)'\r'; span[o + 1] = (byte)'\n';
            }
            else
            {
                // Larger than a chunk: spill across chunks.
                dest._out.Write(prefix);
                dest._out.Write(sid);
                dest._out.Write(suffix);
                dest._out.Write(body);
                dest._out.Write("\r\n"u8);
            }
            long maxPending = _server.Options.MaxPending;
            if (dest._out.Pending > maxPending)
            {
                // Slow consumer: the client cannot keep up; close it, keep everyone else flowing (client.go queueOutbound).
                dest.MarkSlowConsumerLocked();
                return false;
            }
            // Over 75% of max_pending: the publisher pauses briefly at the end of this read (fast producer stall).
            if (dest._out.Pending > maxPending / 4 * 3 && !ReferenceEquals(dest, this)) _stallOn = dest;
            dest.OutMsgs++;
            dest.OutBytes += body.Length;
            long delivered = ++sub.Delivered;
            if (sub.MaxMessages > 0 && delivered >= sub.MaxMessages) autoUnsub = true;
        }
        if (dest._permissions?.Responses is { } responses && !msg.Reply.IsEmpty) responses.OnDelivered(msg.Reply);
        MarkForFlush(dest);
        if (autoUnsub) dest.RemoveSubscription(sub);
        return true;
    }

    private void FormatLines(ref OutgoingMessage msg, bool headers)
    {
        // MSG <subject> <sid> [reply] <#bytes>\r\n   /   HMSG <subject> <sid> [reply] <#hdr bytes> <#total bytes>\r\n
        // Everything but the sid is formatted once per publish: the prefix up to the sid, the suffix after it.
        if (headers)
        {
            msg.HmsgPrefixLength = FormatPrefix(msg.Scratch.HmsgPrefix, "HMSG "u8, msg.Subject);
            msg.HmsgSuffixLength = FormatSuffix(msg.Scratch.HmsgSuffix, msg.Reply, msg.HeaderSize, msg.Payload.Length);
        }
        else
        {
            msg.MsgPrefixLength = FormatPrefix(msg.Scratch.MsgPrefix, "MSG "u8, msg.Subject);
            long size = msg.HeaderSize > 0 ? msg.Payload.Length - msg.HeaderSize : msg.Payload.Length;
            msg.MsgSuffixLength = FormatSuffix(msg.Scratch.MsgSuffix, msg.Reply, -1, size);
        }
    }

    private static int FormatPrefix(Span<byte> dest, ReadOnlySpan<byte> op, ReadOnlySpan<byte> subject)
    {
        op.CopyTo(dest);
        subject.CopyTo(dest[op.Length..]);
        int n = op.Length + subject.Length;
        dest[n++] = (byte)' ';
        return n;
    }

    /// <summary>" [reply] [#hdr] #total\r\n"; headerSize &lt; 0 omits the header size (MSG).</summary>
    private static int FormatSuffix(Span<byte> dest, ReadOnlySpan<byte> reply, int headerSize, long total)
    {
        int m = 0;
        dest[m++] = (byte)' ';
        if (!reply.IsEmpty)
        {
            reply.CopyTo(dest[m..]);
            m += reply.Length;
            dest[m++] = (byte)' ';
        }
        if (headerSize >= 0)
        {
            m += ProtocolWriter.WriteInt(dest[m..], headerSize);
            dest[m++] = (byte)' ';
        }
        m += ProtocolWriter.WriteInt(dest[m..], total);
        dest[m++] = (byte)'\r';
        dest[m++] = (byte)'\n';
        return m;
    }

    /// <summary>no_responders: HMSG &lt;reply&gt; &lt;sid&gt; 16 16 with the 503 status, to the requester itself.</summary>
    private void SendNoResponders(ReadOnlySpan<byte> reply)
    {
        // The sid is that of the requester's subscription matching the reply subject.
        var result = _server.SubList.Match(reply, _l1);
        foreach (var sub in result.Plain)
        {
            if (!ReferenceEquals(sub.Owner, this)) continue;
            var hdr = ProtocolWriter.NoRespondersHeader;
            // HMSG <reply> <sid> <hdr> <total>\r\n<hdr>\r\n
            int len = 5 + reply.Length + 1 + sub.Sid.Length + 1 + 2 + 1 + 2 + 2 + hdr.Length + 2;
            lock (_out.Lock)
            {
                if (_closing) return;
                if (_out.IsReleased || !_out.TryReserve(len, out var span)) return;
                int o = 0;
                "HMSG "u8.CopyTo(span); o += 5;
                reply.CopyTo(span[o..]); o += reply.Length;
                span[o++] = (byte)' ';
                sub.Sid.CopyTo(span[o..]); o += sub.Sid.Length;
                " 16 16\r\n"u8.CopyTo(span[o..]); o += 8;
                hdr.CopyTo(span[o..]); o += hdr.Length;
                span[o++] = (byte)'\r'; span[o] = (byte)'\n';
            }
            MarkForFlush(this);
            return;
        }
    }

    // A destination over 75% of max_pending seen during this read batch (client.go stalledWait).
    private ClientConnection? _stallOn;
    // nats-server waits 2 ms (5 ms past max_pending), at most 10 ms per read. A JIT-compiled server on a loaded
    // 2-core machine drains more slowly than that budget assumes, and cut a healthy subscriber in tests where Go
    // did not; the wider budget only applies between 75% and 100% of max_pending, so a stuck client is still cut.
    private static readonly TimeSpan StallMin = TimeSpan.FromMilliseconds(10);
    private static readonly TimeSpan StallMax = TimeSpan.FromMilliseconds(20);
    private const long StallTotalAllowedMs = 25;

    /// <summary>
    /// Fast-producer stall: before reading more, wait (bounded: 10 ms, 20 ms when the destination is over
    /// max_pending, 25 ms per read) for a backed-up destination to drain below 75% of max_pending. Pushes back on
    /// the publisher's socket instead of cutting off a subscriber that is merely slower than one producer burst.
    /// </summary>
    private async ValueTask StallAsync(ClientConnection dest)
    {
        long maxPending = _server.Options.MaxPending;
        long start = Environment.TickCount64;
        while (!dest._closing && !_closing && dest.PendingBytes > maxPending / 4 * 3)
        {
            long budget = dest.PendingBytes >= maxPending ? (long)StallMax.TotalMilliseconds : (long)StallMin.TotalMilliseconds;
            long elapsed = Environment.TickCount64 - start;
            if (elapsed >= Math.Min(budget, StallTotalAllowedMs)) break;
            await Task.Delay(1).ConfigureAwait(false);
        }
    }

    /// <summary>
    /// Remembers a destination once per read batch. The de-duplication state lives with this reader (a set it
    /// alone touches), not in the destination, so publishers sharing subscribers never write each other's lines.
    /// </summary>
    private void MarkForFlush(ClientConnection dest)
    {
        var list = _flushList;
        if (list.Count > 0 && ReferenceEquals(list[^1], dest)) return;
        if (_flushSet.Add(dest)) list.Add(dest);
    }

    private readonly HashSet<ClientConnection> _flushSet = new(ReferenceEqualityComparer.Instance);

    /// <summary>End of a read batch: wake each destination's writer once.</summary>
    private void FlushDestinations()
    {
        var list = _flushList;
        for (int i = 0; i < list.Count; i++) list[i]._writeSignal.Set();
        list.Clear();
        _flushSet.Clear();
    }

    /// <summary>One publish being fanned out: its parts and the lazily formatted MSG/HMSG line pieces.</summary>
    private ref struct OutgoingMessage(ReadOnlySpan<byte> subject, ReadOnlySpan<byte> reply, int headerSize, in ReadOnlySequence<byte> payload, LineScratch scratch)
    {
        public readonly LineScratch Scratch = scratch;
        public readonly ReadOnlySpan<byte> Subject = subject;
        public readonly ReadOnlySpan<byte> Reply = reply;
        public readonly int HeaderSize = headerSize;
        public readonly ReadOnlySequence<byte> Payload = payload;
        public int MsgPrefixLength;
        public int MsgSuffixLength;
        public int HmsgPrefixLength;
        public int HmsgSuffixLength;
        public readonly bool Formatted(bool headers) => headers ? HmsgSuffixLength != 0 : MsgSuffixLength != 0;
    }
}
