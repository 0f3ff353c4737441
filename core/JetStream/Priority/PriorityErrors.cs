using NatsBroker.JetStream.Api;

namespace NatsBroker.JetStream.Priority;

/// <summary>
/// The errors of consumer priority groups (ADR-42, nats-server 2.11+): code, err_code and description as
/// nats-server's server/errors.json (constant names kept in the member names).
/// </summary>
internal static class PriorityErrors
{
    private static ApiError E(int code, int errCode, string description) => new() { Code = code, ErrCode = errCode, Description = description };

    public static ApiError ConsumerPriorityPolicyWithoutGroup => E(400, 10159, "Setting PriorityPolicy requires at least one PriorityGroup to be set");
    public static ApiError ConsumerInvalidPriorityGroup => E(400, 10160, "Provided priority group does not exist for this consumer");
    public static ApiError ConsumerEmptyGroupName => E(400, 10161, "Group name cannot be an empty string");
    public static ApiError ConsumerInvalidGroupName => E(400, 10162, "Valid priority group name must match A-Z, a-z, 0-9, -_/=)+ and may not exceed 16 characters");
    public static ApiError ConsumerPushWithPriorityGroup => E(400, 10178, "priority groups can not be used with push consumers");
    public static ApiError ConsumerPriorityGroupWithPolicyNone => E(400, 10196, "consumer can not have priority groups when policy is none");
    public static ApiError ConsumerPinnedTtlWithoutPriorityPolicyNone => E(400, 10197, "PinnedTTL cannot be set when PriorityPolicy is none");
}
