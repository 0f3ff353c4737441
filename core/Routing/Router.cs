using System.Buffers;
using System.Text;
using NatsBroker.Subscriptions;
using System.Runtime.CompilerServices;

namespace NatsBroker.Routing;

/// <summary>
/// Routes a published message to every interested subscriber: subject match (SubList, through the publisher's
/// L1 cache when it has one), one member per queue group, and a hand-off to each subscriber, which does its own
/// accounting under its own lock. Callable from any thread: client read loops, JetStream, system services,
/// gateway links. Flushing the touched destinations is the publisher's, once per batch (<see cref="DeliveryBatch"/>).
/// </summary>
/// <remarks>
/// One router per subject space: each account (core/Accounts) owns one over its own SubList; imports and exports
/// route between them through server-side subscribers.
/// </remarks>
public sealed partial class Router
{
    /// <summary>
    /// How deep publishes may nest on one thread (an internal subscriber publishing from its callback, which
    /// publishes again...). Past it a publish is dropped and counted: a subscription loop must not overflow the stack.
    /// </summary>
    public const int MaxNesting = 8;

    [ThreadStatic] private static int t_depth;

    /// <summary>How many publishes are under way on this thread (0 outside any), for per-level scratch.</summary>
    internal static int Depth => t_depth;
    [ThreadStatic] private static DeliveryBatch?[]? t_internalBatches;
    private uint _random = (uint)Environment.TickCount | 1;
    private long _sidCounter;
    private long _droppedNested;

    private readonly Action<Exception> _onCallbackFault;

    /// <param name="onCallbackFault">Told when an internal subscriber's callback throws (the server logs it).</param>
    public Router(SubList subList, Action<Exception> onCallbackFault)
    {
        SubList = subList;
        _onCallbackFault = onCallbackFault;
    }

    public SubList SubList { get; }

    /// <summary>The name of the account this router serves, as it goes in RMSG/HMSG lines on routes.</summary>
    public byte[] AccountName { get; private set; } = "$G"u8.ToArray();

    /// <summary>Called once by the account that owns this router (core/Accounts/Account.cs).</summary>
    internal void NameAccount(string name) => AccountName = Encoding.UTF8.GetBytes(name);

    /// <summary>Publishes dropped because they nested deeper than <see cref="MaxNesting"/>.</summary>
    public long DroppedNested => Volatile.Read(ref _droppedNested);

    /// <summary>
    /// Routes one message. Returns false when no subscription matched (the caller may answer no-responders).
    /// Destinations to flush and back-pressure hints are added to <paramref name="batch"/>; the caller flushes it.
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    public bool Publish(IPublisher? origin, ReadOnlySpan<byte> subject, ReadOnlySpan<byte> reply, int headerSize,
        in ReadOnlySequence<byte> payload, SubjectResultCache? l1, DeliveryBatch batch) =>
        Publish(origin, subject, subject, reply, headerSize, payload, l1, batch);

    /// <summary>
    /// Routes on <paramref name="routeSubject"/> while subscribers see <paramref name="subject"/> (nats-server's
    /// pa.deliver: a JetStream delivery is matched on the deliver subject or pull reply, but the MSG line carries
    /// the message's original subject).
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    public bool Publish(IPublisher? origin, ReadOnlySpan<byte> routeSubject, ReadOnlySpan<byte> subject, ReadOnlySpan<byte> reply, int headerSize,
        in ReadOnlySequence<byte> payload, SubjectResultCache? l1, DeliveryBatch batch)
    {
        var result = l1 is null ? SubList.Match(routeSubject) : SubList.Match(routeSubject, l1);
        if (result.IsEmpty) return false;
        if (!TryEnterNested()) return true;
        try
        {
            var msg = new RoutedMessage(origin, routeSubject, subject, reply, headerSize, payload);
            RouteFanout? routes = null;
            var plain = result.Plain;
            for (int i = 0; i < plain.Length; i++)
            {
                var sub = plain[i];
                if (sub.Closed) continue;
                if (sub.IsRemote)
                {
                    // Interest a route announced: the message goes to that route once, however many of its
                    // subscriptions matched (client.go processMsgResults, rrTracking).
                    (routes ??= RouteFanout.For(t_depth)).Add((IRouteTarget)sub.Owner);
                    continue;
                }
                Hand(sub, ref msg, batch);
            }
            var queues = result.Queues;
            for (int q = 0; q < queues.Length; q++) DeliverToQueue(queues[q], ref msg, batch, ref routes);
            if (routes is { Count: > 0 }) routes.Send(ref msg, AccountName, batch);
        }
        finally
        {
            t_depth--;
        }
        return true;
    }

