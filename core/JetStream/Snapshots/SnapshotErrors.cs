using NatsBroker.JetStream.Api;

namespace NatsBroker.JetStream.Snapshots;

/// <summary>The snapshot and restore errors of nats-server's server/errors.json (constant names kept in the member names).</summary>
internal static class SnapshotErrors
{
    private static ApiError E(int code, int errCode, string description) => new() { Code = code, ErrCode = errCode, Description = description };

    /// <summary>JSSnapshotDeliverSubjectInvalidErr.</summary>
    public static ApiError DeliverSubjectInvalid { get; } = E(400, 10015, "deliver subject not valid");
    /// <summary>JSStreamSnapshotErrF.</summary>
    public static ApiError StreamSnapshot(string err) => E(500, 10064, $"snapshot failed: {err}");
    /// <summary>JSStreamRestoreErrF.</summary>
    public static ApiError StreamRestore(string err) => E(500, 10062, $"restore failed: {err}");
    /// <summary>JSStreamNameExistRestoreFailedErr.</summary>
    public static ApiError StreamNameExistRestoreFailed { get; } = E(400, 10130, "stream name already in use, cannot restore");
}

/// <summary>A restore refused with an API error of its own (nats-server's Unless(err): limits, name in use).</summary>
internal sealed class RestoreRefusedException(ApiError error) : Exception(error.Description)
{
    public ApiError Error { get; } = error;
}
