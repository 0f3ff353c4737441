using System.Text;
using NatsBroker.Subscriptions;

namespace NatsBroker.Cluster;

/// <summary>
/// One account's local interest as routes see it (route.go updateRouteSubscriptionMap, the account's <c>rm</c> map):
/// per distinct subject, and per subject and queue group, how many local subscriptions there are. A plain subject
/// is announced with RS+ on 0→1 and withdrawn with RS- on 1→0; a queue group gets an RS+ with the new weight on
/// every change and RS- at 0 (routes.md 4.2). What goes out is sent to every registered route, in the order the
/// SubList made the changes (it calls under its write lock, <see cref="IInterestObserver"/>).
/// </summary>
/// <remarks>Lock order: SubList write lock → <c>_lock</c> → a route's outbound lock.</remarks>
internal sealed class RouteInterest : IInterestObserver
{
    private readonly RouteManager _manager;
    private readonly byte[] _account;
    private readonly Lock _lock = new();
    // Key: subject, or subject + ' ' + queue. Value: local subscriptions with that key.
    private readonly Dictionary<string, Entry> _entries = new(StringComparer.Ordinal);

    private sealed class Entry(byte[] subject, byte[]? queue)
    {
        public readonly byte[] Subject = subject;
        public readonly byte[]? Queue = queue;
        public int Count;
    }

    public RouteInterest(RouteManager manager, string account)
    {
        _manager = manager;
        _account = Encoding.UTF8.GetBytes(account);
    }

    /// <summary>The local subscriptions present when the observer was attached (under the SubList's write lock).</summary>
    public void Seed(IEnumerable<Subscription> subs)
    {
        lock (_lock)
        {
            foreach (var sub in subs)
            {
                if (sub.Scope != SubscriptionScope.Local) continue;
                EntryFor(sub).Count++;
            }
        }
    }

    public void OnInserted(Subscription sub)
    {
        lock (_lock)
        {
            var e = EntryFor(sub);
            e.Count++;
            if (e.Queue is null && e.Count != 1) return;
            Broadcast(RouteInterestOp.Sub, e);
        }
    }

    public void OnRemoved(Subscription sub)
    {
        lock (_lock)
        {
            if (!_entries.TryGetValue(Key(sub), out var e)) return;
            e.Count--;
            if (e.Count <= 0)
            {
                _entries.Remove(Key(sub));
                Broadcast(RouteInterestOp.Unsub, e);
            }
            else if (e.Queue is not null)
            {
                Broadcast(RouteInterestOp.Sub, e);
            }
        }
    }

    /// <summary>Sends all of this account's interest to a route that just registered (route.go sendSubsToRoute).</summary>
    public void SendAllTo(RouteConnection route)
    {
        lock (_lock)
        {
            foreach (var e in _entries.Values)
            {
                if (_manager.CanImport(e.Subject)) route.SendInterest(RouteInterestOp.Sub, _account, e.Subject, e.Queue, e.Count);
            }
        }
    }

    /// <summary>Distinct local subjects and queue groups (for tests and monitoring).</summary>
    public int Count
    {
        get { lock (_lock) return _entries.Count; }
    }

    private void Broadcast(RouteInterestOp op, Entry e)
    {
        if (!_manager.CanImport(e.Subject)) return;
        foreach (var route in _manager.Registered) route.SendInterest(op, _account, e.Subject, e.Queue, e.Count);
    }

    private Entry EntryFor(Subscription sub)
    {
        string key = Key(sub);
        if (!_entries.TryGetValue(key, out var e)) _entries[key] = e = new Entry(sub.Subject, sub.Queue);
        return e;
    }

    private static string Key(Subscription sub) => sub.Queue is null
        ? Encoding.UTF8.GetString(sub.Subject)
        : string.Concat(Encoding.UTF8.GetString(sub.Subject), " ", Encoding.UTF8.GetString(sub.Queue));
}

/// <summary>RS+ or RS-.</summary>
internal enum RouteInterestOp { Sub, Unsub }
