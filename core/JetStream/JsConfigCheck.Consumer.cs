using NatsBroker.JetStream.Api;

namespace NatsBroker.JetStream;

// Consumer configs: nats-server 2.14.5 consumer.go setConsumerConfigDefaults, then checkConsumerCfg, in their order
// (the first refusal Go reaches is the one answered), non-pedantic.
internal static partial class JsConfigCheck
{
    /// <summary>nats-server JSMaxDescriptionLen.</summary>
    public const int MaxDescriptionLength = 4 * 1024;

    /// <summary>nats-server JSMaxMetadataLen.</summary>
    public const int MaxMetadataLength = 128 * 1024;

    private const long AckWaitDefault = 30_000_000_000;          // JsAckWaitDefault
    private const int MaxAckPendingDefault = 1000;                // JsDefaultMaxAckPending
    private const int WaitQueueDefaultMax = 512;                  // JSWaitQueueDefaultMax
    private const long EphemeralInactiveDefault = 5_000_000_000;  // JsDeleteWaitTimeDefault
    private const long SourceHealthHeartbeat = 1_000_000_000;     // stream.go sourceHealthHB

    /// <summary>isValidAssetName: no whitespace, '.', '*', '>', '\' or '/'.</summary>
    public static bool IsValidAssetName(string? name) => IsValidName(name ?? "") && !HasPathSeparators(name!);

