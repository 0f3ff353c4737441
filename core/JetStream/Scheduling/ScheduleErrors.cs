using NatsBroker.JetStream.Api;

namespace NatsBroker.JetStream.Scheduling;

/// <summary>The errors of message schedules (ADR-51) as nats-server's server/errors.json (2.12–2.14).</summary>
internal static class ScheduleErrors
{
    private static ApiError E(int code, int errCode, string description) => new() { Code = code, ErrCode = errCode, Description = description };

    public static ApiError MirrorWithMsgSchedules => E(400, 10186, "stream mirrors can not also schedule messages");
    public static ApiError SourceWithMsgSchedules => E(400, 10187, "stream source can not also schedule messages");
    public static ApiError Disabled => E(400, 10188, "message schedules is disabled");
    public static ApiError PatternInvalid => E(400, 10189, "message schedules pattern is invalid");
    public static ApiError TargetInvalid => E(400, 10190, "message schedules target is invalid");
    public static ApiError TtlInvalid => E(400, 10191, "message schedules invalid per-message TTL");
    public static ApiError RollupInvalid => E(400, 10192, "message schedules invalid rollup");
    public static ApiError SourceInvalid => E(400, 10203, "message schedules source is invalid");
    public static ApiError SchedulerInvalid => E(400, 10212, "message schedules invalid scheduler");
    public static ApiError TimeZoneInvalid => E(400, 10223, "message schedules time zone is invalid");
}