    /// <summary>
    /// Enters one publish level on this thread; past <see cref="MaxNesting"/> the publish is dropped and counted
    /// instead. The caller leaves with <c>t_depth--</c> in a finally.
    /// </summary>
    private bool TryEnterNested()
    {
        if (t_depth >= MaxNesting)
        {
            Interlocked.Increment(ref _droppedNested);
            return false;
        }
        t_depth++;
        return true;
    }

    /// <summary>
    /// Publishes from inside the server (replies, advisories, stream deliveries) from any thread, and flushes the
    /// destinations before returning. <paramref name="headers"/> is a complete NATS header block
    /// ("NATS/1.0\r\n...\r\n\r\n") or empty.
    /// </summary>
    public bool PublishInternal(ReadOnlySpan<byte> subject, ReadOnlySpan<byte> reply, ReadOnlySpan<byte> headers, ReadOnlySpan<byte> payload) =>
        PublishInternal(subject, subject, reply, headers, payload);

    /// <summary>
    /// Like <see cref="PublishInternal(ReadOnlySpan{byte}, ReadOnlySpan{byte}, ReadOnlySpan{byte}, ReadOnlySpan{byte})"/>,
    /// but matched on <paramref name="routeSubject"/> while delivered with <paramref name="subject"/> (JetStream
    /// deliveries: routed to a deliver subject or pull reply, shown with the stored message's subject).
    /// </summary>
    public bool PublishInternal(ReadOnlySpan<byte> routeSubject, ReadOnlySpan<byte> subject, ReadOnlySpan<byte> reply, ReadOnlySpan<byte> headers, ReadOnlySpan<byte> payload)
    {
        var batch = RentInternalBatch();
        bool matched = PublishInternal(routeSubject, subject, reply, headers, payload, batch);
        batch.Flush();
        batch.ClearBackPressure();
        return matched;
    }

    /// <summary>
    /// An internal publish whose destinations are added to the caller's <paramref name="batch"/> instead of being
    /// flushed now: a server worker that publishes many messages in a row (PubAcks of an ingest batch, a consumer's
    /// deliveries) flushes each destination once per batch (<see cref="DeliveryBatch.Flush"/>), as a client's read
    /// loop does. The batch must be the caller's own and flushed before the caller waits.
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    public bool PublishInternal(ReadOnlySpan<byte> routeSubject, ReadOnlySpan<byte> subject, ReadOnlySpan<byte> reply, ReadOnlySpan<byte> headers, ReadOnlySpan<byte> payload, DeliveryBatch batch)
    {
        int total = headers.Length + payload.Length;
        // Deliveries copy synchronously, so a rented copy of headers+payload can go back right after.
        var rented = ArrayPool<byte>.Shared.Rent(Math.Max(1, total));
        try
        {
            headers.CopyTo(rented);
            payload.CopyTo(rented.AsSpan(headers.Length));
            var sequence = new ReadOnlySequence<byte>(rented, 0, total);
            return Publish(null, routeSubject, subject, reply, headers.IsEmpty ? -1 : headers.Length, sequence, null, batch);
        }
        finally
        {
            ArrayPool<byte>.Shared.Return(rented);
        }
    }

    /// <summary>
    /// An internal publish, batched like the one above, of a header block and body that already sit one after the
    /// other in one buffer (a stored message's [headers][payload]): routed straight from it, without the copy into a
    /// rented buffer the span overload makes. <paramref name="headerSize"/> is -1 without headers.
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    public bool PublishInternalAdjacent(ReadOnlySpan<byte> routeSubject, ReadOnlySpan<byte> subject, ReadOnlySpan<byte> reply, int headerSize, ReadOnlyMemory<byte> headersAndPayload, DeliveryBatch batch) =>
        Publish(null, routeSubject, subject, reply, headerSize, new ReadOnlySequence<byte>(headersAndPayload), null, batch);

    /// <summary>A batch for an internal publish at the current nesting depth (one per depth per thread).</summary>
    private static DeliveryBatch RentInternalBatch()
    {
        var batches = t_internalBatches ??= new DeliveryBatch?[MaxNesting + 1];
        int depth = Math.Min(t_depth, MaxNesting);
        return batches[depth] ??= new DeliveryBatch();
    }

