using NatsBroker.JetStream.Api;

namespace NatsBroker.JetStream;

/// <summary>
/// Defaults and validation of stream and consumer configs as nats-server applies them (stream.go checkStreamCfg,
/// consumer.go setConsumerConfigDefaults / checkConsumerCfg): a subset, with nats-server's error codes.
/// </summary>
internal static partial class JsConfigCheck
{
    public const int MaxNameLength = 255;

    /// <summary>Names may not contain '.', '*', '>', whitespace or path separators (nats-server isValidName).</summary>
    public static bool IsValidName(string name)
    {
        if (string.IsNullOrEmpty(name)) return false;
        foreach (char c in name)
        {
            if (c is '.' or '*' or '>' || char.IsWhiteSpace(c) || char.IsControl(c)) return false;
        }
        return true;
    }

    private static bool HasPathSeparators(string name) => name.Contains('/') || name.Contains('\\');

    public static ApiError? CheckStream(StreamConfig c, JsAccount js)
    {
        if (string.IsNullOrEmpty(c.Name)) return JsErrors.StreamInvalidConfig("stream name is required");
        if (HasPathSeparators(c.Name)) return JsErrors.StreamNameContainsPathSeparators;
        if (!IsValidName(c.Name)) return JsErrors.StreamInvalidConfig("stream name is required and can not contain '.', '*', '>'");
        if (c.Name.Length > MaxNameLength) return JsErrors.StreamInvalidConfig($"stream name is too long, maximum allowed is {MaxNameLength}");
        if (c.Retention is not ("limits" or "interest" or "workqueue")) return JsErrors.InvalidJson("can not unmarshal retention policy");
        if (c.Storage is not ("file" or "memory")) return JsErrors.InvalidJson("can not unmarshal storage type");
        if (c.Discard is not ("old" or "new")) return JsErrors.InvalidJson("can not unmarshal discard policy");
        // stream.go PersistModeType: "" and "default" are the default (omitted when written), "async" opts in.
        if (c.PersistMode is "" or "default") c.PersistMode = null;
        if (c.PersistMode is not (null or "async")) return JsErrors.InvalidJson($"can not unmarshal \"\\\"{c.PersistMode}\\\"\"");
        if (c.PersistMode == "async" && c.Storage != "file") return JsErrors.StreamInvalidConfig("async persist mode is only supported on file storage");
        var batching = Batching.BatchConfigCheck.Check(c);
        if (batching is not null) return batching;
        if (Scheduling.ScheduleConfigCheck.Check(c) is { } scheduling) return scheduling;
        if (c.NumReplicas == 0) c.NumReplicas = 1;
        if (c.NumReplicas < 0) return JsErrors.StreamInvalidConfig("replicas count cannot be negative");
        // Not clustered: one replica (nats-server answers replicas > 1 with an error outside a cluster).
        if (c.NumReplicas > 1) return JsErrors.StreamReplicasNotSupported;
        if (c.MaxMsgs == 0) c.MaxMsgs = -1;
        if (c.MaxBytes == 0) c.MaxBytes = -1;
        if (c.MaxMsgsPerSubject == 0) c.MaxMsgsPerSubject = -1;
        if (c.MaxMsgSize == 0) c.MaxMsgSize = -1;
        if (c.MaxConsumers == 0) c.MaxConsumers = -1;
        if (c.MaxAge < 0) return JsErrors.StreamInvalidConfig("max age needs to be >= 0");
        if (c.Mirror is not null)
        {
            // Mirrors keep no duplicate window of their own (nats-server sets it only without a mirror).
            c.DuplicateWindow = null;
        }
        else if (c.DuplicateWindow is null or 0)
        {
            c.DuplicateWindow = c.MaxAge > 0 && c.MaxAge < JsStream.DefaultDuplicateWindowNanos ? c.MaxAge : JsStream.DefaultDuplicateWindowNanos;
        }
        else if (c.MaxAge > 0 && c.DuplicateWindow > c.MaxAge)
        {
            return JsErrors.StreamInvalidConfig("duplicates window can not be larger then max age");
        }
        if (c.DiscardNewPerSubject == true && (c.Discard != "new" || c.MaxMsgsPerSubject <= 0))
            return JsErrors.StreamInvalidConfig("discard new per subject requires discard new policy and max msgs per subject to be set");
        var sourcing = CheckMirrorAndSources(c, js);
        if (sourcing is not null) return sourcing;
        // A stream without subjects listens on its name, unless it is a mirror or only sources (nats-server).
        if ((c.Subjects is null || c.Subjects.Length == 0) && c.Mirror is null && c.Sources is not { Length: > 0 }) c.Subjects = [c.Name];
        var seen = new HashSet<string>(StringComparer.Ordinal);
        foreach (var s in c.Subjects ?? [])
        {
            if (!JsSubjects.IsValid(s)) return JsErrors.StreamInvalidConfig("invalid subject");
            if (!seen.Add(s)) return JsErrors.StreamInvalidConfig("duplicate subjects detected");
            if (JsSubjects.Collide(s, "$JS.API.>") && c.NoAck != true) return JsErrors.StreamInvalidConfig("subjects that overlap with jetstream api require no-ack to be true");
        }
        foreach (var a in c.Subjects ?? [])
        {
            foreach (var b in c.Subjects ?? [])
            {
                if (!ReferenceEquals(a, b) && a != b && JsSubjects.IsSubsetOf(a, b)) return JsErrors.StreamInvalidConfig("subjects overlap");
            }
        }
        // ADR-43 subject delete markers need TTLs and subject rollups (nats-server turns both on).
        if (c.SubjectDeleteMarkerTtl is > 0)
        {
            if (c.SubjectDeleteMarkerTtl < 1_000_000_000) return JsErrors.StreamInvalidConfig("subject delete marker TTL must be at least 1 second");
            c.AllowMsgTtl = true;
            c.AllowRollupHdrs = true;
            c.DenyPurge = false;
        }
        else if (c.SubjectDeleteMarkerTtl < 0)
        {
            return JsErrors.StreamInvalidConfig("subject delete marker TTL must not be negative");
        }
        else
        {
            c.SubjectDeleteMarkerTtl = null;
        }
        var transform = CheckTransformAndRepublish(c);
        if (transform is not null) return transform;
        c.ConsumerLimits ??= new StreamConsumerLimits();
        return null;
    }

