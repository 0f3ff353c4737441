using System.Buffers;
using NatsBroker.Auth;
using NatsBroker.Contracts.Gateways.Polling;
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
/// Lock order: <c>_subsLock</c> before <c>_out.Lock</c>. A delivering thread holds at most one destination's
/// <c>_out.Lock</c> and takes no other lock inside it.
/// </remarks>
public sealed partial class ClientConnection : ISubscriber, IFlushTarget, IBatchEndWork, IStallTarget, IPublisher, Accounts.IRequester
{
    // Destinations this connection's current read batch touched, and their back-pressure hints.
    private readonly DeliveryBatch _batch = new();

    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    private void ProcessPub(ReadOnlySpan<byte> subject, ReadOnlySpan<byte> reply, int headerSize, in ReadOnlySequence<byte> payload)
    {
        InMsgs++;
        InBytes += payload.Length;
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

        if (!_account.Router.Publish(this, subject, reply, headerSize, payload, _l1, _batch) && _noResponders && !reply.IsEmpty)
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
        lock (_out.Lock)
        {
            if (_closing || sub.Closed) return DeliveryOutcome.Skipped;
            long max = sub.MaxMessages;
            if (max > 0 && sub.Delivered >= max) return DeliveryOutcome.Skipped;
            if (_out.TryReserve(total, out var span))
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
                _out.Write(prefix);
                _out.Write(sid);
                _out.Write(suffix);
                _out.Write(body);
                _out.Write("\r\n"u8);
            }
            long maxPending = _server.Options.MaxPending;
            if (self)
            {
                // This connection is its own slow destination: instead of cutting it off, its read loop stops
                // reading until its outbound drains (a client that stops reading its socket is still cut off by
                // write_deadline). nats-server gets the same effect by flushing its own outbound in its read loop.
                if (_out.Pending > StallThreshold(maxPending)) batch.MarkPublisherBackedUp();
            }
            else if (_out.Pending > maxPending)
            {
                // Slow consumer: the client cannot keep up; close it, keep everyone else flowing (client.go queueOutbound).
                MarkSlowConsumerLocked();
                return DeliveryOutcome.Skipped;
            }
            else if (_out.Pending > StallThreshold(maxPending))
            {
                // Over 75% of max_pending: the publisher waits briefly at the end of its read (fast producer stall).
                batch.RequestStall(this);
            }
            OutMsgs++;
            OutBytes += body.Length;
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
            lock (_out.Lock)
            {
                if (_closing) return;
                if (_out.IsReleased || !_out.TryReserve(len, out var span)) return;
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
            _batch.Add(this);
            return;
        }
    }

    // nats-server waits 2 ms (5 ms past max_pending), at most 10 ms per read. A JIT-compiled server on a loaded
    // 2-core machine drains more slowly than that budget assumes, and cut a healthy subscriber in tests where Go
    // did not; the wider budget only applies between 75% and 100% of max_pending, so a stuck client is still cut.
    private static readonly TimeSpan StallMin = TimeSpan.FromMilliseconds(10);
    private static readonly TimeSpan StallMax = TimeSpan.FromMilliseconds(20);

    /// <summary>
    /// End of a read batch: flush the destinations it touched, then act on back-pressure before reading more.
    /// Fast-producer stall: wait (bounded: 10 ms, 20 ms when the destination is past max_pending) for a backed-up
    /// destination to drain below 75% of max_pending, woken by its writer rather than polling. Self back-pressure:
    /// when this connection is its own backed-up destination, wait (unbounded, but a client that stops reading is
    /// cut by write_deadline or by closing) until its own outbound drains.
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    private ValueTask EndReadBatchAsync()
    {
        _batch.Flush();
        if (!_batch.HasBackPressure) return ValueTask.CompletedTask;
        return WaitForBackPressureAsync();
    }

