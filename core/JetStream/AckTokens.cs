using System.Buffers.Text;
using System.Runtime.CompilerServices;

namespace NatsBroker.JetStream;

/// <summary>
/// The numeric tail of an ack subject, <c>&lt;delivered&gt;.&lt;sseq&gt;.&lt;dseq&gt;.&lt;ts&gt;.&lt;pending&gt;</c>
/// (nats-server consumer.go ackReplyT "$JS.ACK.%s.%s.%d.%d.%d.%d.%d").
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
            if (!Utf8Parser.TryParse(tok, out v[i], out int used) || used != tok.Length) return false;
            if (dot < 0) { if (i != 4) return false; break; }
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
}

/// <summary>A queued ack: which message, what kind, NAK delay, the reply (double-ack / +NXT) if any, and a +TERM reason.</summary>
internal readonly record struct AckItem(AckTokens Tokens, AckKind Kind, long DelayNanos, string? Reply, int NextBatch, string? Reason = null);
