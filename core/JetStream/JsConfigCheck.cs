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

    /// <summary>
    /// stream.go checkStreamCfg (2.14.5), in its order: fills the defaults into <paramref name="c"/> and answers the
    /// first refusal. Then addStreamWithAssignment's single-server replicas rule. <paramref name="pedantic"/> (the
    /// request's "pedantic": true, 2.11+) refuses with 10157 where a value would otherwise be changed.
    /// </summary>
    public static ApiError? CheckStream(StreamConfig c, JsAccount js, bool pedantic = false)
    {
        if (!IsValidAssetName(c.Name)) return JsErrors.StreamInvalidConfig(@"stream name is required and can not contain '.', '*', '>', '\', '/'");
        if (c.Name.Length > MaxNameLength) return JsErrors.StreamInvalidConfig($"stream name is too long, maximum allowed is {MaxNameLength}");
        if ((c.Description?.Length ?? 0) > MaxDescriptionLength) return JsErrors.StreamInvalidConfig($"stream description is too long, maximum allowed is {MaxDescriptionLength}");
        if (MetadataLength(c.Metadata) > MaxMetadataLength) return JsErrors.StreamInvalidConfig($"stream metadata exceeds maximum size of {MaxMetadataLength} bytes");
        // The enums were checked while parsing (GoSchemas; DiscardPolicy.UnmarshalJSON alone ignores case, and so
        // does JsPolicyText.ParseDiscard); Invalid is only reached by the stores' files, decoded without GoSchemas.
        if (c.Retention == RetentionPolicy.Invalid) return JsErrors.StreamInvalidConfig("invalid retention");
        if (c.Discard == StreamDiscardPolicy.Invalid) return JsErrors.StreamInvalidConfig("invalid discard policy");
        c.Compression ??= "none";
        if (c.Compression is not ("none" or "s2")) return JsErrors.StreamInvalidConfig("invalid compression");
        if (c.Storage == StorageType.Invalid) return JsErrors.StreamInvalidConfig("invalid storage type");
        // stream.go PersistModeType: "" and "default" are the default (omitted when written), "async" opts in.
        if (c.PersistMode is "" or "default") c.PersistMode = null;
        if (c.PersistMode is not (null or "async")) return JsErrors.InvalidJson($"can not unmarshal \"\\\"{c.PersistMode}\\\"\"");
        if (c.NumReplicas == 0) c.NumReplicas = 1;
        if (c.NumReplicas > 5) return JsErrors.StreamInvalidConfig("maximum replicas is 5");
        if (c.NumReplicas < 0) return JsErrors.ReplicasCountCannotBeNegative;
        // Pedantic mode takes 0 as "unset" (defaulted to -1 as always) but refuses other negatives.
        if (pedantic && c.MaxMsgs < -1) return JsErrors.Pedantic("max_msgs must be set to -1");
        if (c.MaxMsgs is 0 or < -1) c.MaxMsgs = -1;
        if (pedantic && c.MaxMsgsPerSubject < -1) return JsErrors.Pedantic("max_msgs_per_subject must be set to -1");
        if (c.MaxMsgsPerSubject is 0 or < -1) c.MaxMsgsPerSubject = -1;
        if (pedantic && c.MaxBytes < -1) return JsErrors.Pedantic("max_bytes must be set to -1");
        if (c.MaxBytes is 0 or < -1) c.MaxBytes = -1;
        if (pedantic && c.MaxMsgSize < -1) return JsErrors.Pedantic("max_msg_size must be set to -1");
        if (c.MaxMsgSize is 0 or < -1) c.MaxMsgSize = -1;
        if (pedantic && c.MaxConsumers < -1) return JsErrors.Pedantic("max_consumers must be set to -1");
        if (c.MaxConsumers is 0 or < -1) c.MaxConsumers = -1;
        if (c.MaxAge < 0) return JsErrors.StreamInvalidConfig("max age can not be negative");
        if (c.MaxAge is > 0 and < 100_000_000) return JsErrors.StreamInvalidConfig("max age needs to be >= 100ms");
        if (pedantic && c.DuplicateWindow is null or 0 && c.Mirror is null && c.Sources is not { Length: > 0 } && c.MaxAge > 0 && c.MaxAge < JsStream.DefaultDuplicateWindowNanos)
            return JsErrors.Pedantic("duplicate window cannot be bigger than max age");
        if (c.DuplicateWindow is null or 0 && c.Mirror is null && c.Sources is not { Length: > 0 })
            c.DuplicateWindow = c.MaxAge > 0 && c.MaxAge < JsStream.DefaultDuplicateWindowNanos ? c.MaxAge : JsStream.DefaultDuplicateWindowNanos;
        if (c.DuplicateWindow == 0) c.DuplicateWindow = null;
        if (c.DuplicateWindow < 0) return JsErrors.StreamInvalidConfig("duplicates window can not be negative");
        if (c.MaxAge != 0 && c.DuplicateWindow > c.MaxAge) return JsErrors.StreamInvalidConfig("duplicates window can not be larger then max age");
        if (c.DuplicateWindow is > 0 and < 100_000_000) return JsErrors.StreamInvalidConfig("duplicates window needs to be >= 100ms");
        if (c.DenyPurge && c.AllowRollupHdrs) return JsErrors.StreamInvalidConfig("roll-ups require the purge permission");
        if (Batching.BatchConfigCheck.Check(c) is { } batching) return batching;
        if (c.DiscardNewPerSubject == true)
        {
            if (c.Discard != StreamDiscardPolicy.New) return JsErrors.StreamInvalidConfig("discard new per subject requires discard new policy to be set");
            if (c.MaxMsgsPerSubject <= 0) return JsErrors.StreamInvalidConfig("discard new per subject requires max msgs per subject > 0");
        }
        else
        {
            c.DiscardNewPerSubject = null;
        }
        // ADR-43 subject delete markers need TTLs and subject rollups (nats-server turns both on).
        if (c.SubjectDeleteMarkerTtl is > 0)
        {
            if (c.SubjectDeleteMarkerTtl < 1_000_000_000) return JsErrors.StreamInvalidConfig("subject delete marker TTL must be at least 1 second");
            c.AllowMsgTtl = true;
            if (!c.AllowRollupHdrs)
            {
                c.AllowRollupHdrs = true;
                c.DenyPurge = false;
            }
        }
        else if (c.SubjectDeleteMarkerTtl < 0)
        {
            return JsErrors.StreamInvalidConfig("subject delete marker TTL must not be negative");
        }
        else
        {
            c.SubjectDeleteMarkerTtl = null;
        }
        if (Scheduling.ScheduleConfigCheck.Check(c) is { } scheduling) return scheduling;
        if (c.PersistMode == "async" && c.Storage != StorageType.File) return JsErrors.StreamInvalidConfig("async persist mode is only supported on file storage");
        if (c.PersistMode == "async" && c.NumReplicas > 1) return JsErrors.StreamInvalidConfig("async persist mode is not supported on replicated streams");
        var sourcing = CheckMirrorAndSources(c, js, pedantic);
        if (sourcing is not null) return sourcing;
        // A stream without subjects listens on its name, unless it is a mirror or only sources (nats-server).
        if (c.Subjects is { Length: 0 }) c.Subjects = null;
        if (c.Subjects is null)
        {
            if (c.Mirror is null && c.Sources is not { Length: > 0 }) c.Subjects = [c.Name];
        }
        else if (CheckSubjects(c) is { } subjects)
        {
            return subjects;
        }
        var transform = CheckTransformAndRepublish(c, pedantic);
        if (transform is not null) return transform;
        if (c.Placement is { Cluster: null or "", Tags: null or { Length: 0 }, Preferred: null or "" }) c.Placement = null;
        if (!string.IsNullOrEmpty(c.Placement?.Preferred)) return JsErrors.StreamInvalidConfig("preferred server not permitted in placement");
        c.ConsumerLimits ??= new StreamConsumerLimits();
        // addStreamWithAssignment, after checkStreamCfg: one replica outside a cluster.
        if (c.NumReplicas > 1) return JsErrors.StreamReplicasNotSupported;
        return null;
    }

    /// <summary>checkStreamCfg's subject rules: valid, unique, the API namespaces only with no_ack, no two colliding.</summary>
    private static ApiError? CheckSubjects(StreamConfig c)
    {
        if (c.Mirror is not null) return JsErrors.MirrorWithSubjects;
        var subjects = c.Subjects!;
        var seen = new HashSet<string>(StringComparer.Ordinal);
        for (int i = 0; i < subjects.Length; i++)
        {
            var s = subjects[i];
            if (!JsSubjects.IsValid(s)) return JsErrors.StreamInvalidConfig("invalid subject");
            if (seen.Contains(s)) return JsErrors.StreamInvalidConfig("duplicate subjects detected");
            if (s == ">")
            {
                if (c.NoAck != true) return JsErrors.StreamInvalidConfig("capturing all subjects requires no-ack to be true");
                if (c.NumReplicas != 1) return JsErrors.StreamInvalidConfig("capturing all subjects requires replicas of 1");
            }
            if (c.NoAck != true)
            {
                foreach (var ns in (string[])["$JS.>", "$JSC.>", "$NRG.>"])
                {
                    if (JsSubjects.Collide(s, ns) && !JsSubjects.IsSubsetOf(s, "$JS.EVENT.>"))
                        return JsErrors.StreamInvalidConfig("subjects that overlap with jetstream api require no-ack to be true");
                }
                if (JsSubjects.Collide(s, "$SYS.>") && !JsSubjects.IsSubsetOf(s, "$SYS.ACCOUNT.>"))
                    return JsErrors.StreamInvalidConfig("subjects that overlap with system api require no-ack to be true");
            }
            for (int j = i + 1; j < subjects.Length; j++)
            {
                if (JsSubjects.Collide(subjects[j], s))
                    return JsErrors.StreamInvalidConfig($"subject {Api.GoJson.GoQuote(s)} overlaps with {Api.GoJson.GoQuote(subjects[j])}");
            }
            seen.Add(s);
        }
        return null;
    }

    /// <summary>
    /// What an update may not change (stream.go jsAccount.configUpdateCheck, after checkStreamCfg of the new config).
    /// </summary>
    public static ApiError? CheckStreamUpdate(StreamConfig old, StreamConfig next)
    {
        if (old.Storage != next.Storage) return JsErrors.StreamInvalidConfig("stream configuration update can not change storage type");
        // 2.14: limits <-> interest may change; to or from workqueue may not.
        if (old.Retention != next.Retention && (old.Retention == RetentionPolicy.WorkQueue || next.Retention == RetentionPolicy.WorkQueue))
            return JsErrors.StreamInvalidConfig("stream configuration update can not change retention policy to/from workqueue");
        if (old.Sealed && !next.Sealed) return JsErrors.StreamInvalidConfig("stream configuration update can not unseal a sealed stream");
        if (old.DenyDelete && !next.DenyDelete) return JsErrors.StreamInvalidConfig("stream configuration update can not cancel deny message deletes");
        if (old.DenyPurge && !next.DenyPurge) return JsErrors.StreamInvalidConfig("stream configuration update can not cancel deny purge");
        // A mirror may be removed (2.12+ promotes the mirror to a plain stream, with the default subjects) but not
        // added or changed (configUpdateCheck compares with reflect.DeepEqual).
        if (next.Mirror is not null && !SameMirror(old.Mirror, next.Mirror)) return JsErrors.StreamMirrorNotUpdatable;
        if (old.AllowMsgTtl && !next.AllowMsgTtl) return JsErrors.StreamInvalidConfig("message TTL status can not be disabled");
        if (Batching.BatchConfigCheck.CheckUpdate(old, next) is { } batching) return batching;
        if (Scheduling.ScheduleConfigCheck.CheckUpdate(old, next) is { } scheduling) return scheduling;
        if (old.PersistMode != next.PersistMode) return JsErrors.StreamInvalidConfig("stream configuration update can not change persist mode");
        return null;
    }

    private static bool SameMirror(StreamSourceConfig? a, StreamSourceConfig? b)
    {
        if (a is null || b is null) return a is null && b is null;
        return a.Name == b.Name && a.OptStartSeq == b.OptStartSeq && a.OptStartTime == b.OptStartTime && a.FilterSubject == b.FilterSubject
            && a.External?.Api == b.External?.Api && a.External?.Deliver == b.External?.Deliver
            && a.Consumer?.Name == b.Consumer?.Name && a.Consumer?.DeliverSubject == b.Consumer?.DeliverSubject
            && (a.SubjectTransforms ?? []).Select(t => (t.Src, t.Dest)).SequenceEqual((b.SubjectTransforms ?? []).Select(t => (t.Src, t.Dest)));
    }
}
