using System.Buffers;
using System.Globalization;
using System.Text;
using NatsBroker.JetStream.Api;

namespace NatsBroker.JetStream;

// Stream subject_transform (subjects rewritten before storing) and republish (each stored message published again
// on a mapped subject with Nats-Stream / Nats-Subject / Nats-Sequence / Nats-Time-Stamp / Nats-Last-Sequence
// headers, or those and Nats-Msg-Size without the body when headers_only; nats-server stream.go
// processJetStreamMsg). Both run on the stream's ingest worker only.
internal sealed partial class JsStream
{
    // The transforms of the config they were built from (rebuilt when an update swaps the config).
    private StreamConfig? _transformsFor;
    private JsSubjectTransform? _ingestTransform, _republishTransform;
    private readonly ArrayBufferWriter<byte> _republishHeaders = new(256);

    private void RefreshTransforms(StreamConfig cfg)
    {
        if (ReferenceEquals(cfg, _transformsFor)) return;
        _ingestTransform = cfg.SubjectTransform is { } st ? JsSubjectTransform.Create(st.Src, st.Dest, out _) : null;
        _republishTransform = cfg.Republish is { } rp ? JsSubjectTransform.Create(rp.Src, rp.Dest, out _) : null;
        _transformsFor = cfg;
    }

    /// <summary>The subject to store under: the stream's subject_transform applied when it matches.</summary>
    private ReadOnlySpan<byte> IngestSubject(ReadOnlySpan<byte> subject, StreamConfig cfg)
    {
        RefreshTransforms(cfg);
        if (_ingestTransform is null) return subject;
        var mapped = _ingestTransform.Match(Encoding.UTF8.GetString(subject));
        return mapped is null ? subject : Encoding.UTF8.GetBytes(mapped);
    }

    /// <summary>The last sequence stored for <paramref name="subject"/> before this message, when republishing.</summary>
    private ulong RepublishLastSequence(ReadOnlySpan<byte> subject, StreamConfig cfg)
    {
        RefreshTransforms(cfg);
        return _republishTransform is null ? 0 : LastSequenceOf(subject);
    }

    private void Republish(ReadOnlySpan<byte> subject, ReadOnlySpan<byte> headers, ReadOnlySpan<byte> payload, ulong seq, long timestamp, ulong lastForSubject, StreamConfig cfg)
    {
        if (_republishTransform is null) return;
        var subjectText = Encoding.UTF8.GetString(subject);
        var to = _republishTransform.Match(subjectText);
        if (to is null) return;
        bool headersOnly = cfg.Republish?.HeadersOnly == true;
        _republishHeaders.ResetWrittenCount();
        (string, string)[] extra = headersOnly
            ? [("Nats-Stream", Name), ("Nats-Subject", subjectText), ("Nats-Sequence", seq.ToString(CultureInfo.InvariantCulture)),
               ("Nats-Time-Stamp", GoTime.Rfc3339Nano(timestamp)), ("Nats-Last-Sequence", lastForSubject.ToString(CultureInfo.InvariantCulture)),
               ("Nats-Msg-Size", payload.Length.ToString(CultureInfo.InvariantCulture))]
            : [("Nats-Stream", Name), ("Nats-Subject", subjectText), ("Nats-Sequence", seq.ToString(CultureInfo.InvariantCulture)),
               ("Nats-Time-Stamp", GoTime.Rfc3339Nano(timestamp)), ("Nats-Last-Sequence", lastForSubject.ToString(CultureInfo.InvariantCulture))];
        NatsHeaders.AppendHeaders(headers, extra, _republishHeaders);
        Js.Router.PublishInternal(Encoding.UTF8.GetBytes(to), default, _republishHeaders.WrittenSpan, headersOnly ? default : payload);
    }
}
