using System.Buffers.Text;
using System.Runtime.CompilerServices;

namespace NatsBroker.JetStream;

/// <summary>
/// The numeric tail of an ack subject, <c>&lt;delivered&gt;.&lt;sseq&gt;.&lt;dseq&gt;.&lt;ts&gt;.&lt;pending&gt;</c>
/// (nats-server consumer.go ackReplyT "$JS.ACK.%s.%s.%d.%d.%d.%d.%d"). Five tokens, as nats-server's ack
/// subscription ($JS.ACK.&lt;stream&gt;.&lt;consumer&gt;.*.*.*.*.*) requires; a token that is not a number reads as
/// nats-server's parseAckReplyNum -1 does, the largest sequence (such acks then match nothing).
/// </summary>
internal readonly record struct AckTokens(ulong Deliveries, ulong StreamSeq, ulong ConsumerSeq)
{
    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    public static bool TryParse(ReadOnlySpan<byte> tail, out AckTokens tokens)
    {
        tokens = default;
        Span<ulong> v = stackalloc ulong[5];
        for (int i = 0; i < 5; i++)
        {
            int dot = tail.IndexOf((byte)'.');
            var tok = dot < 0 ? tail : tail[..dot];
            if (!Utf8Parser.TryParse(tok, out v[i], out int used) || used != tok.Length || tok.IsEmpty || tok[0] is (byte)'+' or (byte)'-') v[i] = ulong.MaxValue;
            if (dot < 0) { if (i != 4) return false; break; }
            if (i == 4) return false; // more than five tokens
            tail = tail[(dot + 1)..];
        }
        tokens = new AckTokens(v[0], v[1], v[2]);
        return true;
    }
}

/// <summary>What an ack message asks (nats-server consumer.go processAck).</summary>
internal enum AckKind
{
    Ack,
    Nak,
    Progress,
    Term,
    Next,
    /// <summary>An unrecognised body: nothing happens but the reply (nats-server processAck's default case).</summary>
    Other,
}

/// <summary>
/// A queued ack: which message, what kind, NAK delay, the reply (double-ack / +NXT) if any, a +TERM reason, and for
/// +NXT the pull request it carries (or why that request is refused, the text after "400 Bad Request - ").
/// </summary>
internal readonly record struct AckItem(AckTokens Tokens, AckKind Kind, long DelayNanos, string? Reply, string? Reason = null,
    PullFields Next = default, string? NextError = null);
