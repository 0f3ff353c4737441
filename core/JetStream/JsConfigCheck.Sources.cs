using NatsBroker.JetStream.Api;

namespace NatsBroker.JetStream;

// Mirror, source, subject transform and republish checks (nats-server stream.go checkStreamCfg), with
// nats-server's error codes and texts.
internal static partial class JsConfigCheck
{
    private static ApiError? CheckMirrorAndSources(StreamConfig c, JsAccount js, bool pedantic)
    {
        var externals = new List<ExternalStream>();
        var localSubjects = new List<string>(); // subjects of the local origins (nats-server's streamSubs)
        if (c.Mirror is { } m)
        {
            if (c.Sources is { Length: > 0 }) return JsErrors.MirrorWithSources;
            if (c.Subjects is { Length: > 0 }) return JsErrors.MirrorWithSubjects;
            if (c.FirstSeq is > 0) return JsErrors.MirrorWithFirstSeq;
            // 2.14 refuses no start seq + start time pair any more (10032 is unused); it refuses these instead.
            if (c.AllowMsgCounter == true) return Batching.BatchErrors.MirrorWithCounters;
            if (c.AllowAtomic == true) return Batching.BatchErrors.MirrorWithAtomicPublish;
            if (c.AllowBatched == true) return Batching.BatchErrors.MirrorWithBatchPublish;
            if (m.Consumer is { } mc && !ConsumerSourceValid(mc, m)) return JsErrors.MirrorDurableConsumerCfgInvalid;
            if (!string.IsNullOrEmpty(m.FilterSubject) && m.SubjectTransforms is { Length: > 0 }) return JsErrors.MirrorMultipleFiltersNotAllowed;
            if (c.SubjectDeleteMarkerTtl is > 0) return JsErrors.StreamInvalidConfig("subject delete markers forbidden on mirrors");
            var trs = m.SubjectTransforms ?? [];
            for (int i = 0; i < trs.Length; i++)
            {
                if (!string.IsNullOrEmpty(trs[i].Src) && !JsSubjects.IsValid(trs[i].Src)) return JsErrors.MirrorInvalidSubjectFilter($"invalid subject {trs[i].Src}");
                if (JsSubjectTransform.Create(trs[i].Src, trs[i].Dest, out var terr) is null) return JsErrors.MirrorInvalidTransformDestination(terr!);
                for (int j = 0; j < trs.Length; j++)
                    if (i != j && JsSubjects.Collide(Or(trs[i].Src), Or(trs[j].Src))) return JsErrors.MirrorOverlappingSubjectFilters;
            }
            // An origin in another account or domain is not checked against this account's streams (it could be a
            // namesake of one of them); only its prefixes are, below.
            if (m.External is not null) externals.Add(m.External);
            else if (!IsValidName(m.Name) || HasPathSeparators(m.Name)) return JsErrors.MirrorInvalidStreamName;
            else if (js.TryGet(m.Name, out var origin))
            {
                localSubjects.AddRange(origin.Config.Subjects ?? []);
                if (c.MaxMsgSize > 0 && origin.Config.MaxMsgSize > 0 && c.MaxMsgSize < origin.Config.MaxMsgSize) return JsErrors.MirrorMaxMessageSizeTooBig;
                // A mirror answers direct gets for its origin when the origin allows them (nats-server inherits it).
                if (pedantic && c.MirrorDirect != origin.Config.AllowDirect) return JsErrors.Pedantic("origin stream has direct get set, mirror has it disabled");
                c.MirrorDirect = origin.Config.AllowDirect;
            }
        }
        var seen = new HashSet<string>(StringComparer.Ordinal);
        var consumers = new HashSet<string>(StringComparer.Ordinal);
        foreach (var src in c.Sources ?? [])
        {
            if (src is null || !IsValidName(src.Name) || HasPathSeparators(src.Name)) return JsErrors.SourceInvalidStreamName;
            if (!seen.Add(JsStream.SourceIndexName(src))) return JsErrors.SourceDuplicateDetected;
            if (!string.IsNullOrEmpty(src.FilterSubject) && src.SubjectTransforms is { Length: > 0 }) return JsErrors.SourceMultipleFiltersNotAllowed;
            var trs = src.SubjectTransforms ?? [];
            foreach (var tr in trs)
            {
                if (!string.IsNullOrEmpty(tr.Src) && !JsSubjects.IsValid(tr.Src)) return JsErrors.SourceInvalidSubjectFilter($"invalid subject {tr.Src}");
                if (JsSubjectTransform.Create(tr.Src, tr.Dest, out var terr) is null) return JsErrors.SourceInvalidTransformDestination(terr!);
            }
            for (int i = 0; i < trs.Length; i++)
                for (int j = 0; j < trs.Length; j++)
                    if (i != j && JsSubjects.IsSubsetOf(Or(trs[i].Src), Or(trs[j].Src))) return JsErrors.SourceOverlappingSubjectFilters;
            if (src.Consumer is { } sc)
            {
                if (!ConsumerSourceValid(sc, src)) return JsErrors.SourceDurableConsumerCfgInvalid;
                // stream.go composeCName: one consumer may serve only one source of the same origin.
                string originName = src.External is { Api.Length: > 0 } ext ? src.Name + ":" + JsStream.ApiPrefixHash(ext.Api) : src.Name;
                if (!consumers.Add(originName + " " + sc.Name)) return JsErrors.SourceDurableConsumerDuplicateDetected;
            }
            if (src.External is not null)
            {
                externals.Add(src.External);
                continue;
            }
            if (!js.TryGet(src.Name, out var origin)) continue;
            localSubjects.AddRange(origin.Config.Subjects ?? []);
            if (c.MaxMsgSize > 0 && origin.Config.MaxMsgSize > 0 && c.MaxMsgSize < origin.Config.MaxMsgSize)
                return JsErrors.SourceMaxMessageSizeTooBig;
        }
        if (CheckExternals(externals, localSubjects) is { } extErr) return extErr;
        if (FormsCycle(c, js)) return JsErrors.StreamInvalidConfig("detected cycle");
        return null;
    }

