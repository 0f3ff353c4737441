using System.Text;
using System.Text.Json;
using System.Text.Json.Serialization.Metadata;
using NatsBroker.JetStream.Api;
using NatsBroker.Server;

namespace NatsBroker.JetStream;

/// <summary>
/// JetStream advisories and metrics ($JS.EVENT.ADVISORY.&gt; and $JS.EVENT.METRIC.&gt;), published into the
/// account (its own subject space: advisories of one account never reach another) as nats-server's jetstream_events.go / consumer.go sendAdvisory do: nothing is built or sent unless some
/// subscription is interested in the subject, so advisories cost a subscription lookup when nobody listens.
/// Called from API workers, stream workers and consumer loops (possibly under a consumer's lock: publishing only
/// copies into subscribers' buffers or bounded queues, it never calls back into the consumer).
/// </summary>
internal sealed partial class JsAdvisories(JsAccount js)
{
    public const string ApiAudit = "$JS.EVENT.ADVISORY.API";
    public const string StreamCreated = "$JS.EVENT.ADVISORY.STREAM.CREATED";
    public const string StreamDeleted = "$JS.EVENT.ADVISORY.STREAM.DELETED";
    public const string StreamUpdated = "$JS.EVENT.ADVISORY.STREAM.UPDATED";
    public const string ConsumerCreated = "$JS.EVENT.ADVISORY.CONSUMER.CREATED";
    public const string ConsumerDeleted = "$JS.EVENT.ADVISORY.CONSUMER.DELETED";
    public const string ConsumerPause = "$JS.EVENT.ADVISORY.CONSUMER.PAUSE";
    public const string ConsumerMaxDeliveries = "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES";
    public const string ConsumerNaked = "$JS.EVENT.ADVISORY.CONSUMER.MSG_NAKED";
    public const string ConsumerTerminated = "$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED";
    public const string ConsumerAckMetric = "$JS.EVENT.METRIC.CONSUMER.ACK";

    private const string AdvisoryType = "io.nats.jetstream.advisory.v1.";
    private static readonly byte[] ApiAuditSubject = Encoding.ASCII.GetBytes(ApiAudit);
    private static readonly JsAdvisoryJsonContext Json = JsAdvisoryJsonContext.Default;

    private string? Domain => string.IsNullOrEmpty(js.Domain) ? null : js.Domain;

    /// <summary>The per-consumer subjects (&lt;prefix&gt;.&lt;stream&gt;.&lt;consumer&gt;), built once per consumer.</summary>
    public static byte[] ConsumerSubject(string prefix, string stream, string consumer) => Encoding.UTF8.GetBytes($"{prefix}.{stream}.{consumer}");

    /// <summary>The API audit of one answered request (nats-server sendJetStreamAPIAuditAdvisory).</summary>
    public void Audit(ApiRequest req, byte[] response)
    {
        if (!js.HasInterest(ApiAuditSubject)) return;
        Send(ApiAuditSubject, new JsApiAuditAdvisory
        {
            Type = AdvisoryType + "api_audit",
            Server = js.ServerName,
            Client = ClientInfo(req.Origin),
            Subject = req.SubjectString,
            Request = req.Body.IsEmpty ? null : Encoding.UTF8.GetString(req.Body),
            Response = Encoding.UTF8.GetString(response),
            Domain = Domain,
        }, Json.JsApiAuditAdvisory);
    }

    /// <summary>stream_action: "create", "delete" or "modify" on STREAM.CREATED/DELETED/UPDATED.&lt;stream&gt;.</summary>
    public void StreamAction(string stream, string action)
    {
        string prefix = action switch { "create" => StreamCreated, "delete" => StreamDeleted, _ => StreamUpdated };
        var subject = Encoding.UTF8.GetBytes(prefix + "." + stream);
        if (!js.HasInterest(subject)) return;
        Send(subject, new JsStreamActionAdvisory { Type = AdvisoryType + "stream_action", Stream = stream, Action = action, Domain = Domain },
            Json.JsStreamActionAdvisory);
    }

    /// <summary>consumer_action: "create" or "delete" on CONSUMER.CREATED/DELETED.&lt;stream&gt;.&lt;consumer&gt;.</summary>
    public void ConsumerAction(string stream, string consumer, string action)
    {
        var subject = ConsumerSubject(action == "create" ? ConsumerCreated : ConsumerDeleted, stream, consumer);
        if (!js.HasInterest(subject)) return;
        Send(subject, new JsConsumerActionAdvisory { Type = AdvisoryType + "consumer_action", Stream = stream, Consumer = consumer, Action = action, Domain = Domain },
            Json.JsConsumerActionAdvisory);
    }