    /// <summary>
    /// Fills nats-server's consumer defaults into <paramref name="c"/> and checks it against its stream and the
    /// account's max_ack_pending limit (0: none). Null when nats-server would accept it.
    /// </summary>
    public static ApiError? CheckConsumer(ConsumerConfig c, StreamConfig stream, int accountMaxAckPending, bool pedantic = false)
    {
        if (SetConsumerDefaults(c, stream, accountMaxAckPending, pedantic) is { } refused) return refused;
        bool push = !string.IsNullOrEmpty(c.DeliverSubject);

        if (!string.IsNullOrEmpty(c.Name) && !IsValidAssetName(c.Name))
            return JsErrors.StreamInvalidConfig(@"consumer name can not contain '.', '*', '>', '\', '/'");
        if (!string.IsNullOrEmpty(c.DurableName) && !IsValidAssetName(c.DurableName))
            return JsErrors.StreamInvalidConfig(@"consumer durable name can not contain '.', '*', '>', '\', '/'");
        if (c.NumReplicas > 0 && c.NumReplicas > stream.NumReplicas) return JsErrors.ConsumerReplicasExceedsStream;
        if (c.NumReplicas < 0) return JsErrors.ReplicasCountCannotBeNegative;
        if (stream.Retention is RetentionPolicy.Interest or RetentionPolicy.WorkQueue && c.NumReplicas != 0 && c.NumReplicas != stream.NumReplicas)
            return JsErrors.ConsumerReplicasShouldMatchStream;
        if (c.AckPolicy == AckPolicy.Invalid) return JsErrors.ConsumerAckPolicyInvalid;
        foreach (var b in c.Backoff ?? []) if (b < 0) return JsErrors.ConsumerBackOffNegative;
        if (c.AckWait < 0) return JsErrors.ConsumerAckWaitNegative;
        if (c.AckPolicy == AckPolicy.FlowControl)
        {
            if (!push) return JsErrors.ConsumerAckFcRequiresPush;
            if (c.FlowControl != true) return JsErrors.ConsumerAckFcRequiresFc;
            if (c.IdleHeartbeat != SourceHealthHeartbeat) return JsErrors.StreamInvalidConfig("flow control ack policy heartbeat needs to be 1s");
            if (c.MaxAckPending is null or <= 0) return JsErrors.ConsumerAckFcRequiresMaxAckPending;
            if (c.AckWait is not null || c.Backoff is { Length: > 0 }) return JsErrors.ConsumerAckFcRequiresNoAckWait;
            if (c.MaxDeliver > 0) return JsErrors.ConsumerAckFcRequiresNoMaxDeliver;
        }
        if (c.Backoff is { Length: > 0 } bo && c.MaxDeliver != -1 && bo.Length > c.MaxDeliver) return JsErrors.ConsumerMaxDeliverBackoff;
        if ((c.Description?.Length ?? 0) > MaxDescriptionLength) return JsErrors.ConsumerDescriptionTooLong(MaxDescriptionLength);

        if (push)
        {
            var ds = c.DeliverSubject!;
            if (!JsSubjects.IsLiteral(ds)) return JsErrors.ConsumerDeliverToWildcards;
            if (!JsSubjects.IsValid(ds)) return JsErrors.ConsumerInvalidDeliverSubject;
            // deliveryFormsCycle: the deliver subject would be stored again by the stream.
            foreach (var s in stream.Subjects ?? []) if (JsSubjects.IsSubsetOf(ds, s)) return JsErrors.ConsumerDeliverCycle;
            if (c.MaxWaiting is not (null or 0)) return JsErrors.ConsumerPushMaxWaiting;
            if (c.MaxAckPending > 0 && c.AckPolicy == AckPolicy.None) return JsErrors.ConsumerMaxPendingAckPolicyRequired;
            if (c.IdleHeartbeat is > 0 and < 100_000_000) return JsErrors.ConsumerSmallHeartbeat;
        }
        else
        {
            if (c.AckPolicy == AckPolicy.None && stream.Retention == RetentionPolicy.WorkQueue) return JsErrors.ConsumerPullRequiresAck;
            if (c.RateLimitBps is > 0) return JsErrors.ConsumerPullWithRateLimit;
            if (c.MaxWaiting < 0) return JsErrors.ConsumerMaxWaitingNegative;
            if (c.IdleHeartbeat is > 0) return JsErrors.ConsumerHbRequiresPush;
            if (c.FlowControl == true) return JsErrors.ConsumerFcRequiresPush;
            if (c.MaxBatch < 0) return JsErrors.ConsumerMaxRequestBatchNegative;
            if (c.MaxExpires is > 0 and < 1_000_000) return JsErrors.ConsumerMaxRequestExpiresTooSmall;
        }
        if (accountMaxAckPending > 0 && c.MaxAckPending > accountMaxAckPending) return JsErrors.ConsumerMaxPendingAckExcess(accountMaxAckPending);
        var limits = stream.ConsumerLimits;
        if (limits?.MaxAckPending is > 0 and var lmap && c.MaxAckPending > lmap) return JsErrors.ConsumerMaxPendingAckExcess(lmap);
        if (limits?.InactiveThreshold is > 0 and var lit && c.InactiveThreshold > lit) return JsErrors.ConsumerInactiveThresholdExcess(GoDurationText.Format(lit));

        if (!string.IsNullOrEmpty(c.FilterSubject) && c.FilterSubjects is { Length: > 0 }) return JsErrors.ConsumerDuplicateFilterSubjects;
        if (!string.IsNullOrEmpty(c.FilterSubject) && !JsSubjects.IsValid(c.FilterSubject)) return JsErrors.StreamInvalidConfig("invalid subject");
        foreach (var f in c.FilterSubjects ?? []) if (string.IsNullOrEmpty(f)) return JsErrors.ConsumerEmptyFilter;
        var filters = c.FilterSubjects is { Length: > 0 } fs ? fs : string.IsNullOrEmpty(c.FilterSubject) ? [] : [c.FilterSubject];
        for (int i = 0; i < filters.Length; i++)
        {
            if (!JsSubjects.IsValid(filters[i])) return JsErrors.StreamInvalidConfig("invalid subject");
            for (int j = 0; j < filters.Length; j++)
                if (i != j && JsSubjects.IsSubsetOf(filters[i], filters[j])) return JsErrors.ConsumerOverlappingSubjectFilters;
        }

        if (CheckStartPosition(c, filters.Length > 0) is { } start) return start;
        if (!string.IsNullOrEmpty(c.SampleFreq) && !JsConsumer.ParseSampleFrequency(c.SampleFreq, out _)) return JsErrors.ConsumerInvalidSampling(c.SampleFreq);
        if (c.FlowControl == true && c.IdleHeartbeat is null or 0) return JsErrors.ConsumerWithFlowControlNeedsHeartbeats;
        if (!string.IsNullOrEmpty(c.DurableName) && !string.IsNullOrEmpty(c.Name) && c.Name != c.DurableName)
            return JsErrors.ConsumerCreateDurableAndNameMismatch;
        if (MetadataLength(c.Metadata) > MaxMetadataLength) return JsErrors.ConsumerMetadataLength($"{MaxMetadataLength / 1024}KB");
        if (Priority.PriorityConfigCheck.Check(c) is { } priority) return priority;

        // consumer.go updateInactiveThreshold: an ephemeral without a threshold goes after 5 s without interest.
        if (string.IsNullOrEmpty(c.DurableName) && c.InactiveThreshold is null or 0) c.InactiveThreshold = EphemeralInactiveDefault;
        return null;
    }

