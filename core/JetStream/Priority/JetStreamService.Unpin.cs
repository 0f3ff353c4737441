using NatsBroker.JetStream.Api;
using NatsBroker.JetStream.Priority;

namespace NatsBroker.JetStream;

// $JS.API.CONSUMER.UNPIN.<stream>.<consumer> with {"group":"<group>"} (ADR-42, nats-server 2.11 jetstream_api.go
// jsConsumerUnpinRequest): drops the group's pin so the next waiting pull without an id is pinned.
public sealed partial class JetStreamService
{
    private bool ConsumerUnpin(ApiRequest req, string streamName, string name)
    {
        const string type = "consumer_unpin_response";
        // nats-server decodes the body with plain json.Unmarshal: unknown fields pass, an empty body is
        // "unexpected end of JSON input".
        if (!JsJson.TryParseUnmarshal(req.Body, PriorityJsonContext.Default.ConsumerUnpinRequest, GoSchemas.ConsumerUnpinRequest, out var r, out var perr))
            return Fail(req, type, perr!);
        var group = r!.Group;
        if (string.IsNullOrEmpty(group)) return Fail(req, type, JsErrors.InvalidJson("consumer group not specified"));
        if (!PriorityConfigCheck.IsValidGroupName(group)) return Fail(req, type, PriorityErrors.ConsumerInvalidGroupName);
        if (!req.JetStream.TryGet(streamName, out var stream)) return Fail(req, type, JsErrors.StreamNotFound);
        if (!stream.TryGetConsumer(name, out var c)) return Fail(req, type, JsErrors.ConsumerNotFound);
        if (Array.IndexOf(c.Config.PriorityGroups ?? [], group) < 0) return Fail(req, type, PriorityErrors.ConsumerInvalidPriorityGroup);
        c.UnpinByAdmin(group);
        return Respond(req, JsJson.Serialize(new ConsumerUnpinResponse { Type = P + type }, PriorityJsonContext.Default.ConsumerUnpinResponse));
    }
}
