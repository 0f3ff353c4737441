using System.Buffers;
using NatsBroker.Auth;
using NatsBroker.Protocol;
using NatsBroker.Routing;
using NatsBroker.Subscriptions;
using System.Runtime.CompilerServices;

namespace NatsBroker.Server;

/// <summary>
/// Both sides of message delivery for a client: as a publisher (PUB/HPUB handed to the router, flushed once per
/// read batch) and as a destination (the router hands it a message for one of its subscriptions; it appends
/// MSG/HMSG to its own outbound buffer under its own lock and does its own accounting).
/// </summary>
/// <remarks>
/// Lock order: <c>_subsLock</c> before the connection's outbound lock. A delivering thread holds at most one
/// destination's outbound lock and takes no other lock inside it (core/Connections/README.md).
/// </remarks>
public sealed partial class ClientConnection : ISubscriber, IFlushTarget, IPublisher, Accounts.IRequester
{
    /// <summary>The router flushes the destinations it delivered to through their connection (per-pass deferral there).</summary>
    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    void IFlushTarget.Flush(bool inline) => _conn.Flush(inline);

    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    private void ProcessPub(ReadOnlySpan<byte> subject, ReadOnlySpan<byte> reply, int headerSize, in ReadOnlySequence<byte> payload)
    {
        _conn.CountInbound(payload.Length);
        // Subject mappings first (parser.go calls client.go selectMappedSubject before processInboundClientMsg): the
        // publish permissions, and the violation's text, see the mapped subject.
        if (_account.Mappings is { } mappings && mappings.Map(subject) is { } mapped) subject = mapped;
        if (_permissions is not null && !_permissions.CanPublish(subject))
        {
            SendError(AuthErrors.PublishViolation(subject));
            return;
        }
        if (!reply.IsEmpty && ReservedReplies.IsReserved(reply))
        {
            SendError(AuthErrors.PublishReplyViolation(reply));
            return;
        }
        if (_verbose) EnqueueProto(ProtocolWriter.Ok);
        // An empty header block is no header: nats-server tests c.pa.hdr > 0 (client.go deliverMsg, processMsgResults),
        // so `HPUB subj 0 N` reaches subscribers (and streams) as MSG.
        if (headerSize == 0) headerSize = -1;

        if (!_account.Router.Publish(this, subject, reply, headerSize, payload, _l1, _conn.Batch) && _noResponders && !reply.IsEmpty)
        {
            SendNoResponders(reply, subject);
        }
    }

    /// <summary>
    /// A JetStream delivery (shown with its stored subject) to a connection with a flagged SUB. For an end user of
    /// the MQTT gateway the stored subject of an MQTT message is <c>$MQTT.msgs.&lt;subject&gt;</c> (QoS 1/2 consumers)
    /// or <c>$MQTT.rmsgs.&lt;subject&gt;</c> (retained messages): nats-server checks those on the subject without the
    /// prefix (mqtt.go processJSConsumer and serializeRetainedMsgsForSub: checkDenySub on the stripped subject), and
    /// never checks its MQTT sessions' other internal traffic (<c>$MQTT.</c>, served by internal clients there).
    /// </summary>
    private bool IsRedirectedDeliveryDenied(ClientPermissions permissions, ReadOnlySpan<byte> subject, ReadOnlySpan<byte> queue)
    {
        if (ProxiedClient is { Gateway: "mqtt" } && subject.StartsWith("$MQTT."u8))
        {
            if (subject.StartsWith("$MQTT.msgs."u8)) subject = subject["$MQTT.msgs.".Length..];
            else if (subject.StartsWith("$MQTT.rmsgs."u8)) subject = subject["$MQTT.rmsgs.".Length..];
            else return false;
        }
        return permissions.IsDeliveryDenied(subject, queue);
    }