    private async ValueTask WaitForBackPressureAsync()
    {
        try
        {
            if (_batch.PublisherBackedUp)
            {
                while (!_closing && ((IStallTarget)this).IsBackedUp) await ((IStallTarget)this).WhenDrainedAsync().ConfigureAwait(false);
            }
            // One budget for all backed-up destinations of this read (nats-server: stallClientMaxDuration per read).
            long start = Environment.TickCount64;
            for (int i = 0; i < _batch.StallCount && !_closing; i++)
            {
                var target = _batch.StallTarget(i);
                if (!target.IsBackedUp) continue;
                long budget = (long)(target.IsOverLimit ? StallMax : StallMin).TotalMilliseconds - (Environment.TickCount64 - start);
                if (budget <= 0) break;
                try
                {
                    await target.WhenDrainedAsync().WaitAsync(TimeSpan.FromMilliseconds(budget)).ConfigureAwait(false);
                }
                catch (TimeoutException)
                {
                    // The budget is spent: read on (the destination is cut off if it passes max_pending).
                }
            }
        }
        finally
        {
            _batch.ClearBackPressure();
        }
    }

    // 1 while this connection's flush waits for the end of a poller's pass (LinkPoller.TryDeferToBatchEnd).
    private int _flushDeferred;

    /// <summary>Set to 0 to flush at the end of each read batch even on a poller's thread (an operator's A/B switch).</summary>
    internal const string DeferFlushesVariable = "NATSBROKER_FLUSH_DEFER";

    private static readonly bool DeferFlushes = Environment.GetEnvironmentVariable(DeferFlushesVariable) != "0";

    /// <summary>
    /// The end of a publisher's batch asks for this connection's queued bytes to be written. On a poller's thread
    /// (LinkPoller) the write waits for the end of the poller's pass: the other clients served in that pass may
    /// deliver here too, and then one write carries all of it (10 requesters to 2 services: fewer sends by the server
    /// and fewer, larger reads by the service). The pass is a few reads long, so this adds microseconds: a reader with
    /// more input waiting does not stay on the poller's thread (ClientConnection.ReadLoopAsync).
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    void IFlushTarget.Flush(bool inline)
    {
        if (!inline)
        {
            _writeSignal.SetOnThreadPool();
            return;
        }
        if (DeferFlushes)
        {
            // Publisher on a poller's thread: write once at the end of the poller's pass, with whatever the other
            // reads of that pass queue here too. Already deferred: that write takes this batch's bytes as well.
            if (Volatile.Read(ref _flushDeferred) != 0) return;
            if (Interlocked.Exchange(ref _flushDeferred, 1) != 0) return;
            if (LinkPoller.TryDeferToBatchEnd(this)) return;
            Volatile.Write(ref _flushDeferred, 0);
        }
        _writeSignal.Set();
    }

    void IBatchEndWork.RunAtBatchEnd(bool inline)
    {
        // Cleared before the wake-up: a publisher that sees it set relies on this wake-up to take its bytes.
        Interlocked.Exchange(ref _flushDeferred, 0);
        if (inline) _writeSignal.Set();
        else _writeSignal.SetOnThreadPool();
    }

    // Completed by the writer when pending falls below the stall threshold, or on close; null when nobody waits.
    private TaskCompletionSource? _drained;

    Task IStallTarget.WhenDrainedAsync()
    {
        lock (_out.Lock)
        {
            if (_closing || _out.Pending <= StallThreshold(_server.Options.MaxPending)) return Task.CompletedTask;
            return (_drained ??= new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously)).Task;
        }
    }

    bool IStallTarget.IsBackedUp => !_closing && PendingBytes > StallThreshold(_server.Options.MaxPending);
    bool IStallTarget.IsOverLimit => PendingBytes >= _server.Options.MaxPending;

    /// <summary>After the writer returned written chunks (caller holds _out.Lock): wake waiters once drained.</summary>
    private void SignalDrainedLocked()
    {
        if (_drained is { } tcs && (_closing || _out.Pending <= StallThreshold(_server.Options.MaxPending)))
        {
            _drained = null;
            tcs.TrySetResult();
        }
    }
}
