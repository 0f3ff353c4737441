using System.Text;
using NatsBroker.Configuration;

namespace NatsBroker.Auth;

/// <summary>
/// A user's <see cref="Permissions"/> compiled once (immutable, shared by all of that user's connections), the
/// way server/client.go setPermissions builds its Sublists:
/// <list type="bullet">
/// <item>publish allow: present when the list is non-null, even if empty (an empty list denies everything);
/// publish deny: present when non-empty.</item>
/// <item>subscribe allow / deny: present when non-empty. Entries are "subject" or "subject queue"
/// (whitespace-separated, server/client.go splitSubjectQueue); an entry with more parts is ignored (nats-server
/// logs and skips it). The deny entries' subjects are kept apart too: they decide which SUBs get delivery filtering.</item>
/// <item>allow_responses (server/auth.go validateResponsePermissions): MaxMsgs 0 becomes 1, Expires 0 becomes 2m
/// (negative = unlimited), and when no publish allow list was given it becomes an empty one, so a user with
/// allow_responses may publish only to replies unless publish.allow says otherwise.</item>
/// <item>Patterns Sublist.Insert would reject (empty tokens, '&gt;' not last) never match, as in nats-server.</item>
/// </list>
/// </summary>
internal sealed class PermissionRules
{
    public byte[][]? PublishAllow { get; }
    public byte[][]? PublishDeny { get; }
    public SubscribeRules? SubscribeAllow { get; }
    public SubscribeRules? SubscribeDeny { get; }
    /// <summary>
    /// The subject of every usable subscribe deny entry, queue-scoped ones included (client.go c.darray): a SUB
    /// colliding with one of them has its deliveries checked against <see cref="SubscribeDeny"/>.
    /// </summary>
    public byte[][] DenySubjects { get; } = [];
    /// <summary>Normalised response permission, null without allow_responses.</summary>
    public ResponsePermission? Response { get; }

    public bool HasPublishRules => PublishAllow is not null || PublishDeny is not null;

    public PermissionRules(Permissions permissions)
    {
        ArgumentNullException.ThrowIfNull(permissions);
        var pubAllow = permissions.Publish?.Allow;
        if (permissions.Response is { } rp)
        {
            Response = new ResponsePermission
            {
                MaxMsgs = rp.MaxMsgs == 0 ? ResponsePermission.DefaultMaxMsgs : rp.MaxMsgs,
                Expires = rp.Expires == TimeSpan.Zero ? ResponsePermission.DefaultExpires : rp.Expires,
            };
            pubAllow ??= [];
        }
        if (pubAllow is not null) PublishAllow = CompilePatterns(pubAllow);
        if (permissions.Publish?.Deny is { Count: > 0 } pubDeny) PublishDeny = CompilePublishDeny(pubDeny);

        if (permissions.Subscribe?.Allow is { Count: > 0 } subAllow) SubscribeAllow = new SubscribeRules(subAllow);
        if (permissions.Subscribe?.Deny is { Count: > 0 } subDeny)
        {
            SubscribeDeny = new SubscribeRules(subDeny);
            DenySubjects = [.. SubscribeDeny.Plain, .. SubscribeDeny.Queued.Select(e => e.Subject)];
        }
    }

    private PermissionRules(PermissionRules other, byte[][]? publishDeny)
    {
        PublishAllow = other.PublishAllow;
        PublishDeny = publishDeny;
        SubscribeAllow = other.SubscribeAllow;
        SubscribeDeny = other.SubscribeDeny;
        DenySubjects = other.DenySubjects;
        Response = other.Response;
    }

    /// <summary>These rules plus a publish deny of <paramref name="subject"/> (client.go mergeDenyPermissions).</summary>
    public PermissionRules WithPublishDeny(string subject)
    {
        var extra = Encoding.UTF8.GetBytes(subject);
        if (PublishDeny is { } deny && deny.Any(d => d.AsSpan().SequenceEqual(extra))) return this;
        return new PermissionRules(this, [.. PublishDeny ?? [], extra]);
    }

    private static byte[][] CompilePatterns(List<string> subjects) =>
        subjects.Select(Encoding.UTF8.GetBytes).Where(b => PermissionMatching.IsInsertable(b)).ToArray();

