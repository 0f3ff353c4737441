using System.Globalization;

namespace NatsBroker.JetStream;

// A consumer's advisories and ack metrics (nats-server consumer.go processNak, processTerm, notifyDeliveryExceeded,
// sampleAck). Subjects are built once per consumer; nothing is serialized unless someone listens.
internal sealed partial class JsConsumer
{
    private byte[]? _nakSubject, _termSubject, _maxDeliverSubject, _ackMetricSubject;
    private string? _sampleFreqText;
    private int _sampleFreq;

    private JsAdvisories Advisories => _stream.Js.Advisories;

    private void AdviseNak(ulong consumerSeq, ulong streamSeq, ulong deliveries) =>
        Advisories.Nak(_nakSubject ??= JsAdvisories.ConsumerSubject(JsAdvisories.ConsumerNaked, _stream.Name, Name),
            _stream.Name, Name, consumerSeq, streamSeq, deliveries);

    private void AdviseTerminated(ulong consumerSeq, ulong streamSeq, ulong deliveries, string? reason) =>
        Advisories.Terminated(_termSubject ??= JsAdvisories.ConsumerSubject(JsAdvisories.ConsumerTerminated, _stream.Name, Name),
            _stream.Name, Name, consumerSeq, streamSeq, deliveries, reason);

    private void AdviseMaxDeliveries(ulong streamSeq, ulong deliveries) =>
        Advisories.MaxDeliveries(_maxDeliverSubject ??= JsAdvisories.ConsumerSubject(JsAdvisories.ConsumerMaxDeliveries, _stream.Name, Name),
            _stream.Name, Name, streamSeq, deliveries);

    /// <summary>
    /// Sends the consumer_ack metric for a sample of acks: sample_freq "N%" or "N" (nats-server shouldSample:
    /// 0 never, 100 or more always, otherwise when a random 0..99 is at most N).
    /// </summary>
    private void SampleAck(ulong consumerSeq, ulong streamSeq, ulong deliveries, long deliveredAtNanos)
    {
        int freq = SampleFrequency();
        if (freq <= 0) return;
        if (freq < 100 && Random.Shared.Next(100) > freq) return;
        Advisories.AckSample(_ackMetricSubject ??= JsAdvisories.ConsumerSubject(JsAdvisories.ConsumerAckMetric, _stream.Name, Name),
            _stream.Name, Name, consumerSeq, streamSeq, deliveries, GoTime.NowNanos() - deliveredAtNanos);
    }

    private int SampleFrequency()
    {
        var text = Config.SampleFreq;
        if (!ReferenceEquals(text, _sampleFreqText))
        {
            _sampleFreqText = text;
            _sampleFreq = ParseSampleFrequency(text, out int f) ? f : 0;
        }
        return _sampleFreq;
    }

    /// <summary>"N%" or "N" with N ≥ 0 (nats-server checkConsumerCfg; anything else is error 10095).</summary>
    internal static bool ParseSampleFrequency(string? text, out int frequency)
    {
        frequency = 0;
        if (string.IsNullOrEmpty(text)) return true;
        var s = text.EndsWith('%') ? text[..^1] : text;
        return int.TryParse(s, NumberStyles.AllowLeadingSign, CultureInfo.InvariantCulture, out frequency) && frequency >= 0;
    }
}