    /// <summary>
    /// The router hands this connection a message for one of its subscriptions (on the publisher's thread).
    /// Appends MSG/HMSG to the outbound buffer; auto-unsubscribe max, pending limits and statistics are checked
    /// and updated under this connection's own lock, so concurrent publishers never deliver past <c>max</c>.
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    DeliveryOutcome ISubscriber.Deliver(Subscription sub, ref RoutedMessage msg, DeliveryBatch batch)
    {
        bool self = ReferenceEquals(msg.Origin, this);
        if (self && !_echo) return DeliveryOutcome.Skipped;
        // Subscribe deny on a wildcard or queue SUB that was allowed but overlaps a deny entry (client.go deliverMsg:
        // mperms, checkDenySub); a queue group then tries its next member, as processMsgResults does. A JetStream
        // delivery shows another subject than it was routed on: see ClientPermissions.AnySubscriptionFiltered.
        if ((sub.FilterDeliveries || (msg.IsRedirected && _permissions is { AnySubscriptionFiltered: true }))
            && _permissions is { } permissions
            && (msg.IsRedirected ? IsRedirectedDeliveryDenied(permissions, msg.Subject, sub.Queue) : permissions.IsDeliveryDenied(msg.Subject, sub.Queue)))
            return DeliveryOutcome.Skipped;

        bool sendHeaders = msg.HeaderSize >= 0 && _headers;
        if (msg.Lines is null || !(sendHeaders ? msg.HmsgSuffixLength != 0 : msg.MsgSuffixLength != 0)) FormatLines(ref msg, sendHeaders);
        var lines = msg.Lines!;
        ReadOnlySpan<byte> prefix, suffix;
        ReadOnlySequence<byte> body;
        if (sendHeaders)
        {
            prefix = lines.HmsgPrefix.AsSpan(0, msg.HmsgPrefixLength);
            suffix = lines.HmsgSuffix.AsSpan(0, msg.HmsgSuffixLength);
            body = msg.Payload;
        }
        else
        {
            prefix = lines.MsgPrefix.AsSpan(0, msg.MsgPrefixLength);
            suffix = lines.MsgSuffix.AsSpan(0, msg.MsgSuffixLength);
            // A client without header support gets the message without its header block (as nats-server does).
            body = msg.Body;
        }

        var sid = sub.Sid;
        int total = prefix.Length + sid.Length + suffix.Length + (int)body.Length + 2;
        bool autoUnsub = false;
        lock (_conn.OutboundLock)
        {
            if (_conn.IsClosing || sub.Closed) return DeliveryOutcome.Skipped;
            long max = sub.MaxMessages;
            if (max > 0 && sub.Delivered >= max) return DeliveryOutcome.Skipped;
            if (_conn.TryReserveLocked(total, out var span))
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
                _conn.WriteLocked(prefix);
                _conn.WriteLocked(sid);
                _conn.WriteLocked(suffix);
                _conn.WriteLocked(body);
                _conn.WriteLocked("\r\n"u8);
            }
            // Back-pressure (stall, self back-pressure) and the slow consumer cut-off are the connection's.
            if (!_conn.AfterAppendLocked(self, batch)) return DeliveryOutcome.Skipped;
            _conn.CountOutboundLocked(body.Length);
            long delivered = ++sub.Delivered;
            if (max > 0 && delivered >= max)
            {
                autoUnsub = true;
                sub.Closed = true;
            }
        }
        if (_permissions?.Responses is { } responses && !msg.Reply.IsEmpty) responses.OnDelivered(msg.Reply);
        if (autoUnsub) RemoveSubscription(sub);
        return DeliveryOutcome.DeliveredNeedsFlush;
    }

    private static long StallThreshold(long maxPending) => maxPending / 4 * 3;

    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    private static void FormatLines(ref RoutedMessage msg, bool headers)
    {
        // MSG <subject> <sid> [reply] <#bytes>\r\n   /   HMSG <subject> <sid> [reply] <#hdr bytes> <#total bytes>\r\n
        // Everything but the sid is formatted once per publish: the prefix up to the sid, the suffix after it.
        var lines = msg.Lines ??= ProtocolLineScratch.For(msg.Subject.Length + msg.Reply.Length + 64, Router.Depth);
        if (headers)
        {
            msg.HmsgPrefixLength = FormatPrefix(lines.HmsgPrefix, "HMSG "u8, msg.Subject);
            msg.HmsgSuffixLength = FormatSuffix(lines.HmsgSuffix, msg.Reply, msg.HeaderSize, msg.Payload.Length);
        }
        else
        {
            msg.MsgPrefixLength = FormatPrefix(lines.MsgPrefix, "MSG "u8, msg.Subject);
            msg.MsgSuffixLength = FormatSuffix(lines.MsgSuffix, msg.Reply, -1, msg.Body.Length);
        }
    }

    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    private static int FormatPrefix(Span<byte> dest, ReadOnlySpan<byte> op, ReadOnlySpan<byte> subject)
    {
        op.CopyTo(dest);
        subject.CopyTo(dest[op.Length..]);
        int n = op.Length + subject.Length;
        dest[n++] = (byte)' ';
        return n;
    }

    /// <summary>" [reply] [#hdr] #total\r\n"; headerSize &lt; 0 omits the header size (MSG).</summary>
    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
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

    /// <summary>
    /// no_responders: <c>HMSG &lt;reply&gt; &lt;sid&gt; &lt;n&gt; &lt;n&gt;</c> with the 503 status and the request's subject, to the
    /// requester itself (nats-server 2.10+ client.go processInboundClientMsg: <c>NATS/1.0 503\r\nNats-Subject: &lt;subject&gt;</c>).
    /// </summary>
    private void SendNoResponders(ReadOnlySpan<byte> reply, ReadOnlySpan<byte> subject)
    {
        // The sid is that of the requester's subscription matching the reply subject.
        var result = _account.Router.SubList.Match(reply, _l1);
        foreach (var sub in result.Plain)
        {
            if (!ReferenceEquals(sub.Owner, this)) continue;
            int hdrLen = ProtocolWriter.NoRespondersHeaderLength(subject.Length);
            // HMSG <reply> <sid> <hdr> <hdr>\r\n<hdr>\r\n
            int len = 5 + reply.Length + 1 + sub.Sid.Length + 2 * (1 + ProtocolWriter.DigitCount(hdrLen)) + 2 + hdrLen + 2;
            lock (_conn.OutboundLock)
            {
                if (_conn.IsClosing) return;
                if (_conn.IsReleasedLocked || !_conn.TryReserveLocked(len, out var span)) return;
                int o = 0;
                "HMSG "u8.CopyTo(span); o += 5;
                reply.CopyTo(span[o..]); o += reply.Length;
                span[o++] = (byte)' ';
                sub.Sid.CopyTo(span[o..]); o += sub.Sid.Length;
                span[o++] = (byte)' ';
                o += ProtocolWriter.WriteInt(span[o..], hdrLen);
                span[o++] = (byte)' ';
                o += ProtocolWriter.WriteInt(span[o..], hdrLen);
                span[o++] = (byte)'\r'; span[o++] = (byte)'\n';
                o += ProtocolWriter.WriteNoRespondersHeader(span[o..], subject);
                span[o++] = (byte)'\r'; span[o] = (byte)'\n';
            }
            _conn.Batch.Add(this);
            return;
        }
    }
}
