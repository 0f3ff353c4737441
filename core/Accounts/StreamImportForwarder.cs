using System.Text;
using NatsBroker.Routing;
using NatsBroker.Subscriptions;

namespace NatsBroker.Accounts;

/// <summary>
/// A stream import: subscribed in the exporter's router on the imported subject; each message is republished into
/// the importer's router under its local subject (<c>to</c> mapping, or <c>prefix.subject</c>, or unchanged), on
/// the publisher's thread and in the publisher's batch (the payload is not copied).
/// </summary>
internal sealed class StreamImportForwarder : ISubscriber
{
    [ThreadStatic] private static byte[]?[]? t_subjectScratch;

    private readonly Account _importer;
    private readonly SubjectTransform? _to;
    private readonly byte[]? _prefix;

    public StreamImportForwarder(Account importer, string subject, string? to, string? prefix)
    {
        _importer = importer;
        if (to is not null && to != subject) _to = new SubjectTransform(subject, to);
        if (!string.IsNullOrEmpty(prefix)) _prefix = Encoding.UTF8.GetBytes(prefix.EndsWith('.') ? prefix : prefix + ".");
    }

    public DeliveryOutcome Deliver(Subscription sub, ref RoutedMessage msg, DeliveryBatch batch)
    {
        ReadOnlySpan<byte> subject = msg.Subject;
        if (_to is not null)
        {
            subject = _to.Map(subject);
        }
        else if (_prefix is not null)
        {
            int length = _prefix.Length + subject.Length;
            var scratch = Scratch(length);
            _prefix.CopyTo(scratch, 0);
            subject.CopyTo(scratch.AsSpan(_prefix.Length));
            subject = scratch.AsSpan(0, length);
        }
        _importer.Router.Publish(msg.Origin, subject, msg.Reply, msg.HeaderSize, msg.Payload, null, batch);
        return DeliveryOutcome.Delivered;
    }

    /// <summary>A per-thread, per-nesting-level buffer for the mapped subject (nested forwards get their own).</summary>
    private static byte[] Scratch(int size)
    {
        var levels = t_subjectScratch ??= new byte[Router.MaxNesting + 1][];
        int depth = Math.Min(Router.Depth, Router.MaxNesting);
        var buf = levels[depth];
        if (buf is null || buf.Length < size) levels[depth] = buf = new byte[Math.Max(size, 256)];
        return buf;
    }
}
