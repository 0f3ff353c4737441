using NatsBroker.JetStream.Api;

namespace NatsBroker.JetStream.Batching;

/// <summary>Stream config rules of batching and counters (nats-server stream.go checkStreamCfg / checkStreamUpdate).</summary>
internal static class BatchConfigCheck
{
    /// <summary>Normalises the 2.12–2.14 flags (false is omitted, as Go's omitempty) and checks their combinations.</summary>
    public static ApiError? Check(StreamConfig c)
    {
        if (c.AllowAtomic == false) c.AllowAtomic = null;
        if (c.AllowBatched == false) c.AllowBatched = null;
        if (c.AllowMsgCounter == false) c.AllowMsgCounter = null;
        if (c.AllowMsgCounter == true)
        {
            if (c.Discard == StreamDiscardPolicy.New) return JsErrors.StreamInvalidConfig("counter stream cannot use discard new");
            if (c.AllowMsgTtl) return JsErrors.StreamInvalidConfig("counter stream cannot use message TTLs");
            if (c.AllowMsgSchedules == true) return JsErrors.StreamInvalidConfig("counter stream cannot use message schedules");
            if (c.Retention != RetentionPolicy.Limits) return JsErrors.StreamInvalidConfig("counter stream can only use limits retention");
        }
        if (c.PersistMode == "async" && c.AllowAtomic == true)
            return JsErrors.StreamInvalidConfig("async persist mode is not supported with atomic batch publish");
        return null;
    }

    /// <summary>What an update may not change.</summary>
    public static ApiError? CheckUpdate(StreamConfig old, StreamConfig next) =>
        old.AllowMsgCounter != next.AllowMsgCounter
            ? JsErrors.StreamInvalidConfig("stream configuration update can not change message counter setting")
            : null;
}