    /// <summary>consumer_pause (2.11): paused is true while pause_until is in the future.</summary>
    public void Pause(string stream, string consumer, DateTime? pauseUntil)
    {
        var subject = ConsumerSubject(ConsumerPause, stream, consumer);
        if (!js.HasInterest(subject)) return;
        var until = pauseUntil ?? DateTime.MinValue;
        Send(subject, new JsConsumerPauseAdvisory
        {
            Type = AdvisoryType + "consumer_pause",
            Stream = stream,
            Consumer = consumer,
            Paused = pauseUntil is { } u && u > DateTime.UtcNow,
            PauseUntil = DateTime.SpecifyKind(until, DateTimeKind.Utc),
            Domain = Domain,
        }, Json.JsConsumerPauseAdvisory);
    }

    public void MaxDeliveries(byte[] subject, string stream, string consumer, ulong streamSeq, ulong deliveries)
    {
        if (!js.HasInterest(subject)) return;
        Send(subject, new JsConsumerDeliveryExceededAdvisory
        {
            Type = AdvisoryType + "max_deliver", Stream = stream, Consumer = consumer, StreamSeq = streamSeq, Deliveries = deliveries, Domain = Domain,
        }, Json.JsConsumerDeliveryExceededAdvisory);
    }

    public void Nak(byte[] subject, string stream, string consumer, ulong consumerSeq, ulong streamSeq, ulong deliveries)
    {
        if (!js.HasInterest(subject)) return;
        Send(subject, new JsConsumerDeliveryNakAdvisory
        {
            Type = AdvisoryType + "nak", Stream = stream, Consumer = consumer, ConsumerSeq = consumerSeq, StreamSeq = streamSeq, Deliveries = deliveries, Domain = Domain,
        }, Json.JsConsumerDeliveryNakAdvisory);
    }

    public void Terminated(byte[] subject, string stream, string consumer, ulong consumerSeq, ulong streamSeq, ulong deliveries, string? reason)
    {
        if (!js.HasInterest(subject)) return;
        Send(subject, new JsConsumerDeliveryTerminatedAdvisory
        {
            Type = AdvisoryType + "terminated", Stream = stream, Consumer = consumer, ConsumerSeq = consumerSeq, StreamSeq = streamSeq, Deliveries = deliveries,
            Reason = string.IsNullOrEmpty(reason) ? null : reason, Domain = Domain,
        }, Json.JsConsumerDeliveryTerminatedAdvisory);
    }

    /// <summary>A sampled ack (consumer sample_freq): ack_time is nanoseconds since the delivery.</summary>
    public void AckSample(byte[] subject, string stream, string consumer, ulong consumerSeq, ulong streamSeq, ulong deliveries, long ackTimeNanos)
    {
        if (!js.HasInterest(subject)) return;
        Send(subject, new JsConsumerAckMetric
        {
            Type = "io.nats.jetstream.metric.v1.consumer_ack", Stream = stream, Consumer = consumer, ConsumerSeq = consumerSeq, StreamSeq = streamSeq,
            AckTime = ackTimeNanos, Deliveries = deliveries, Domain = Domain,
        }, Json.JsConsumerAckMetric);
    }

    private void Send<T>(byte[] subject, T advisory, JsonTypeInfo<T> info) where T : TypedEvent
    {
        advisory.Id = Nuid.Next();
        advisory.Timestamp = DateTime.UtcNow;
        js.Router.PublishInternal(subject, default, default, JsonSerializer.SerializeToUtf8Bytes(advisory, info));
    }

    /// <summary>
    /// Who made the request, as nats-server's ClientInfo (2.9 writes acc, rtt and server; later versions the
    /// connection's details too). Null when the server itself published the request.
    /// </summary>
    private AdvisoryClientInfo? ClientInfo(object? origin)
    {
        if (origin is not ClientConnection c)
            return origin is null ? null : new AdvisoryClientInfo { Acc = js.Name, Server = js.ServerName };
        var connect = c.Connect;
        return new AdvisoryClientInfo
        {
            Start = c.ConnectedAt.ToUniversalTime(),
            Host = c.RemoteIp,
            Id = c.Id,
            Acc = js.Name,
            User = string.IsNullOrEmpty(c.AuthorizedUser) ? null : c.AuthorizedUser,
            Name = string.IsNullOrEmpty(connect?.Name) ? null : connect.Name,
            Lang = string.IsNullOrEmpty(connect?.Lang) ? null : connect.Lang,
            Ver = string.IsNullOrEmpty(connect?.Version) ? null : connect.Version,
            Rtt = c.Rtt > TimeSpan.Zero ? (long)(c.Rtt.TotalMilliseconds * 1_000_000) : null,
            Server = js.ServerName,
            Kind = "Client",
            ClientType = "nats",
        };
    }
}
