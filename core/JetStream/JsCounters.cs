using System.Globalization;
using System.Numerics;
using System.Text;
using System.Text.Json;
using NatsBroker.Contracts;
using NatsBroker.JetStream.Api;
using NatsBroker.JetStream.Batching;

namespace NatsBroker.JetStream;

// Distributed counters (ADR-49, nats-server 2.12 stream.go processJetStreamMsgWithBatch): on a stream with
// allow_msg_counter every message carries Nats-Incr (a big integer, "+1", "-10", "0") and no payload; the server
// adds it to the subject's last value and stores {"val":"<total>"} with the headers as published. The PubAck gets
// "val". A counter stream that sources other counter streams aggregates them per source (JsCounters.Sources.cs).
internal sealed partial class JsStream
{
    public const string IncrHeader = "Nats-Incr";
    private byte[] _counterScratch = new byte[64];
    private string? _counterValue; // the total of the message being stored (worker thread only)

    /// <summary>
    /// The Nats-Incr checks nats-server makes first among the header checks; null when the message may go on. A
    /// <paramref name="sourced"/> message is only checked for a readable increment: it is stored verbatim (a
    /// non-counter stream) or aggregated (a counter stream).
    /// </summary>
    private static ApiError? CheckCounterHeaders(ReadOnlySpan<byte> hdr, int payloadLength, StreamConfig cfg, bool sourced)
    {
        var incr = NatsHeaders.Get(hdr, IncrHeader);
        if (incr.IsEmpty) return null;
        if (!TryParseIncrement(incr, out _)) return BatchErrors.MessageIncrInvalid;
        if (sourced) return null;
        if (cfg.AllowMsgCounter != true) return BatchErrors.MessageIncrDisabled;
        if (payloadLength > 0) return BatchErrors.MessageIncrPayload;
        if (!NatsHeaders.Get(hdr, NatsHeaders.Rollup).IsEmpty
            || !NatsHeaders.Get(hdr, NatsHeaders.ExpectedStream).IsEmpty
            || !NatsHeaders.Get(hdr, NatsHeaders.ExpectedLastMsgId).IsEmpty
            || !NatsHeaders.Get(hdr, "Nats-Expected-Last-Subject-Sequence-Subject").IsEmpty
            || NatsHeaders.Has(hdr, NatsHeaders.ExpectedLastSeq)
            || NatsHeaders.Has(hdr, NatsHeaders.ExpectedLastSubjSeq))
            return BatchErrors.MessageIncrInvalid;
        return null;
    }

    /// <summary>Go big.Int SetString(s, 10): an optional sign and decimal digits.</summary>
    private static bool TryParseIncrement(ReadOnlySpan<byte> s, out BigInteger value)
    {
        value = default;
        var digits = s.Length > 0 && (s[0] == (byte)'+' || s[0] == (byte)'-') ? s[1..] : s;
        if (digits.IsEmpty) return false;
        foreach (byte c in digits)
        {
            if (c is < (byte)'0' or > (byte)'9') return false;
        }
        return BigInteger.TryParse(Encoding.ASCII.GetString(s), NumberStyles.AllowLeadingSign, CultureInfo.InvariantCulture, out value);
    }

    /// <summary>
    /// For a counter stream: the new total of <paramref name="subject"/> as the payload to store
    /// ({"val":"N"}), or the error (increment missing, last value unreadable). When sources are involved (a sourced
    /// message, or a subject whose last message names sources) the headers are rewritten into <see cref="_counterHdr"/>
    /// (<paramref name="headersRewritten"/>): the per-source
    /// values in Nats-Counter-Sources and, for a sourced message, Nats-Incr as the change since that source's last
    /// value (nats-server processJetStreamMsgWithBatch).
    /// </summary>
    private ApiError? CountIncrement(ReadOnlySpan<byte> subject, ReadOnlySpan<byte> hdr, ReadOnlySpan<byte> published, out ReadOnlySpan<byte> payload, out bool headersRewritten)
    {
        payload = default;
        headersRewritten = false;
        _counterValue = null;
        var incrText = NatsHeaders.Get(hdr, IncrHeader);
        if (incrText.IsEmpty || !TryParseIncrement(incrText, out var incr)) return BatchErrors.MessageIncrMissing;
        var probe = t_probe ??= new StoredMessage(64);
        BigInteger total = BigInteger.Zero;
        CounterSources? sources = null;
        if (Store.LoadLast(subject, probe) == StoreStatus.Ok)
        {
            if (!TryReadCounterValue(probe.Payload, out total)) return BatchErrors.MessageCounterBroken;
            var stored = NatsHeaders.Get(probe.Headers, CounterSources.Header);
            if (!stored.IsEmpty && !CounterSources.TryParse(stored, out sources)) return BatchErrors.MessageCounterBroken;
        }
        var source = NatsHeaders.Get(hdr, JsSourcing.SourceHeader);
        if (!source.IsEmpty && CountSourced(subject, source, published, ref sources, ref incr) is { } sourceError) return sourceError;
        if (sources is { Count: > 0 })
        {
            CounterHeaders(hdr, sources, source.IsEmpty ? null : incr);
            headersRewritten = true;
        }
        total += incr;
        _counterValue = total.ToString(CultureInfo.InvariantCulture);
        string json = "{\"val\":\"" + _counterValue + "\"}";
        if (_counterScratch.Length < json.Length) _counterScratch = new byte[json.Length * 2];
        int n = Encoding.ASCII.GetBytes(json, _counterScratch);
        payload = _counterScratch.AsSpan(0, n);
        return null;
    }

    /// <summary>{"stream":"S", "seq":N,"val":"T"} (nats-server appends ,"val":%q).</summary>
    private ReadOnlySpan<byte> CounterPubAck(ulong seq)
    {
        var ack = PubAck(seq, duplicate: false);
        string tail = ",\"val\":\"" + _counterValue + "\"}";
        var buf = new byte[ack.Length - 1 + tail.Length];
        ack[..^1].CopyTo(buf);
        Encoding.ASCII.GetBytes(tail, buf.AsSpan(ack.Length - 1));
        return buf;
    }
}