    /// <summary>
    /// setConsumerConfigDefaults: negatives to their neutral value, then the defaults; in pedantic mode (the request's
    /// "pedantic": true) each of those changes is refused with 10157 instead, in Go's order.
    /// </summary>
    private static ApiError? SetConsumerDefaults(ConsumerConfig c, StreamConfig stream, int accountMaxAckPending, bool pedantic)
    {
        if (pedantic)
        {
            if (c.MaxDeliver < -1) return JsErrors.Pedantic("max_deliver must be set to -1");
            if (c.MaxWaiting < 0) return JsErrors.Pedantic("max_waiting must not be negative");
            if (c.MaxAckPending < -1) return JsErrors.Pedantic("max_ack_pending must be set to -1");
            if (c.MaxBatch < 0) return JsErrors.Pedantic("max_batch must not be negative");
            if (c.MaxExpires < 0) return JsErrors.Pedantic("max_expires must not be negative");
            if (c.MaxBytes < 0) return JsErrors.Pedantic("max_bytes must not be negative");
            if (c.IdleHeartbeat < 0) return JsErrors.Pedantic("idle_heartbeat must not be negative");
            if (c.InactiveThreshold < 0) return JsErrors.Pedantic("inactive_threshold must not be negative");
            if (c.PriorityTimeout < 0) return JsErrors.Pedantic("priority_timeout must not be negative");
        }
        if (c.MaxDeliver is null or 0 or < -1) c.MaxDeliver = -1;
        if (c.MaxWaiting < 0) c.MaxWaiting = null;
        if (c.MaxAckPending < -1) c.MaxAckPending = -1;
        if (c.MaxBatch < 0) c.MaxBatch = null;
        if (c.MaxExpires < 0) c.MaxExpires = null;
        if (c.MaxBytes < 0) c.MaxBytes = null;
        if (c.IdleHeartbeat < 0) c.IdleHeartbeat = null;
        if (c.InactiveThreshold < 0) c.InactiveThreshold = null;
        if (c.PriorityTimeout < 0) c.PriorityTimeout = null;
        if (string.IsNullOrEmpty(c.DeliverSubject) && c.MaxWaiting is null or 0) c.MaxWaiting = WaitQueueDefaultMax;
        if (c.AckWait is null or 0 && c.AckPolicy is AckPolicy.Explicit or AckPolicy.All) c.AckWait = AckWaitDefault;
        if (pedantic && c.Backoff is { Length: > 0 } pbo && (c.AckWait ?? 0) != pbo[0]) return JsErrors.Pedantic("first backoff value has to equal batch AckWait");
        if (pedantic && c.MaxAckPending is null or 0 && stream.ConsumerLimits?.MaxAckPending > 0)
            return JsErrors.Pedantic("max_ack_pending must be set if it's configured in stream limits");
        if (pedantic && c.InactiveThreshold is null or 0 && stream.ConsumerLimits?.InactiveThreshold > 0)
            return JsErrors.Pedantic("inactive_threshold must be set if it's configured in stream limits");
        // consumer.go: only outside pedantic mode does the flow-control ack policy fill in its flow control and
        // heartbeat (checkConsumerCfg then refuses a pedantic request without them).
        if (c.AckPolicy == AckPolicy.FlowControl && !pedantic)
        {
            c.FlowControl = true;
            c.IdleHeartbeat = SourceHealthHeartbeat;
        }
        if (c.Backoff is { Length: > 0 } bo) c.AckWait = bo[0];
        if (c.MaxAckPending is null or 0) c.MaxAckPending = stream.ConsumerLimits?.MaxAckPending is > 0 and var l ? l : null;
        if (c.InactiveThreshold is null or 0) c.InactiveThreshold = stream.ConsumerLimits?.InactiveThreshold is > 0 and var it ? it : null;
        if (c.MaxAckPending is null or 0 && c.AckPolicy != AckPolicy.None)
            c.MaxAckPending = accountMaxAckPending > 0 && accountMaxAckPending < MaxAckPendingDefault ? accountMaxAckPending : MaxAckPendingDefault;
        // Zero values are omitted by Go (omitempty): keep them absent.
        if (c.AckWait == 0) c.AckWait = null;
        if (c.MaxAckPending == 0) c.MaxAckPending = null;
        if (c.OptStartSeq == 0) c.OptStartSeq = null;
        if (c.RateLimitBps == 0) c.RateLimitBps = null;
        if (c.MaxBatch == 0) c.MaxBatch = null;
        if (c.MaxExpires == 0) c.MaxExpires = null;
        if (c.MaxBytes == 0) c.MaxBytes = null;
        if (c.IdleHeartbeat == 0) c.IdleHeartbeat = null;
        if (c.InactiveThreshold == 0) c.InactiveThreshold = null;
        if (c.FlowControl == false) c.FlowControl = null;
        if (c.HeadersOnly == false) c.HeadersOnly = null;
        if (c.MemStorage == false) c.MemStorage = null;
        if (c.Backoff is { Length: 0 }) c.Backoff = null;
        if (c.FilterSubjects is { Length: 0 }) c.FilterSubjects = null;
        if (c.Metadata is { Count: 0 }) c.Metadata = null;
        if (c.FilterSubject == "") c.FilterSubject = null;
        if (c.Description == "") c.Description = null;
        if (c.SampleFreq == "") c.SampleFreq = null;
        if (c.DeliverSubject == "") c.DeliverSubject = null;
        if (c.DeliverGroup == "") c.DeliverGroup = null;
        if (c.DurableName == "") c.DurableName = null;
        return null;
    }