    /// <summary>What an update may not change (nats-server stream.go checkStreamUpdate / jsStreamUpdateRequest).</summary>
    public static ApiError? CheckStreamUpdate(StreamConfig old, StreamConfig next)
    {
        if (old.Storage != next.Storage) return JsErrors.StreamInvalidConfig("stream configuration update can not change storage type");
        if (old.PersistMode != next.PersistMode) return JsErrors.StreamInvalidConfig("stream configuration update can not change persist mode");
        if (Batching.BatchConfigCheck.CheckUpdate(old, next) is { } batching) return batching;
        if (Scheduling.ScheduleConfigCheck.CheckUpdate(old, next) is { } scheduling) return scheduling;
        if (old.Retention != next.Retention) return JsErrors.StreamInvalidConfig("stream configuration update can not change retention policy");
        if (old.Sealed && !next.Sealed) return JsErrors.StreamInvalidConfig("stream configuration update can not unseal a sealed stream");
        if (old.DenyDelete && !next.DenyDelete) return JsErrors.StreamInvalidConfig("stream configuration update can not cancel deny message deletes");
        if (old.DenyPurge && !next.DenyPurge) return JsErrors.StreamInvalidConfig("stream configuration update can not cancel deny purge");
        if (!SameMirror(old.Mirror, next.Mirror)) return JsErrors.StreamMirrorNotUpdatable;
        if (old.AllowMsgTtl && !next.AllowMsgTtl) return JsErrors.StreamInvalidConfig("message TTL status can not be disabled");
        return null;
    }

