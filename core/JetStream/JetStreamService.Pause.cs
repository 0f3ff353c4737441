using NatsBroker.JetStream.Api;

namespace NatsBroker.JetStream;

// $JS.API.CONSUMER.PAUSE.<stream>.<consumer> (nats-server 2.11 jetstream_api.go jsConsumerPauseRequest): sets or
// clears the consumer's pause_until and answers paused / pause_until / pause_remaining.
public sealed partial class JetStreamService
{
    private bool ConsumerPause(ApiRequest req, string streamName, string name)
    {
        const string type = "consumer_pause_response";
        // jsConsumerPauseRequest decodes the body strictly, and only when it starts as a JSON object or array (any
        // other body, like none, resumes the consumer), before looking up the stream.
        var r = new ConsumerPauseRequest();
        if (ApiBodies.IsJsonObjectOrArray(req.Body)
            && !JsJson.TryParseStrict(req.Body, JsDirectJsonContext.Default.ConsumerPauseRequest, GoSchemas.ConsumerPauseRequest, out r, out var perr))
            return Fail(req, type, perr!);
        if (!req.JetStream.TryGet(streamName, out var stream)) return Fail(req, type, JsErrors.StreamNotFound);
        if (!stream.TryGetConsumer(name, out var c)) return Fail(req, type, JsErrors.ConsumerNotFound);
        var until = r!.PauseUntil is { } u && u > DateTime.MinValue.AddDays(1) ? DateTime.SpecifyKind(u.ToUniversalTime(), DateTimeKind.Utc) : (DateTime?)null;
        var next = CloneConfig(c.Config);
        next.PauseUntil = until;
        // nats-server jsConsumerPauseRequest: the required level follows pause_until.
        AssetVersioning.SetStatic(next);
        c.Update(next);
        var now = DateTime.UtcNow;
        var resp = new ConsumerPauseResponse
        {
            Type = P + type,
            Paused = until is { } t && t > now,
            PauseUntil = until ?? DateTime.SpecifyKind(DateTime.MinValue, DateTimeKind.Utc),
            PauseRemaining = until is { } t2 && t2 > now ? (t2 - now).Ticks * 100 : null,
        };
        return Respond(req, JsJson.Serialize(resp, JsDirectJsonContext.Default.ConsumerPauseResponse));
    }

    private static ConsumerConfig CloneConfig(ConsumerConfig c) =>
        System.Text.Json.JsonSerializer.Deserialize(
            System.Text.Json.JsonSerializer.SerializeToUtf8Bytes(c, JsJsonContext.Default.ConsumerConfig), JsJsonContext.Default.ConsumerConfig)!;
}
