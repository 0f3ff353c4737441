using System.Text;
using NatsBroker.Routing;
using NatsBroker.Subscriptions;

namespace NatsBroker.Accounts;

/// <summary>
/// The sampled requests (service latency tracking) this account made through service imports that still wait for
/// their response, by reply subject. When the requester's interest in a reply goes away before the response comes
/// (it unsubscribed, or its connection closed) the exporter reports <c>408 "Request Timeout"</c> and drops the
/// mapping (server/client.go unsubscribe → accounts.go checkForReverseEntry → sendReplyInterestLostTrackLatency).
/// Untracked requests are not listed (they expire with the response threshold), so with no sampled request in
/// flight a removed subscription costs one volatile read.
/// </summary>
/// <remarks>Lock order: this lock, then the SubList's; the exporter is told outside the lock.</remarks>
internal sealed class TrackedReplies(Router router)
{
    private readonly Lock _lock = new();
    private readonly Dictionary<string, List<(ServiceResponses Responses, ulong Id)>> _byReply = new(StringComparer.Ordinal);
    private int _count;

    public void Add(string reply, ServiceResponses responses, ulong id)
    {
        lock (_lock)
        {
            if (!_byReply.TryGetValue(reply, out var list)) _byReply[reply] = list = [];
            list.Add((responses, id));
            Volatile.Write(ref _count, _count + 1);
        }
    }

    /// <summary>The response came, or the mapping ended otherwise: nothing to report for it any more.</summary>
    public void Remove(string reply, ServiceResponses responses, ulong id)
    {
        lock (_lock)
        {
            if (!_byReply.TryGetValue(reply, out var list)) return;
            if (list.RemoveAll(e => e.Id == id && ReferenceEquals(e.Responses, responses)) == 0) return;
            if (list.Count == 0) _byReply.Remove(reply);
            Volatile.Write(ref _count, _count - 1);
        }
    }

    /// <summary>A client of this account removed <paramref name="sub"/> (UNSUB or close), after it left the SubList.</summary>
    public void SubscriptionRemoved(Subscription sub)
    {
        if (Volatile.Read(ref _count) == 0 || ReservedReplies.IsReserved(sub.Subject)) return;
        string pattern = Encoding.UTF8.GetString(sub.Subject);
        List<(ServiceResponses Responses, ulong Id)>? lost = null;
        lock (_lock)
        {
            List<string>? gone = null;
            foreach (var (reply, entries) in _byReply)
            {
                // Another subscription may still want the reply (checkForReverseEntry's checkInterest).
                if (!SubjectSubset.IsSubsetOf(reply, pattern) || !router.SubList.Match(Encoding.UTF8.GetBytes(reply)).IsEmpty) continue;
                (gone ??= []).Add(reply);
                (lost ??= []).AddRange(entries);
            }
            if (gone is null) return;
            foreach (var reply in gone) _byReply.Remove(reply);
            Volatile.Write(ref _count, _count - lost!.Count);
        }
        foreach (var (responses, id) in lost) responses.InterestLost(id);
    }
}
