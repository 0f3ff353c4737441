using System.Buffers;

namespace NatsBroker.Routing;

/// <summary>
/// One publish being fanned out: subject, reply, header size (-1: no headers), header+payload bytes, who sent it,
/// and the client protocol line pieces that client destinations format once per publish and share (only the sid
/// differs between them). A ref struct: it lives on the publisher's stack for one <see cref="Router.Publish"/>.
/// </summary>
public ref struct RoutedMessage
{
    public RoutedMessage(IPublisher? origin, ReadOnlySpan<byte> subject, ReadOnlySpan<byte> reply, int headerSize, in ReadOnlySequence<byte> payload)
        : this(origin, subject, subject, reply, headerSize, payload)
    {
    }

    /// <param name="routeSubject">The subject subscriptions were matched on, when it differs from the one subscribers
    /// see (a JetStream delivery: routed on the deliver subject or pull reply, shown with the stored subject).</param>
    public RoutedMessage(IPublisher? origin, ReadOnlySpan<byte> routeSubject, ReadOnlySpan<byte> subject, ReadOnlySpan<byte> reply, int headerSize, in ReadOnlySequence<byte> payload)
    {
        Origin = origin;
        RouteSubject = routeSubject;
        Subject = subject;
        Reply = reply;
        HeaderSize = headerSize;
        Payload = payload;
    }

    public readonly IPublisher? Origin;
    /// <summary>The subject the subscriptions were matched on (nats-server's pa.subject).</summary>
    public readonly ReadOnlySpan<byte> RouteSubject;
    /// <summary>The subject subscribers see in MSG (nats-server's pa.deliver when set, else pa.subject).</summary>
    public readonly ReadOnlySpan<byte> Subject;
    public readonly ReadOnlySpan<byte> Reply;
    /// <summary>Size of the header block at the start of <see cref="Payload"/>; -1 when the message has none.</summary>
    public readonly int HeaderSize;
    /// <summary>Headers (if any) followed by the body.</summary>
    public readonly ReadOnlySequence<byte> Payload;

    /// <summary>
    /// Whether the message is shown under another subject than it was routed on (a JetStream delivery). A
    /// forwarder into another account then routes on the route subject and keeps showing <see cref="Subject"/>,
    /// as nats-server passes pa.deliver along (client.go processServiceImport).
    /// </summary>
    public readonly bool IsRedirected => RouteSubject != Subject;

    /// <summary>The body without the header block.</summary>
    public readonly ReadOnlySequence<byte> Body => HeaderSize > 0 ? Payload.Slice(HeaderSize) : Payload;

    // Lazily formatted MSG/HMSG line pieces (see ClientConnection.Delivery); 0 = not formatted yet.
    internal ProtocolLineScratch? Lines;
    internal int MsgPrefixLength, MsgSuffixLength, HmsgPrefixLength, HmsgSuffixLength;
}

/// <summary>
/// Per-thread scratch for the MSG/HMSG line pieces of the publish being routed. Routing runs synchronously on the
/// publisher's thread, so one set per thread serves every connection. Grown when a line needs more room.
/// </summary>
/// A publish made from inside another one's delivery (an internal subscriber that publishes synchronously) gets
/// the next level's scratch, so it never overwrites the outer publish's lines.
/// </remarks>
internal sealed class ProtocolLineScratch(int size)
{
    [ThreadStatic] private static ProtocolLineScratch?[]? t_levels;
    public readonly byte[] MsgPrefix = new byte[size];
    public readonly byte[] MsgSuffix = new byte[size];
    public readonly byte[] HmsgPrefix = new byte[size];
    public readonly byte[] HmsgSuffix = new byte[size];

    /// <summary>Scratch for a line of up to <paramref name="needed"/> bytes at nesting level <paramref name="depth"/> (1-based).</summary>
    public static ProtocolLineScratch For(int needed, int depth)
    {
        var levels = t_levels ??= new ProtocolLineScratch?[Router.MaxNesting + 1];
        var s = levels[depth];
        if (s is null || s.MsgPrefix.Length < needed) levels[depth] = s = new ProtocolLineScratch(Math.Max(needed, 4096 + 64));
        return s;
    }
}
