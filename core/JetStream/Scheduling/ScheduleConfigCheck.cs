using NatsBroker.JetStream.Api;

namespace NatsBroker.JetStream.Scheduling;

/// <summary>Stream config rules of message schedules (nats-server stream.go checkStreamCfg / checkStreamUpdate).</summary>
internal static class ScheduleConfigCheck
{
    /// <summary>
    /// Normalises allow_msg_schedules (false is omitted) and checks it: not with counters, discard new, a mirror or
    /// sources; turns on rollups (and off deny_purge), which the schedule messages need, as nats-server does when
    /// not pedantic.
    /// </summary>
    public static ApiError? Check(StreamConfig c)
    {
        if (c.AllowMsgSchedules == false) c.AllowMsgSchedules = null;
        if (c.AllowMsgSchedules != true) return null;
        if (c.AllowMsgCounter == true) return JsErrors.StreamInvalidConfig("counter stream cannot use message schedules");
        if (c.Discard == StreamDiscardPolicy.New) return JsErrors.StreamInvalidConfig("message scheduling cannot use discard new");
        if (!c.AllowRollupHdrs)
        {
            c.AllowRollupHdrs = true;
            c.DenyPurge = false;
        }
        if (c.Mirror is not null) return ScheduleErrors.MirrorWithMsgSchedules;
        if (c.Sources is { Length: > 0 }) return ScheduleErrors.SourceWithMsgSchedules;
        return null;
    }

    /// <summary>Schedules, once allowed, can not be turned off.</summary>
    public static ApiError? CheckUpdate(StreamConfig old, StreamConfig next) =>
        old.AllowMsgSchedules == true && next.AllowMsgSchedules != true
            ? JsErrors.StreamInvalidConfig("message schedules can not be disabled")
            : null;
}