    /// <summary>Applies nats-server's consumer defaults and checks the config against the stream.</summary>
    public static ApiError? CheckConsumer(ConsumerConfig c, StreamConfig stream, bool pullRequestedDurable)
    {
        _ = pullRequestedDurable;
        bool push = !string.IsNullOrEmpty(c.DeliverSubject);
        if (c.DeliverPolicy is not ("all" or "last" or "new" or "by_start_sequence" or "by_start_time" or "last_per_subject"))
            return JsErrors.InvalidJson("can not unmarshal deliver policy");
        if (c.AckPolicy is not ("none" or "all" or "explicit")) return JsErrors.InvalidJson("can not unmarshal ack policy");
        if (c.ReplayPolicy is not ("instant" or "original")) return JsErrors.InvalidJson("can not unmarshal replay policy");
        if (c.AckWait is null or 0) c.AckWait = 30_000_000_000;
        if (c.MaxDeliver is null or 0) c.MaxDeliver = -1;
        if (!JsConsumer.ParseSampleFrequency(c.SampleFreq, out _)) return JsErrors.ConsumerInvalidSampling(c.SampleFreq!);
        if (c.Backoff is { Length: > 0 } && c.MaxDeliver > 0 && c.MaxDeliver <= c.Backoff.Length) return JsErrors.ConsumerMaxDeliverBackoff;
        if (!string.IsNullOrEmpty(c.FilterSubject) && c.FilterSubjects is { Length: > 0 }) return JsErrors.ConsumerDuplicateFilterSubjects;
        if (c.FilterSubjects is { Length: > 0 } fs)
        {
            foreach (var f in fs) if (string.IsNullOrEmpty(f)) return JsErrors.ConsumerEmptyFilter;
            for (int i = 0; i < fs.Length; i++)
                for (int j = i + 1; j < fs.Length; j++)
                    if (JsSubjects.Collide(fs[i], fs[j])) return JsErrors.ConsumerOverlappingSubjectFilters;
        }
        var filters = c.FilterSubjects is { Length: > 0 } f2 ? f2 : !string.IsNullOrEmpty(c.FilterSubject) ? [c.FilterSubject] : [];
        foreach (var f in filters)
        {
            if (!JsSubjects.IsValid(f)) return JsErrors.ConsumerFilterNotSubset;
            bool ok = false;
            foreach (var s in stream.Subjects ?? []) if (JsSubjects.Collide(f, s)) { ok = true; break; }
            if (!ok) return JsErrors.ConsumerFilterNotSubset;
        }
        switch (c.DeliverPolicy)
        {
            case "by_start_sequence":
                if (c.OptStartSeq is null or 0) return JsErrors.ConsumerInvalidPolicy("consumer delivery policy is deliver by start sequence, but optional start sequence is not set");
                if (c.OptStartTime is not null) return JsErrors.ConsumerInvalidPolicy("consumer delivery policy is deliver by start sequence, but optional start time is also set");
                break;
            case "by_start_time":
                if (c.OptStartTime is null) return JsErrors.ConsumerInvalidPolicy("consumer delivery policy is deliver by start time, but optional start time is not set");
                if (c.OptStartSeq is > 0) return JsErrors.ConsumerInvalidPolicy("consumer delivery policy is deliver by start time, but optional start sequence is also set");
                break;
            default:
                if (c.OptStartSeq is > 0) return JsErrors.ConsumerInvalidPolicy($"consumer delivery policy is deliver {PolicyText(c.DeliverPolicy)}, but optional start sequence is also set");
                if (c.OptStartTime is not null) return JsErrors.ConsumerInvalidPolicy($"consumer delivery policy is deliver {PolicyText(c.DeliverPolicy)}, but optional start time is also set");
                break;
        }
        if (push)
        {
            if (!JsSubjects.IsValid(c.DeliverSubject!)) return JsErrors.ConsumerInvalidDeliverSubject;
            if (!JsSubjects.IsLiteral(c.DeliverSubject!)) return JsErrors.ConsumerDeliverToWildcards;
            if (c.MaxWaiting is > 0) return JsErrors.ConsumerPushMaxWaiting;
            if (c.FlowControl == true && c.IdleHeartbeat is null or 0) return JsErrors.ConsumerWithFlowControlNeedsHeartbeats;
        }
        else
        {
            if (c.FlowControl == true) return JsErrors.ConsumerFcRequiresPush;
            if (c.RateLimitBps is > 0) return JsErrors.ConsumerPullWithRateLimit;
            if (c.MaxWaiting is null or 0) c.MaxWaiting = 512;
            if (c.MaxWaiting < 0) return JsErrors.ConsumerMaxWaitingNegative;
            if (c.MaxBatch is < 0) return JsErrors.ConsumerMaxRequestBatchNegative;
        }
        if (c.IdleHeartbeat is > 0 and < 100_000_000) return JsErrors.ConsumerSmallHeartbeat;
        if (c.AckPolicy == "none")
        {
            if (c.MaxAckPending is > 0) return JsErrors.ConsumerMaxPendingAckPolicyRequired;
        }
        else if (c.MaxAckPending is null or 0)
        {
            c.MaxAckPending = stream.ConsumerLimits?.MaxAckPending is > 0 ? stream.ConsumerLimits.MaxAckPending : 1000;
        }
        if (string.IsNullOrEmpty(c.DurableName) && c.InactiveThreshold is null or 0)
        {
            c.InactiveThreshold = stream.ConsumerLimits?.InactiveThreshold is > 0 ? stream.ConsumerLimits.InactiveThreshold : 5_000_000_000;
        }
        if (stream.Retention == "workqueue")
        {
            if (c.AckPolicy != "explicit") return push ? JsErrors.ConsumerWqRequiresExplicitAck : JsErrors.ConsumerPullRequiresAck;
            if (c.DeliverPolicy != "all") return JsErrors.ConsumerWqConsumerNotDeliverAll;
        }
        if (Priority.PriorityConfigCheck.Check(c) is { } priority) return priority;
        return null;
    }

    private static string PolicyText(string policy) => policy switch
    {
        "all" => "all",
        "last" => "last",
        "new" => "new",
        "last_per_subject" => "last per subject",
        _ => policy,
    };

    private static bool SameMirror(StreamSourceConfig? a, StreamSourceConfig? b)
    {
        if (a is null || b is null) return a is null && b is null;
        return a.Name == b.Name && a.OptStartSeq == b.OptStartSeq && a.OptStartTime == b.OptStartTime && a.FilterSubject == b.FilterSubject
            && (a.SubjectTransforms ?? []).Select(t => (t.Src, t.Dest)).SequenceEqual((b.SubjectTransforms ?? []).Select(t => (t.Src, t.Dest)));
    }
}