    /// <summary>
    /// Subscribes a callback (nats-server's internal subscription with an icb). The callback runs synchronously on
    /// the publisher's thread: it must be quick and must not block; heavy work (store I/O, API requests) should be
    /// queued to a worker. The message is valid only during the call.
    /// </summary>
    public Subscription SubscribeInternal(string subject, string? queue, InternalMessageHandler handler)
    {
        var sid = Encoding.ASCII.GetBytes("i" + Interlocked.Increment(ref _sidCounter).ToString(System.Globalization.CultureInfo.InvariantCulture));
        var owner = new InternalSubscriber(handler, _onCallbackFault);
        var sub = new Subscription(Encoding.UTF8.GetBytes(subject), queue is null ? null : Encoding.UTF8.GetBytes(queue), sid, owner);
        if (!SubList.Insert(sub)) throw new ArgumentException($"invalid subject '{subject}'", nameof(subject));
        return sub;
    }

    /// <summary>
    /// Subscribes a server-side subscriber that handles deliveries itself (account import forwarders). Its
    /// <see cref="ISubscriber.Deliver"/> runs on the publisher's thread with the publisher's batch.
    /// </summary>
    /// <param name="scope">Whether routes learn of it: a service import's subscription is served on this node only
    /// (nats-server never sends <c>sub.si</c> to routes, route.go sendSubsToRoute).</param>
    public Subscription Subscribe(string subject, ISubscriber owner, SubscriptionScope scope = SubscriptionScope.Local)
    {
        var sid = Encoding.ASCII.GetBytes("i" + Interlocked.Increment(ref _sidCounter).ToString(System.Globalization.CultureInfo.InvariantCulture));
        var sub = new Subscription(Encoding.UTF8.GetBytes(subject), null, sid, owner) { Scope = scope };
        if (!SubList.Insert(sub)) throw new ArgumentException($"invalid subject '{subject}'", nameof(subject));
        return sub;
    }

    /// <summary>Removes a subscription made with <see cref="SubscribeInternal"/> or <see cref="Subscribe"/>.</summary>
    public void Unsubscribe(Subscription sub)
    {
        sub.Closed = true;
        SubList.Remove(sub);
    }

    /// <summary>
    /// Picks one member of a queue group at random, a remote member counting as the number of members its node
    /// announced (sublist.go addNodeToResults expands it <c>qw</c> times; client.go processMsgResults starts at one
    /// random index): cluster-wide weighted random, no preference for local members when a client published
    /// (routes.md 5.2). If the member picked takes nothing, the next ones are tried in order. A remote member is
    /// reached by naming its group in the RMSG to its route.
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    private void DeliverToQueue(Subscription[] members, ref RoutedMessage msg, DeliveryBatch batch, ref RouteFanout? routes)
    {
        int start = PickWeighted(members, NextRandom());
        for (int i = 0; i < members.Length; i++)
        {
            var sub = members[(start + i) % members.Length];
            if (sub.Closed) continue;
            if (sub.IsRemote)
            {
                (routes ??= RouteFanout.For(t_depth)).AddQueue((IRouteTarget)sub.Owner, sub.Queue);
                return;
            }
            if (Hand(sub, ref msg, batch) != DeliveryOutcome.Skipped) return;
        }
    }

    /// <summary>xorshift: cheap; a lost update between threads only perturbs the randomness.</summary>
    private uint NextRandom()
    {
        uint x = _random;
        x ^= x << 13; x ^= x >> 17; x ^= x << 5;
        _random = x;
        return x;
    }

    /// <summary>The index of the member at <paramref name="random"/> over the members' weights.</summary>
    private static int PickWeighted(Subscription[] members, uint random)
    {
        long total = 0;
        for (int i = 0; i < members.Length; i++) total += Math.Max(1, members[i].QueueWeight);
        if (total == members.Length) return (int)(random % (uint)members.Length);
        long r = random % total;
        for (int i = 0; i < members.Length; i++)
        {
            r -= Math.Max(1, members[i].QueueWeight);
            if (r < 0) return i;
        }
        return 0;
    }

    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    private static DeliveryOutcome Hand(Subscription sub, ref RoutedMessage msg, DeliveryBatch batch)
    {
        var outcome = sub.Owner.Deliver(sub, ref msg, batch);
        if (outcome == DeliveryOutcome.DeliveredNeedsFlush) batch.Add((IFlushTarget)sub.Owner);
        return outcome;
    }
}
