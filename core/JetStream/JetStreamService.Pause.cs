using NatsBroker.JetStream.Api;

namespace NatsBroker.JetStream;

// $JS.API.CONSUMER.PAUSE.<stream>.<consumer> (nats-server 2.11 jetstream_api.go jsConsumerPauseRequest): sets or
// clears the consumer's pause_until and answers paused / pause_until / pause_remaining.
public sealed partial class JetStreamService
{
    private bool ConsumerPause(ApiRequest req, string streamName, string name)
    {
        const string type = "consumer_pause_response";
        ConsumerPauseRequest? r = new();
        if (!req.Body.IsEmpty)
        {
            try
            {
                r = System.Text.Json.JsonSerializer.Deserialize(req.Body, JsDirectJsonContext.Default.ConsumerPauseRequest) ?? new();
            }
            catch (System.Text.Json.JsonException ex)
            {
                return Fail(req, type, JsErrors.InvalidJson(ex.Message));
            }
        }
        if (!req.JetStream.TryGet(streamName, out var stream)) return Fail(req, type, JsErrors.StreamNotFound);
        if (!stream.TryGetConsumer(name, out var c)) return Fail(req, type, JsErrors.ConsumerNotFound);
        var until = r.PauseUntil is { } u && u > DateTime.MinValue.AddDays(1) ? DateTime.SpecifyKind(u.ToUniversalTime(), DateTimeKind.Utc) : (DateTime?)null;
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
