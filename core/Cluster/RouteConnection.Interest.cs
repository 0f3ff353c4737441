using System.Buffers;
using System.Text;
using NatsBroker.Protocol;
using NatsBroker.Routing;
using NatsBroker.Subscriptions;

namespace NatsBroker.Cluster;

public sealed partial class RouteConnection : ISubscriber
{
    private readonly Lock _subsLock = new();
    // The peer's interest, keyed as nats-server keys c.subs for a route: the op's arguments up to the weight
    // (route.go processRemoteSub/processRemoteUnsub, routes.md 4.3).
    private readonly Dictionary<string, (Accounts.Account Account, Subscription Sub)> _remoteSubs = new(StringComparer.Ordinal);
    private long _sid;

    /// <summary>Remote subscriptions this route holds (/routez <c>subscriptions</c>).</summary>
    public int RemoteSubscriptionCount { get { lock (_subsLock) return _remoteSubs.Count; } }

    /// <summary>The peer's subscriptions: account, subject, queue (for /routez subs=1).</summary>
    public List<(string Account, string Subject, string? Queue, int Weight)> SnapshotRemoteSubscriptions()
    {
        lock (_subsLock)
        {
            var list = new List<(string, string, string?, int)>(_remoteSubs.Count);
            foreach (var (acc, sub) in _remoteSubs.Values)
                list.Add((acc.Name, Encoding.UTF8.GetString(sub.Subject), sub.Queue is null ? null : Encoding.UTF8.GetString(sub.Queue), sub.QueueWeight));
            return list;
        }
    }

    void IRouteProtocolHandler.OnRemoteSub(in RemoteInterest interest)
    {
        // Leaf interest (LS+) needs leaf nodes; stage 1 has none to deliver to.
        if (interest.Op != RouteOp.Sub) return;
        var account = _manager.FindAccount(interest.Account);
        if (account is null)
        {
            Log.UnknownAccount(Id, Encoding.UTF8.GetString(interest.Account), Encoding.UTF8.GetString(interest.Subject));
            return;
        }
        if (!_manager.CanExport(interest.Subject))
        {
            Log.CannotExport(Id, Encoding.UTF8.GetString(interest.Subject));
            return;
        }
        string key = Key(interest.Account, interest.Subject, interest.Queue);
        var sub = new Subscription(interest.Subject.ToArray(), interest.Queue.IsEmpty ? null : interest.Queue.ToArray(),
            Encoding.ASCII.GetBytes("r" + Interlocked.Increment(ref _sid).ToString(System.Globalization.CultureInfo.InvariantCulture)), this)
        {
            Scope = SubscriptionScope.Remote,
            QueueWeight = Math.Max(1, interest.Weight),
        };
        lock (_subsLock)
        {
            if (_conn.IsClosing) return;
            if (_remoteSubs.TryGetValue(key, out var existing))
            {
                // A plain subject is announced once; a queue group's RS+ carries its new weight (UpdateRemoteQSub):
                // the subscription is replaced so cached match results never change under a reader.
                if (existing.Sub.Queue is null || existing.Sub.QueueWeight == sub.QueueWeight) return;
                if (!account.Router.SubList.Insert(sub)) return;
                existing.Sub.Closed = true;
                account.Router.SubList.Remove(existing.Sub);
                _remoteSubs[key] = (account, sub);
                return;
            }
            if (!account.Router.SubList.Insert(sub))
            {
                _conn.Enqueue("-ERR 'Invalid Subscription'\r\n"u8);
                return;
            }
            _remoteSubs[key] = (account, sub);
        }
    }

    void IRouteProtocolHandler.OnRemoteUnsub(in RemoteInterest interest)
    {
        if (interest.Op != RouteOp.Unsub) return;
        string key = Key(interest.Account, interest.Subject, interest.Queue);
        lock (_subsLock)
        {
            if (!_remoteSubs.Remove(key, out var entry)) return;
            entry.Sub.Closed = true;
            entry.Account.Router.SubList.Remove(entry.Sub);
        }
    }

    /// <summary>The peer's interest leaves every SubList when the route goes (route.go removeRemoteSubs).</summary>
    private void RemoveRemoteSubscriptions()
    {
        List<(Accounts.Account Account, Subscription Sub)> all;
        lock (_subsLock)
        {
            all = [.. _remoteSubs.Values];
            _remoteSubs.Clear();
        }
        foreach (var group in all.GroupBy(e => e.Account))
        {
            var subs = group.Select(e => e.Sub).ToList();
            foreach (var s in subs) s.Closed = true;
            group.Key.Router.SubList.RemoveBatch(subs);
        }
    }

    private static string Key(ReadOnlySpan<byte> account, ReadOnlySpan<byte> subject, ReadOnlySpan<byte> queue) => queue.IsEmpty
        ? string.Concat(Encoding.UTF8.GetString(account), " ", Encoding.UTF8.GetString(subject))
        : string.Concat(Encoding.UTF8.GetString(account), " ", Encoding.UTF8.GetString(subject), " ", Encoding.UTF8.GetString(queue));

    /// <summary>Queues one RS+ or RS- for a local interest change (RouteInterest, under its lock).</summary>
    internal void SendInterest(RouteInterestOp op, ReadOnlySpan<byte> account, ReadOnlySpan<byte> subject, ReadOnlySpan<byte> queue, int weight)
    {
        var wop = op == RouteInterestOp.Sub ? RouteProtocolWriter.InterestOp.RouteSub : RouteProtocolWriter.InterestOp.RouteUnsub;
        int len = RouteProtocolWriter.InterestLength(wop, default, account, subject, queue, weight);
        byte[]? rented = null;
        Span<byte> line = len <= 512 ? stackalloc byte[len] : (rented = ArrayPool<byte>.Shared.Rent(len)).AsSpan(0, len);
        try
        {
            RouteProtocolWriter.WriteInterest(line, wop, default, account, subject, queue, weight);
            // Woken on the thread pool, never inline: this runs under the SubList's write lock, and an inline
            // wake-up may run the writer's close clean-up, which takes SubList locks itself.
            _conn.Enqueue(line, wake: false);
            _conn.Flush(inline: false);
        }
        finally
        {
            if (rented is not null) ArrayPool<byte>.Shared.Return(rented);
        }
    }

    /// <summary>Never called: the router sends to a route through <see cref="IRouteTarget"/>, once per publish.</summary>
    DeliveryOutcome ISubscriber.Deliver(Subscription sub, ref RoutedMessage msg, DeliveryBatch batch) => DeliveryOutcome.Skipped;
}
