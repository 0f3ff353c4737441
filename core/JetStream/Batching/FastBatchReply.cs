namespace NatsBroker.JetStream.Batching;

/// <summary>
/// The batch state a fast-ingest message carries in its reply subject,
/// <c>&lt;prefix&gt;.&lt;id&gt;.&lt;flow&gt;.&lt;gap&gt;.&lt;seq&gt;.&lt;op&gt;.$FI</c> (nats-server stream.go getFastBatch).
/// </summary>
internal readonly struct FastBatchReply
{
    public const int OpStart = 0, OpAppend = 1, OpCommit = 2, OpCommitEob = 3, OpPing = 4;

    /// <summary>Where the batch id is in the reply subject.</summary>
    public Range Id { get; init; }
    public ushort Flow { get; init; }
    public bool GapOk { get; init; }
    public ulong Seq { get; init; }
    public int Op { get; init; }
    /// <summary>Where the seq token starts: the reply subject before it is the same for every message of a batch.</summary>
    public int SeqStart { get; init; }
    public bool Commit => Op is OpCommit or OpCommitEob;

    /// <summary>False for a reply that ends in .$FI but breaks the pattern (nats-server answers "batch publish pattern is invalid").</summary>
    public static bool TryParse(ReadOnlySpan<byte> reply, out FastBatchReply parsed)
    {
        parsed = default;
        var rest = reply[..^4]; // without ".$FI"
        if (!Last(ref rest, out var opToken)) return false;
        if (!Last(ref rest, out var seqToken)) return false;
        if (!TryOpAndSeq(opToken, seqToken, out int op, out ulong seq)) return false;
        int seqStart = rest.Length + 1;
        if (!Last(ref rest, out var gapToken)) return false;
        bool gapOk;
        if (gapToken.SequenceEqual("ok"u8)) gapOk = true;
        else if (gapToken.SequenceEqual("fail"u8)) gapOk = false;
        else return false;
        if (!Last(ref rest, out var flowToken)) return false;
        long flow = ParseInt(flowToken);
        if (flow <= 0) flow = 10;
        else if (flow > ushort.MaxValue) flow = ushort.MaxValue;
        if (!Last(ref rest, out var idToken)) return false;
        int idStart = rest.Length + 1;
        parsed = new FastBatchReply { Id = new Range(idStart, idStart + idToken.Length), Flow = (ushort)flow, GapOk = gapOk, Seq = seq, Op = op, SeqStart = seqStart };
        return true;
    }

    /// <summary>The op and seq tokens' rules (nats-server getFastBatch): false breaks the pattern.</summary>
    internal static bool TryOpAndSeq(ReadOnlySpan<byte> opToken, ReadOnlySpan<byte> seqToken, out int op, out ulong seq)
    {
        op = (int)ParseInt(opToken);
        seq = 0;
        if (op is < OpStart or > OpPing) return false;
        if (!System.Buffers.Text.Utf8Parser.TryParse(seqToken, out seq, out int used) || used != seqToken.Length || seq == 0 || seq == ulong.MaxValue) return false;
        if (seq == 1 && op == OpCommitEob) return false;
        if (op == OpStart && seq != 1) return false;
        if (op == OpAppend && seq <= 1) return false;
        return true;
    }

    /// <summary>Takes the last token off <paramref name="rest"/>; false when there is no '.' before it (nats-server LastIndexByte == -1).</summary>
    private static bool Last(ref ReadOnlySpan<byte> rest, out ReadOnlySpan<byte> token)
    {
        int dot = rest.LastIndexOf((byte)'.');
        if (dot < 0)
        {
            token = default;
            return false;
        }
        token = rest[(dot + 1)..];
        rest = rest[..dot];
        return true;
    }

    /// <summary>nats-server parseInt64: decimal digits only, else -1.</summary>
    private static long ParseInt(ReadOnlySpan<byte> s)
    {
        if (s.IsEmpty || s.Length > 18) return -1;
        long n = 0;
        foreach (byte c in s)
        {
            if (c is < (byte)'0' or > (byte)'9') return -1;
            n = n * 10 + (c - '0');
        }
        return n;
    }
}

/// <summary>
/// Parses fast-ingest reply subjects for one stream (used inside its ingest gate only), remembering the last one's
/// fixed part: every message of a batch has the same reply subject up to its seq token, so the next message of the
/// batch parses only <c>&lt;seq&gt;.&lt;op&gt;</c> after one compare (perf: the full parse, five searches for '.'
/// from the end, was ~12% of a fast-ingest stream's ingest thread). A reply whose part after the remembered prefix is
/// not exactly <c>&lt;seq&gt;.&lt;op&gt;.$FI</c> takes the full parse, so the verdict is always the full parse's.
/// </summary>
internal sealed class FastBatchReplyParser
{
    /// <summary>Longer fixed parts are not remembered (each such message takes the full parse).</summary>
    private const int MaxPrefix = 256;
    private readonly byte[] _prefix = new byte[MaxPrefix];
    private int _prefixLength;
    private FastBatchReply _last;

    public bool TryParse(ReadOnlySpan<byte> reply, out FastBatchReply parsed)
    {
        int p = _prefixLength;
        if (p > 0 && reply.Length > p + 4 && reply.StartsWith(_prefix.AsSpan(0, p)))
        {
            var tail = reply[p..^4];
            // The first '.' of the tail ends the seq token; an op token with another '.' in it is not all digits, so
            // TryOpAndSeq refuses it and the full parse decides.
            int dot = tail.IndexOf((byte)'.');
            if (dot >= 0 && FastBatchReply.TryOpAndSeq(tail[(dot + 1)..], tail[..dot], out int op, out ulong seq))
            {
                parsed = _last with { Seq = seq, Op = op };
                return true;
            }
        }
        if (!FastBatchReply.TryParse(reply, out parsed)) return false;
        _last = parsed;
        int prefix = parsed.SeqStart;
        if (prefix <= MaxPrefix)
        {
            reply[..prefix].CopyTo(_prefix);
            _prefixLength = prefix;
        }
        else _prefixLength = 0;
        return true;
    }
}