    /// <summary>
    /// External origins' deliver and API prefixes (nats-server checkStreamCfg, error codes 10024, 10022, 10021): a
    /// deliver prefix is literal and must not capture the subjects of this stream's local origins; an API prefix is
    /// literal and must not overlap this account's own <c>$JS.API</c>.
    /// </summary>
    private static ApiError? CheckExternals(List<ExternalStream> externals, List<string> localSubjects)
    {
        foreach (var ext in externals)
        {
            if (string.IsNullOrEmpty(ext.Deliver)) continue;
            if (!JsSubjects.IsValid(ext.Deliver) || !JsSubjects.IsLiteral(ext.Deliver)) return JsErrors.StreamInvalidExternalDeliverySubject(ext.Deliver);
            foreach (var sub in localSubjects)
                if (JsSubjects.Collide(sub, ext.Deliver + "." + sub)) return JsErrors.StreamExternalDeliverPrefixOverlaps(ext.Deliver, sub);
        }
        foreach (var ext in externals)
        {
            if (string.IsNullOrEmpty(ext.Api)) continue;
            if (!JsSubjects.IsValid(ext.Api) || !JsSubjects.IsLiteral(ext.Api))
                return JsErrors.StreamInvalidConfig($"stream external api prefix \"{ext.Api}\" must be a valid subject without wildcards");
            if (JsSubjects.Collide(ext.Api, "$JS.API")) return JsErrors.StreamExternalApiOverlap(ext.Api, "$JS.API");
        }
        return null;
    }

    /// <summary>
    /// checkStreamCfg's rules for a mirror's or source's durable consumer (2.14): a valid name and a literal deliver
    /// subject, and no start position or filter of its own (the consumer's config decides those).
    /// </summary>
    private static bool ConsumerSourceValid(StreamConsumerSource c, StreamSourceConfig s) =>
        IsValidAssetName(c.Name) && !string.IsNullOrEmpty(c.DeliverSubject) && JsSubjects.IsValid(c.DeliverSubject) && JsSubjects.IsLiteral(c.DeliverSubject)
        && s.OptStartSeq is null or 0 && s.OptStartTime is null && string.IsNullOrEmpty(s.FilterSubject);

    private static string Or(string? filter) => string.IsNullOrEmpty(filter) ? ">" : filter;

    /// <summary>Source/mirror cycles through existing streams (nats-server's cycle check in checkStreamCfg).</summary>
    private static bool FormsCycle(StreamConfig c, JsAccount js)
    {
        var toVisit = new Queue<StreamConfig>([c]);
        var visited = new HashSet<string>(StringComparer.Ordinal);
        while (toVisit.Count > 0)
        {
            var cfg = toVisit.Dequeue();
            visited.Add(cfg.Name);
            foreach (var src in cfg.Sources ?? [])
            {
                if (src.External is not null) continue;
                if (visited.Contains(src.Name))
                {
                    if (string.IsNullOrEmpty(src.FilterSubject) || (cfg.Subjects ?? []).Any(s => JsSubjects.Collide(s, src.FilterSubject))) return true;
                }
                else if (js.TryGet(src.Name, out var other))
                {
                    toVisit.Enqueue(other.Config);
                }
            }
            if (cfg.Mirror is { External: null } m)
            {
                if (visited.Contains(m.Name)) return true;
                if (js.TryGet(m.Name, out var other)) toVisit.Enqueue(other.Config);
            }
        }
        return false;
    }

    /// <summary>Stream subject_transform and republish (nats-server checkStreamCfg).</summary>
    private static ApiError? CheckTransformAndRepublish(StreamConfig c, bool pedantic)
    {
        if (c.SubjectTransform is { } st)
        {
            if (!string.IsNullOrEmpty(st.Src) && !JsSubjects.IsValid(st.Src)) return JsErrors.StreamTransformInvalidSource($"invalid subject {st.Src}");
            if (JsSubjectTransform.Create(st.Src, st.Dest, out var terr) is null) return JsErrors.StreamTransformInvalidDestination(terr!);
        }
        if (c.Republish is { } rp)
        {
            if (string.IsNullOrEmpty(rp.Src))
            {
                if (pedantic) return JsErrors.Pedantic("republish source can not be empty");
                rp.Src = ">";
            }
            // '>' to '>' with a transform of the only subject republishes the transformed subjects.
            if (rp.Dest == ">" && rp.Src == ">" && c.SubjectTransform is { } t && c.Subjects is { Length: 1 } && t.Src == c.Subjects[0])
            {
                if (pedantic) return JsErrors.Pedantic("implicit republish based on subject transform");
                rp.Src = t.Dest;
                rp.Dest = t.Dest;
            }
            foreach (var s in c.Subjects ?? [])
                if (JsSubjects.Collide(rp.Dest, s)) return JsErrors.StreamInvalidConfig("stream configuration for republish destination forms a cycle");
            if (JsSubjectTransform.Create(rp.Src, rp.Dest, out _) is null)
                return JsErrors.StreamInvalidConfig($"stream configuration for republish with transform from '{rp.Src}' to '{rp.Dest}' not valid");
        }
        return null;
    }
}