    /// <summary>
    /// Publish deny entries as 2.14 setPermissions takes them: an entry that is not a valid subject but splits as a
    /// "subject queue" pair (splitSubjectQueue: at most two whitespace-separated fields, both valid subjects) denies
    /// its subject ("queue qualifier is not valid for publish deny subject", logged there, and the deny kept);
    /// anything else invalid is skipped. Such entries reach a user only through JWT or auth callout permissions:
    /// the config file refuses them (checkPermSubjectArray without queues for publish).
    /// </summary>
    private static byte[][] CompilePublishDeny(List<string> subjects)
    {
        var compiled = new List<byte[]>(subjects.Count);
        foreach (var entry in subjects)
        {
            var bytes = Encoding.UTF8.GetBytes(entry);
            if (entry.AsSpan().IndexOfAny(" \t\n\f\r") < 0)
            {
                // IsValidSubject; an entry the sublist refuses is skipped ("invalid publish deny subject").
                if (!PermissionMatching.IsInsertable(bytes)) continue;
                compiled.Add(bytes);
                continue;
            }
            var parts = entry.Split((char[]?)null, StringSplitOptions.RemoveEmptyEntries);
            if (parts.Length is 0 or > 2) continue;
            var subject = Encoding.UTF8.GetBytes(parts[0]);
            if (!PermissionMatching.IsInsertable(subject)) continue;
            if (parts.Length == 2 && !PermissionMatching.IsInsertable(Encoding.UTF8.GetBytes(parts[1]))) continue;
            compiled.Add(subject);
        }
        return [.. compiled];
    }

    /// <summary>Does any pattern match? (len(r.psubs) != 0)</summary>
    public static bool AnyMatch(byte[][] patterns, ReadOnlySpan<byte> subject)
    {
        if (PermissionMatching.HasEmptyToken(subject)) return false;
        foreach (var p in patterns)
        {
            if (PermissionMatching.Matches(p, subject)) return true;
        }
        return false;
    }
}

/// <summary>Subscribe allow or deny entries, split into plain subjects and queue-scoped ones.</summary>
internal sealed class SubscribeRules
{
    public byte[][] Plain { get; }
    public (byte[] Subject, byte[] Queue, bool QueueHasWildcard)[] Queued { get; }

    public SubscribeRules(List<string> entries)
    {
        var plain = new List<byte[]>();
        var queued = new List<(byte[], byte[], bool)>();
        foreach (var entry in entries)
        {
            var parts = entry.Split((char[]?)null, StringSplitOptions.RemoveEmptyEntries);
            if (parts.Length is 0 or > 2) continue; // nats-server: "invalid subject-queue", entry skipped
            var subject = Encoding.UTF8.GetBytes(parts[0]);
            if (!PermissionMatching.IsInsertable(subject)) continue;
            if (parts.Length == 1)
            {
                plain.Add(subject);
            }
            else
            {
                var queue = Encoding.UTF8.GetBytes(parts[1]);
                // 2.14 splitSubjectQueue validates the queue name as a subject too ("invalid subject-queue").
                if (!PermissionMatching.IsInsertable(queue)) continue;
                queued.Add((subject, queue, PermissionMatching.HasWildcard(queue)));
            }
        }
        Plain = [.. plain];
        Queued = [.. queued];
    }

    /// <summary>
    /// Sublist.Match(subject) seen through canSubscribe: did a plain entry match (psubs), did a queue entry match
    /// (qsubs), and does <paramref name="queue"/> satisfy one of the matching queue entries (queueMatches: equal
    /// name, or a wildcard queue name of which the queue is a subset)?
    /// </summary>
    public void Match(ReadOnlySpan<byte> subject, ReadOnlySpan<byte> queue, out bool plainMatched, out bool queueEntryMatched, out bool queueAllowedByEntry)
    {
        plainMatched = queueEntryMatched = queueAllowedByEntry = false;
        if (PermissionMatching.HasEmptyToken(subject)) return;
        foreach (var p in Plain)
        {
            if (PermissionMatching.Matches(p, subject))
            {
                plainMatched = true;
                break;
            }
        }
        foreach (var (s, q, qWild) in Queued)
        {
            if (!PermissionMatching.Matches(s, subject)) continue;
            queueEntryMatched = true;
            if (!queue.IsEmpty && (queue.SequenceEqual(q) || (qWild && PermissionMatching.IsSubsetMatch(queue, q))))
            {
                queueAllowedByEntry = true;
                break;
            }
        }
    }
}