    /// <summary>checkConsumerCfg's start-position conflicts (texts from its badStart / notSet helpers).</summary>
    private static ApiError? CheckStartPosition(ConsumerConfig c, bool hasFilter)
    {
        string? policy = c.DeliverPolicy switch
        {
            DeliverPolicy.All => "all",
            DeliverPolicy.Last => "last",
            DeliverPolicy.LastPerSubject => "last per subject",
            DeliverPolicy.New => "new",
            _ => null,
        };
        if (policy is not null)
        {
            if (c.OptStartSeq is > 0) return JsErrors.ConsumerInvalidPolicy($"consumer delivery policy is deliver {policy}, but optional start sequence is also set");
            if (c.OptStartTime is not null) return JsErrors.ConsumerInvalidPolicy($"consumer delivery policy is deliver {policy}, but optional start time is also set");
            if (c.DeliverPolicy == DeliverPolicy.LastPerSubject && !hasFilter)
                return JsErrors.ConsumerInvalidPolicy("consumer delivery policy is deliver last per subject, but optional filter subject is not set");
            return null;
        }
        if (c.DeliverPolicy == DeliverPolicy.ByStartSequence)
        {
            if (c.OptStartSeq is null or 0) return JsErrors.ConsumerInvalidPolicy("consumer delivery policy is deliver by start sequence, but optional start sequence is not set");
            if (c.OptStartTime is not null) return JsErrors.ConsumerInvalidPolicy("consumer delivery policy is deliver by start sequence, but optional start time is also set");
        }
        else if (c.DeliverPolicy == DeliverPolicy.ByStartTime)
        {
            if (c.OptStartTime is null) return JsErrors.ConsumerInvalidPolicy("consumer delivery policy is deliver by start time, but optional start time is not set");
            if (c.OptStartSeq is > 0) return JsErrors.ConsumerInvalidPolicy("consumer delivery policy is deliver by start time, but optional start sequence is also set");
        }
        return null;
    }

    private static int MetadataLength(Dictionary<string, string>? metadata)
    {
        int n = 0;
        foreach (var (k, v) in metadata ?? []) n += System.Text.Encoding.UTF8.GetByteCount(k) + System.Text.Encoding.UTF8.GetByteCount(v);
        return n;
    }
}
