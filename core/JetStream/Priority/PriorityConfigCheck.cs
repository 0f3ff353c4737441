using NatsBroker.JetStream.Api;

namespace NatsBroker.JetStream.Priority;

/// <summary>
/// Consumer config rules of priority groups (nats-server consumer.go setConsumerConfigDefaults and checkConsumerCfg,
/// ADR-42): the policy, its groups and priority_timeout.
/// </summary>
internal static class PriorityConfigCheck
{
    public const string Overflow = "overflow";
    public const string PinnedClient = "pinned_client";
    public const string Prioritized = "prioritized";

    /// <summary>nats-server JsDefaultPinnedTTL: the pin's grace period when pinned_client leaves it unset.</summary>
    public const long DefaultPinnedTtlNanos = 2 * 60 * 1_000_000_000L;

    /// <summary>Group names: ADR-6 limited-term, at most 16 characters (nats-server validGroupName).</summary>
    public static bool IsValidGroupName(string group)
    {
        if (group.Length is 0 or > 16) return false;
        foreach (char ch in group)
        {
            if (!(char.IsAsciiLetterOrDigit(ch) || ch is '/' or '_' or '=' or '-')) return false;
        }
        return true;
    }

    /// <summary>Normalises (none → absent, negative timeout → 0, pinned default timeout) and checks the config.</summary>
    public static ApiError? Check(ConsumerConfig c)
    {
        // nats-server's PriorityPolicy.UnmarshalJSON refuses unknown names while the request is parsed.
        if (c.PriorityPolicy is not (null or "none" or Overflow or PinnedClient or Prioritized))
            return JsErrors.InvalidJson($"unknown priority policy: \"{c.PriorityPolicy}\"");
        if (c.PriorityPolicy == "none") c.PriorityPolicy = null;
        if (c.PriorityGroups is { Length: 0 }) c.PriorityGroups = null;
        if (c.PriorityTimeout is <= 0) c.PriorityTimeout = null;
        if (c.PriorityPolicy == PinnedClient && c.PriorityTimeout is null) c.PriorityTimeout = DefaultPinnedTtlNanos;

        if (c.PriorityPolicy is not null)
        {
            if (!string.IsNullOrEmpty(c.DeliverSubject)) return PriorityErrors.ConsumerPushWithPriorityGroup;
            if (c.PriorityGroups is null) return PriorityErrors.ConsumerPriorityPolicyWithoutGroup;
            foreach (var group in c.PriorityGroups)
            {
                if (string.IsNullOrEmpty(group)) return PriorityErrors.ConsumerEmptyGroupName;
                if (!IsValidGroupName(group)) return PriorityErrors.ConsumerInvalidGroupName;
            }
        }
        else
        {
            if (c.PriorityGroups is not null) return PriorityErrors.ConsumerPriorityGroupWithPolicyNone;
            if (c.PriorityTimeout is not null) return PriorityErrors.ConsumerPinnedTtlWithoutPriorityPolicyNone;
        }
        return null;
    }
}
