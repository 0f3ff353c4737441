using System.Text;

namespace NatsBroker.MqttGateway;

/// <summary>
/// Overlapping subscriptions (MQTT 5 section 3.3.4): a message matching several of the client's subscriptions goes
/// out once, at the highest QoS they grant ([MQTT-3.3.4-2]), with the identifier of every matching subscription
/// that has one ([MQTT-3.3.4-3], [MQTT-3.3.4-4]); Mosquitto does the same, and paho.mqtt.testing expects it. The core
/// delivers one copy per matching NATS subscription on this link: the first copy is sent for all of them, the
/// others are recognised (same subject, headers and payload, on an expected sid) and dropped. Shared subscriptions
/// are delivered on their own. Runs on the link's read loop only; the subscription list is an immutable snapshot
/// the client's loop replaces.
/// </summary>
internal sealed partial class MqttSession
{
    /// <summary>A non-shared subscription and the subjects of its sids (the filter, and its parent level for x/#).</summary>
    private sealed record PlainSubscription(Subscription Sub, byte[] Subject, byte[]? Parent);

    /// <summary>Copies of a message already sent that the core has still to deliver on other sids.</summary>
    private sealed record ExpectedCopies(byte[] Subject, int Hash, List<int> Sids, long At);

    /// <summary>An expected copy that has not come within this long is forgotten (an UNSUB raced it).</summary>
    private const long ExpectedCopiesMs = 5000;

    private volatile PlainSubscription[] _plainSubscriptions = [];
    private readonly List<ExpectedCopies> _expectedCopies = [];

    /// <summary>On the client's loop after SUBSCRIBE/UNSUBSCRIBE/restore.</summary>
    private void OnSubscriptionsChanged()
    {
        _noLocalCount = _byFilter.Values.Count(s => s.NoLocal);
        _plainSubscriptions = [.. _byFilter.Values.Where(s => s.Group is null).Select(s => new PlainSubscription(s, Encoding.UTF8.GetBytes(s.Subject),
            TopicMapping.LevelUpSubject(s.Subject) is { } parent ? Encoding.UTF8.GetBytes(parent) : null))];
    }

    private async ValueTask DeliverOverlappingAsync(NatsMessage m)
    {
        var subject = m.Subject.Span;
        var headers = m.Headers.Span;
        var hasher = new HashCode();
        hasher.AddBytes(headers);
        hasher.AddBytes(m.Payload.Span);
        int hash = hasher.ToHashCode();
        long now = Environment.TickCount64;
        for (int i = _expectedCopies.Count - 1; i >= 0; i--)
        {
            var e = _expectedCopies[i];
            if (now - e.At > ExpectedCopiesMs)
            {
                _expectedCopies.RemoveAt(i);
                continue;
            }
            if (e.Hash == hash && e.Sids.Contains(m.Sid) && subject.SequenceEqual(e.Subject))
            {
                e.Sids.Remove(m.Sid);
                if (e.Sids.Count == 0) _expectedCopies.RemoveAt(i);
                return;
            }
        }

        byte msgQos = NatsHeaders.PublishedQoS(headers);
        bool fromSelf = _noLocalCount > 0 && FromThisClient(headers);
        bool dollar = subject.Length > 0 && subject[0] == (byte)'$';
        List<int>? copies = null;
        List<uint>? identifiers = null;
        bool deliver = false, retain = false;
        byte qos = 0;
        foreach (var p in _plainSubscriptions)
        {
            int sid = SubjectMatch.Matches(p.Subject, subject) ? p.Sub.Sids[0]
                : p.Parent is not null && SubjectMatch.Matches(p.Parent, subject) ? p.Sub.Sids[1] : 0;
            if (sid == 0) continue;
            if (sid != m.Sid) (copies ??= []).Add(sid);
            var s = p.Sub;
            // The same exclusions as a single subscription's delivery (MqttSession.Subscriptions.cs DeliverAsync).
            if (s.Reserved && dollar) continue;
            if (msgQos > 0 && s.Qos > 0 && HasDurableConsumer(s)) continue;
            if (s.NoLocal && fromSelf) continue;
            deliver = true;
            qos = Math.Max(qos, Math.Min(msgQos, s.Qos));
            retain |= RetainFlag(s, headers);
            if (s.Identifiers is not null) (identifiers ??= []).AddRange(s.Identifiers);
        }
        if (copies is not null) _expectedCopies.Add(new ExpectedCopies(subject.ToArray(), hash, copies, now));
        if (!deliver) return;
        await SendPublishAsync(identifiers?.ToArray(), m.Subject, m.Reply, m.Headers, m.Payload, qos, retain, ack: null, batch: true).ConfigureAwait(false);
    }
}
