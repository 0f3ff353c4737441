using System.Text;
using NatsBroker.Routing;
using NatsBroker.Subscriptions;

namespace NatsBroker.Accounts;

/// <summary>
/// A stream import: subscribed in the exporter's router on the imported subject; each message is republished into
/// the importer's router under its local subject (<c>to</c> mapping, or <c>prefix.subject</c>, or unchanged), on
/// the publisher's thread and in the publisher's batch (the payload is not copied). A JetStream push consumer
/// whose deliver subject is exported reaches its subscribers in the importing account this way.
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
        // A JetStream delivery to an exported deliver subject is matched in the importer on the (mapped) deliver
        // subject and still shows the stored message's subject, as nats-server delivers it (pa.deliver).
        ReadOnlySpan<byte> route = msg.RouteSubject;
        if (_to is not null)
        {
            route = _to.Map(route);
        }
        else if (_prefix is not null)
        {
            int length = _prefix.Length + route.Length;
            var scratch = Scratch(length);
            _prefix.CopyTo(scratch, 0);
            route.CopyTo(scratch.AsSpan(_prefix.Length));
            route = scratch.AsSpan(0, length);
        }
        var shown = msg.IsRedirected ? msg.Subject : route;
        // Local subscribers only: the importer's subscribers on other nodes get the message through their own
        // node's import, from the exporter's interest that crosses the routes.
        _importer.Router.PublishLocal(msg.Origin, route, shown, msg.Reply, msg.HeaderSize, msg.Payload, batch);
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
