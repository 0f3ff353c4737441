using System.Buffers;
using System.Security.Cryptography;
using System.Text;
using System.Text.Json;
using Microsoft.Extensions.Logging;
using NatsBroker.Contracts;
using NatsBroker.JetStream.Api;

namespace NatsBroker.JetStream;

// The $JS.API handlers (nats-server jetstream_api.go): subject routing, request parsing, responses.
public sealed partial class JetStreamService
{
    private const string P = JsJson.Prefix;
    private static readonly byte[] NoResponders = Encoding.ASCII.GetBytes("NATS/1.0 503\r\n\r\n");
    /// <summary>MSG.NEXT and DIRECT.GET answer a too high Nats-Required-Api-Level with a status (nats-server).</summary>
    private static readonly byte[] RequiredApiLevelStatus = Encoding.ASCII.GetBytes("NATS/1.0 412 Required Api Level\r\n\r\n");
    private readonly StoredMessage _apiMsg = new(1024);
    private readonly Lock _apiMsgLock = new();

    /// <summary>Handles one request; false when it was answered with an error.</summary>
    private async Task<bool> DispatchAsync(ApiRequest req)
    {
        var subject = req.SubjectString;
        var t = subject.Split('.');
        // t[0]="$JS", t[1]="API"
        if (t.Length < 3) return true;
        if (!req.Headers.IsEmpty && ApiLevel.RequiresMore(req.Headers) && ResponseType(t) is { } responseType)
            return Fail(req, responseType, JsErrors.RequiredApiLevel);
        if (req.Js is null) return NotEnabledForAccount(req, t);
        if (StreamReadBy(t) is { } streamName && req.JetStream.TryGet(streamName, out var read)) await read.WaitIngestedAsync().ConfigureAwait(false);
        switch (t[2])
        {
            case "INFO" when t.Length == 3:
                return Respond(req, AccountInfo(req.JetStream));
            case "STREAM" when t.Length == 5 && t[3] == "DELETE":
                return await StreamDeleteAsync(req, t[4]).ConfigureAwait(false);
            case "STREAM" when t.Length >= 4:
                return StreamApi(req, t);
            case "CONSUMER" when t.Length == 6 && t[3] == "DELETE":
                return await ConsumerDeleteAsync(req, t[4], t[5]).ConfigureAwait(false);
            case "CONSUMER" when t.Length >= 4:
                return ConsumerApi(req, t);
            case "DIRECT" when t.Length >= 5 && t[3] == "GET":
                DirectGet(req, t);
                return true;
        }
        return true; // unknown API subject: nats-server has no handler for it either (no answer)
    }

    /// <summary>
    /// A request from an account without JetStream (nats-server's checkJetStream in every handler): the JSON
    /// endpoints answer 503 / 10039 "JetStream not enabled for account" (checked against 2.9.10); MSG.NEXT,
    /// DIRECT.GET and CONSUMER.RESET, which nats-server serves from per-stream / per-consumer subscriptions, have no
    /// responder; unknown subjects get nothing.
    /// </summary>
    private bool NotEnabledForAccount(ApiRequest req, string[] t)
    {
        if (ResponseType(t) is { } type) return Fail(req, type, JsErrors.NotEnabledForAccount);
        bool perStream = t[2] == "DIRECT" || (t[2] == "CONSUMER" && t.Length >= 4 && t[3] is "MSG" or "RESET");
        if (perStream && req.Reply.Length > 0) Publish(req, req.Reply, NoResponders, default);
        return !perStream;
    }

    /// <summary>
    /// The response type of a JSON API endpoint, for the Nats-Required-Api-Level refusal every nats-server handler
    /// makes first; null for MSG.NEXT / DIRECT.GET (a 412 status, only when the consumer / stream exists),
    /// CONSUMER.RESET (its own response) and unknown subjects (no handler, no answer).
    /// </summary>
    private static string? ResponseType(string[] t) => t[2] switch
    {
        "INFO" when t.Length == 3 => "account_info_response",
        "STREAM" when t.Length == 5 => t[3] switch
        {
            "CREATE" => "stream_create_response",
            "UPDATE" => "stream_update_response",
            "INFO" => "stream_info_response",
            "DELETE" => "stream_delete_response",
            "PURGE" => "stream_purge_response",
            "SNAPSHOT" => "stream_snapshot_response",
            "RESTORE" => "stream_restore_response",
            _ => null,
        },
        "STREAM" when t.Length == 4 && t[3] == "NAMES" => "stream_names_response",
        "STREAM" when t.Length == 4 && t[3] == "LIST" => "stream_list_response",
        "STREAM" when t.Length == 6 && t[3] == "MSG" => t[4] switch
        {
            "GET" => "stream_msg_get_response",
            "DELETE" => "stream_msg_delete_response",
            _ => null,
        },
        "CONSUMER" when t.Length >= 5 && t[3] == "CREATE" => "consumer_create_response",
        "CONSUMER" when t.Length == 7 && t[3] == "DURABLE" && t[4] == "CREATE" => "consumer_create_response",
        "CONSUMER" when t.Length == 6 => t[3] switch
        {
            "INFO" => "consumer_info_response",
            "DELETE" => "consumer_delete_response",
            "PAUSE" => "consumer_pause_response",
            "UNPIN" => "consumer_unpin_response",
            _ => null,
        },
        "CONSUMER" when t.Length == 5 && t[3] == "NAMES" => "consumer_names_response",
        "CONSUMER" when t.Length == 5 && t[3] == "LIST" => "consumer_list_response",
        _ => null,
    };

    /// <summary>
    /// The stream whose state the request reads or changes, when it must first see what was published to it before
    /// (JsStream.Barrier.cs): stream info, purge, message get/delete, direct get, consumer create/info/list. Not pull
    /// requests (CONSUMER.MSG.NEXT: they wait for messages anyway) and not stream create/update/delete.
    /// </summary>
    private static string? StreamReadBy(string[] t)
    {
        if (t.Length < 5) return null;
        return t[2] switch
        {
            "STREAM" when t[3] is "INFO" or "PURGE" or "SNAPSHOT" => t[4],
            "STREAM" when t[3] == "MSG" && t.Length == 6 => t[5],
            "DIRECT" when t[3] == "GET" => t[4],
            "CONSUMER" when t[3] is "CREATE" or "INFO" or "LIST" or "NAMES" => t[4],
            "CONSUMER" when t[3] == "DURABLE" && t.Length >= 6 && t[4] == "CREATE" => t[5],
            _ => null,
        };
    }

    private bool Respond(ApiRequest req, byte[] json)
    {
        Reply(req, json);
        return true;
    }

    private bool Fail(ApiRequest req, string type, ApiError error)
    {
        Reply(req, JsJson.Error(P + type, error));
        return false;
    }

    /// <summary>$JS.API.INFO of the requester's account (nats-server JetStreamAccountStats): usage, reservations, limits, API totals.</summary>
    private byte[] AccountInfo(JsAccount account)
    {
        var usage = AccountUsage(account);
        var limits = account.Limits;
        var (reservedMemory, reservedStore) = account.Reserved();
        var info = new AccountInfoResponse
        {
            Type = P + "account_info_response",
            Memory = usage.Memory,
            Storage = usage.Storage,
            ReservedMemory = reservedMemory,
            ReservedStorage = reservedStore,
            Streams = usage.Streams,
            Consumers = usage.Consumers,
            Limits = new AccountLimits
            {
                MaxMemory = limits.MaxMemory,
                MaxStorage = limits.MaxStore,
                MaxStreams = limits.MaxStreams,
                MaxConsumers = limits.MaxConsumers,
                MaxAckPending = limits.MaxAckPending,
                MemoryMaxStreamBytes = limits.MemoryMaxStreamBytes,
                StorageMaxStreamBytes = limits.StoreMaxStreamBytes,
                MaxBytesRequired = limits.MaxBytesRequired,
            },
            Domain = string.IsNullOrEmpty(Domain) ? null : Domain,
            Api = new ApiStats { Total = usage.ApiTotal, Errors = usage.ApiErrors },
        };
        return JsJson.Serialize(info, JsJsonContext.Default.AccountInfoResponse);
    }

    // ---- streams ----

    private bool StreamApi(ApiRequest req, string[] t)
    {
        string op = t[3];
        switch (op)
        {
            case "NAMES" when t.Length == 4:
                return StreamNames(req);
            case "LIST" when t.Length == 4:
                return StreamList(req);
            case "CREATE" when t.Length == 5:
                return StreamCreate(req, t[4]);
            case "UPDATE" when t.Length == 5:
                return StreamUpdate(req, t[4]);
            case "INFO" when t.Length == 5:
                return StreamInfo(req, t[4]);
            case "PURGE" when t.Length == 5:
                return StreamPurge(req, t[4]);
            case "SNAPSHOT" when t.Length == 5:
                return StreamSnapshot(req, t[4]);
            case "RESTORE" when t.Length == 5:
                return StreamRestore(req, t[4]);
            case "MSG" when t.Length == 6 && t[4] == "GET":
                return StreamMsgGet(req, t[5]);
            case "MSG" when t.Length == 6 && t[4] == "DELETE":
                return StreamMsgDelete(req, t[5]);
        }
        return true;
    }

    private bool StreamCreate(ApiRequest req, string name)
    {
        const string type = "stream_create_response";
        if (!JsJson.TryParse(req.Body, JsJsonContext.Default.StreamConfig, out var cfg, out var perr)) return Fail(req, type, perr!);
        if (cfg!.Name != name) return Fail(req, type, JsErrors.StreamMismatch);
        var err = JsConfigCheck.CheckStream(cfg, req.JetStream);
        if (err is not null) return Fail(req, type, err);
        AssetVersioning.SetStatic(cfg);
        if (req.JetStream.TryGet(name, out var existing))
        {
            // nats-server processStream: the existing stream's required level, not this request's, is compared.
            AssetVersioning.CopyStatic(cfg, existing.Config);
            if (!SameJson(existing.Config, cfg)) return Fail(req, type, JsErrors.StreamNameExist);
            return Respond(req, StreamInfoJson(type, existing.Info(), didCreate: true));
        }
        err = req.JetStream.Add(cfg, DateTime.UtcNow, out var stream);
        if (err is not null)
        {
            // A concurrent create of the same config is not an error (the account lock decided).
            if (err == JsErrors.StreamNameExist && req.JetStream.TryGet(name, out existing))
            {
                AssetVersioning.CopyStatic(cfg, existing.Config);
                if (SameJson(existing.Config, cfg)) return Respond(req, StreamInfoJson(type, existing.Info(), didCreate: true));
            }
            return Fail(req, type, err);
        }
        Logger.LogDebug("JetStream: created stream {Stream}", name);
        req.JetStream.Advisories.StreamAction(name, "create");
        return Respond(req, StreamInfoJson(type, stream!.Info(), didCreate: true));
    }

    private bool StreamUpdate(ApiRequest req, string name)
    {
        const string type = "stream_update_response";
        if (!JsJson.TryParse(req.Body, JsJsonContext.Default.StreamConfig, out var cfg, out var perr)) return Fail(req, type, perr!);
        if (cfg!.Name != name) return Fail(req, type, JsErrors.StreamMismatch);
        var err = JsConfigCheck.CheckStream(cfg, req.JetStream);
        if (err is not null) return Fail(req, type, err);
        AssetVersioning.SetStatic(cfg);
        if (!req.JetStream.TryGet(name, out var stream)) return Fail(req, type, JsErrors.StreamNotFound);
        err = JsConfigCheck.CheckStreamUpdate(stream.Config, cfg);
        if (err is not null) return Fail(req, type, err);
        if (req.JetStream.OverlapsOthers(name, cfg.Subjects)) return Fail(req, type, JsErrors.StreamSubjectOverlap);
        // jsa.configUpdateCheck: the new max_bytes against what the account's other streams reserve.
        if (req.JetStream.CheckStreamConfigLimits(cfg) is { } limitError) return Fail(req, type, limitError);
        err = stream.Update(cfg);
        if (err is not null) return Fail(req, type, err);
        req.JetStream.Advisories.StreamAction(name, "modify");
        return Respond(req, StreamInfoJson(type, stream.Info()));
    }

    private bool StreamInfo(ApiRequest req, string name)
    {
        const string type = "stream_info_response";
        if (!JsJson.TryParse(req.Body, JsJsonContext.Default.StreamInfoRequest, out var r, out var perr)) return Fail(req, type, perr!);
        if (!req.JetStream.TryGet(name, out var stream)) return Fail(req, type, JsErrors.StreamNotFound);
        return Respond(req, StreamInfoJson(type, stream.Info(r!.SubjectsFilter, r.DeletedDetails == true), paged: true));
    }

    /// <summary>
    /// A StreamInfo response, its config's metadata naming this server (nats-server setDynamicStreamMetadata).
    /// <paramref name="didCreate"/>: STREAM.CREATE's did_create (nats-server sets it on every
    /// successful create, also for an identical existing stream); <paramref name="paged"/>: STREAM.INFO carries
    /// ApiPaged (total/offset/limit of subject details).
    /// </summary>
    private static byte[] StreamInfoJson(string type, StreamInfo info, bool didCreate = false, bool paged = false) =>
        JsJson.Serialize(new StreamInfoResponse
        {
            Type = P + type,
            DidCreate = didCreate ? true : null,
            Total = paged ? info.State.Subjects?.Count ?? 0 : null,
            Offset = paged ? 0 : null,
            Limit = paged ? (info.State.Subjects is null ? 0 : 100_000) : null,
            Config = AssetVersioning.WithDynamic(info.Config),
            Created = info.Created,
            State = info.State,
            Cluster = info.Cluster,
            Mirror = info.Mirror,
            Sources = info.Sources,
            Ts = info.Ts,
        }, JsJsonContext.Default.StreamInfoResponse);

    private async Task<bool> StreamDeleteAsync(ApiRequest req, string name)
    {
        const string type = "stream_delete_response";
        if (!req.JetStream.TryGet(name, out _)) return Fail(req, type, JsErrors.StreamNotFound);
        if (!await req.JetStream.DeleteAsync(name).ConfigureAwait(false)) return Fail(req, type, JsErrors.StreamNotFound);
        Respond(req, JsJson.Serialize(new StreamDeleteResponse { Type = P + type, Success = true }, JsJsonContext.Default.StreamDeleteResponse));
        // nats-server's delete advisory goes through the stream's send queue and arrives after the API audit.
        req.JetStream.Advisories.StreamAction(name, "delete");
        return true;
    }

    private bool StreamPurge(ApiRequest req, string name)
    {
        const string type = "stream_purge_response";
        if (!JsJson.TryParse(req.Body, JsJsonContext.Default.StreamPurgeRequest, out var r, out var perr)) return Fail(req, type, perr!);
        if (!req.JetStream.TryGet(name, out var stream)) return Fail(req, type, JsErrors.StreamNotFound);
        var err = stream.Purge(r!, out ulong purged);
        req.JetStream.SyncUsage(stream);
        if (err is not null) return Fail(req, type, err);
        return Respond(req, JsJson.Serialize(new StreamPurgeResponse { Type = P + type, Success = true, Purged = purged }, JsJsonContext.Default.StreamPurgeResponse));
    }

    private bool StreamNames(ApiRequest req)
    {
        const string type = "stream_names_response";
        if (!JsJson.TryParse(req.Body, JsJsonContext.Default.StreamNamesRequest, out var r, out var perr)) return Fail(req, type, perr!);
        const int limit = 1024;
        var names = req.JetStream.Streams()
            .Where(s => string.IsNullOrEmpty(r!.Subject) || (s.Config.Subjects ?? []).Any(x => JsSubjects.Collide(x, r.Subject)))
            .Select(s => s.Name).ToList();
        int offset = Math.Clamp(r!.Offset ?? 0, 0, names.Count);
        var resp = new StreamNamesResponse { Type = P + type, Total = names.Count, Offset = offset, Limit = limit, Streams = names.Skip(offset).Take(limit).ToList() };
        return Respond(req, JsJson.Serialize(resp, JsJsonContext.Default.StreamNamesResponse));
    }

    private bool StreamList(ApiRequest req)
    {
        const string type = "stream_list_response";
        if (!JsJson.TryParse(req.Body, JsJsonContext.Default.StreamNamesRequest, out var r, out var perr)) return Fail(req, type, perr!);
        const int limit = 256;
        var all = req.JetStream.Streams()
            .Where(s => string.IsNullOrEmpty(r!.Subject) || (s.Config.Subjects ?? []).Any(x => JsSubjects.Collide(x, r.Subject)))
            .ToList();
        int offset = Math.Clamp(r!.Offset ?? 0, 0, all.Count);
        var resp = new StreamListResponse { Type = P + type, Total = all.Count, Offset = offset, Limit = limit, Streams = all.Skip(offset).Take(limit).Select(s => s.Info()).ToList() };
        return Respond(req, JsJson.Serialize(resp, JsJsonContext.Default.StreamListResponse));
    }

    private bool StreamMsgGet(ApiRequest req, string name)
    {
        const string type = "stream_msg_get_response";
        if (!JsJson.TryParse(req.Body, JsJsonContext.Default.MsgGetRequest, out var r, out var perr)) return Fail(req, type, perr!);
        if (!req.JetStream.TryGet(name, out var stream)) return Fail(req, type, JsErrors.StreamNotFound);
        lock (_apiMsgLock)
        {
            var err = stream.GetMessage(r!, _apiMsg);
            if (err is not null) return Fail(req, type, err);
            var msg = new StoredMsgInfo
            {
                Subject = Encoding.UTF8.GetString(_apiMsg.Subject),
                Seq = _apiMsg.Sequence,
                Hdrs = _apiMsg.HeadersLength > 0 ? _apiMsg.Headers.ToArray() : null,
                Data = _apiMsg.PayloadLength > 0 ? _apiMsg.Payload.ToArray() : null,
                Time = GoTime.FromUnixNanos(_apiMsg.Timestamp),
            };
            return Respond(req, JsJson.Serialize(new MsgGetResponse { Type = P + type, Message = msg }, JsJsonContext.Default.MsgGetResponse));
        }
    }

    private bool StreamMsgDelete(ApiRequest req, string name)
    {
        const string type = "stream_msg_delete_response";
        if (!JsJson.TryParse(req.Body, JsJsonContext.Default.MsgDeleteRequest, out var r, out var perr)) return Fail(req, type, perr!);
        if (!req.JetStream.TryGet(name, out var stream)) return Fail(req, type, JsErrors.StreamNotFound);
        var err = stream.DeleteMessage(r!);
        req.JetStream.SyncUsage(stream);
        if (err is not null) return Fail(req, type, err);
        return Respond(req, JsJson.Serialize(new MsgDeleteResponse { Type = P + type, Success = true }, JsJsonContext.Default.MsgDeleteResponse));
    }

    private static bool SameJson(StreamConfig a, StreamConfig b) =>
        JsonSerializer.SerializeToUtf8Bytes(a, JsJsonContext.Default.StreamConfig).AsSpan()
            .SequenceEqual(JsonSerializer.SerializeToUtf8Bytes(b, JsJsonContext.Default.StreamConfig));

    private static bool SameJson(ConsumerConfig a, ConsumerConfig b) =>
        JsonSerializer.SerializeToUtf8Bytes(a, JsJsonContext.Default.ConsumerConfig).AsSpan()
            .SequenceEqual(JsonSerializer.SerializeToUtf8Bytes(b, JsJsonContext.Default.ConsumerConfig));

    // ---- consumers ----

    private bool ConsumerApi(ApiRequest req, string[] t)
    {
        string op = t[3];
        switch (op)
        {
            case "CREATE" when t.Length >= 5:
                return ConsumerCreate(req, t[4], t.Length >= 6 ? t[5] : null, t.Length >= 7 ? string.Join('.', t, 6, t.Length - 6) : null, durableForm: false);
            case "DURABLE" when t.Length == 7 && t[4] == "CREATE":
                return ConsumerCreate(req, t[5], t[6], null, durableForm: true);
            case "INFO" when t.Length == 6:
                return ConsumerInfo(req, t[4], t[5]);
            case "NAMES" when t.Length == 5:
                return ConsumerNames(req, t[4]);
            case "LIST" when t.Length == 5:
                return ConsumerList(req, t[4]);
            case "MSG" when t.Length >= 6 && t[4] == "NEXT":
                PullNext(req, t); // JetStreamService.PullNext.cs
                return true;
            case "PAUSE" when t.Length == 6:
                return ConsumerPause(req, t[4], t[5]);
            case "RESET" when t.Length == 6:
                return ConsumerReset(req, t[4], t[5]);
            case "UNPIN" when t.Length == 6:
                return ConsumerUnpin(req, t[4], t[5]);
        }
        return true;
    }

    private bool ConsumerCreate(ApiRequest req, string streamName, string? nameInSubject, string? filterInSubject, bool durableForm)
    {
        const string type = "consumer_create_response";
        if (!JsJson.TryParse(req.Body, JsJsonContext.Default.CreateConsumerRequest, out var r, out var perr)) return Fail(req, type, perr!);
        if (r!.StreamName != streamName) return Fail(req, type, JsErrors.StreamMismatch);
        // nats-server's request holds the config by value: a missing one is an empty config.
        var cfg = r.Config ?? new ConsumerConfig();
        if (!req.JetStream.TryGet(streamName, out var stream)) return Fail(req, type, JsErrors.StreamNotFound);

        if (durableForm)
        {
            if (string.IsNullOrEmpty(nameInSubject)) return Fail(req, type, JsErrors.ConsumerDurableNameNotInSubject);
            if (string.IsNullOrEmpty(cfg.DurableName)) return Fail(req, type, JsErrors.ConsumerDurableNameNotSet);
            if (cfg.DurableName != nameInSubject) return Fail(req, type, JsErrors.ConsumerDurableNameNotMatchSubject);
        }
        else if (nameInSubject is not null)
        {
            if (!string.IsNullOrEmpty(cfg.Name) && cfg.Name != nameInSubject) return Fail(req, type, JsErrors.ConsumerDurableNameNotMatchSubject);
            if (!string.IsNullOrEmpty(cfg.DurableName) && cfg.DurableName != nameInSubject) return Fail(req, type, JsErrors.ConsumerDurableNameNotMatchSubject);
            if (filterInSubject is not null)
            {
                if (cfg.FilterSubjects is { Length: > 0 }) return Fail(req, type, JsErrors.ConsumerMultipleFiltersNotAllowed);
                if (!string.IsNullOrEmpty(cfg.FilterSubject) && cfg.FilterSubject != filterInSubject) return Fail(req, type, JsErrors.ConsumerCreateFilterSubjectMismatch);
            }
        }
        if (!string.IsNullOrEmpty(cfg.DurableName) && !string.IsNullOrEmpty(cfg.Name) && cfg.DurableName != cfg.Name)
            return Fail(req, type, JsErrors.ConsumerCreateDurableAndNameMismatch);
        string? name = !string.IsNullOrEmpty(cfg.DurableName) ? cfg.DurableName : !string.IsNullOrEmpty(cfg.Name) ? cfg.Name : nameInSubject;
        if (name is not null)
        {
            if (name.Contains('/') || name.Contains('\\')) return Fail(req, type, JsErrors.ConsumerNameContainsPathSeparators);
            if (!JsConfigCheck.IsValidName(name)) return Fail(req, type, JsErrors.ConsumerBadDurableName);
            if (name.Length > JsConfigCheck.MaxNameLength) return Fail(req, type, JsErrors.ConsumerNameTooLong(JsConfigCheck.MaxNameLength));
        }
        name ??= RandomName();
        if (!string.IsNullOrEmpty(cfg.Name) || nameInSubject is not null) cfg.Name = name;
        if (!string.IsNullOrEmpty(cfg.DurableName)) cfg.Name = name;
        cfg.Name ??= name;
        bool ackPendingSet = cfg.MaxAckPending is > 0;
        var err = JsConfigCheck.CheckConsumer(cfg, stream.Config, false);
        if (err is not null) return Fail(req, type, err);
        AssetVersioning.SetStatic(cfg);
        err = req.JetStream.ApplyAckPendingLimit(cfg, ackPendingSet);
        if (err is not null) return Fail(req, type, err);

        JsConsumer? consumer;
        lock (stream.ConsumersLock)
        {
            if (stream.TryGetConsumer(name, out var existing))
            {
                if (r.Action == "create")
                {
                    // nats-server addConsumerWithAssignment: a create compares with the existing required level.
                    AssetVersioning.CopyStatic(cfg, existing.Config);
                    if (!SameJson(existing.Config, cfg)) return Fail(req, type, JsErrors.ConsumerAlreadyExists);
                }
                if (!SameJson(existing.Config, cfg))
                {
                    var uerr = CheckConsumerUpdate(existing.Config, cfg);
                    if (uerr is not null) return Fail(req, type, uerr);
                    existing.Update(cfg);
                }
                return Respond(req, ConsumerInfoJson(type, existing.Info()));
            }
            if (r.Action == "update") return Fail(req, type, JsErrors.ConsumerDoesNotExist);
            if (req.JetStream.ConsumerLimitReached(stream)) return Fail(req, type, JsErrors.MaximumConsumersLimit);
            if (stream.Config.Retention == "workqueue")
            {
                foreach (var other in stream.ConsumersUnlocked)
                {
                    var of = other.Config.FilterSubjects is { Length: > 0 } ofs ? ofs : string.IsNullOrEmpty(other.Config.FilterSubject) ? [] : [other.Config.FilterSubject];
                    var nf = cfg.FilterSubjects is { Length: > 0 } nfs ? nfs : string.IsNullOrEmpty(cfg.FilterSubject) ? [] : [cfg.FilterSubject];
                    if (of.Length == 0 || nf.Length == 0) return Fail(req, type, of.Length == 0 && nf.Length == 0 ? JsErrors.ConsumerWqMultipleUnfiltered : JsErrors.ConsumerWqConsumerNotUnique);
                    if (JsSubjects.Overlap(of, nf)) return Fail(req, type, JsErrors.ConsumerWqConsumerNotUnique);
                }
            }
            err = JsConsumer.Create(stream, name, cfg, DateTime.UtcNow, recovering: false, out consumer);
            if (err is not null) return Fail(req, type, err);
            stream.AddConsumerLocked(consumer!);
        }
        // The info is taken before the consumer starts delivering (nats-server initialInfo): a client that reads
        // num_pending from the create response (ordered consumers, KV watchers) must see what is there to get.
        var info = consumer!.Info();
        consumer.Start();
        req.JetStream.Advisories.ConsumerAction(streamName, name, "create");
        return Respond(req, ConsumerInfoJson(type, info));
    }

    /// <summary>What a consumer update may not change (nats-server consumer.go checkNewConsumerConfig).</summary>
    private static ApiError? CheckConsumerUpdate(ConsumerConfig old, ConsumerConfig next)
    {
        if (old.DeliverPolicy != next.DeliverPolicy) return JsErrors.ConsumerCreate("deliver policy can not be updated");
        if (old.OptStartSeq != next.OptStartSeq) return JsErrors.ConsumerCreate("start sequence can not be updated");
        if (old.OptStartTime != next.OptStartTime) return JsErrors.ConsumerCreate("start time can not be updated");
        if (old.AckPolicy != next.AckPolicy) return JsErrors.ConsumerCreate("ack policy can not be updated");
        if (old.ReplayPolicy != next.ReplayPolicy) return JsErrors.ConsumerCreate("replay policy can not be updated");
        if (string.IsNullOrEmpty(old.DeliverSubject) != string.IsNullOrEmpty(next.DeliverSubject))
            return JsErrors.ConsumerCreate(string.IsNullOrEmpty(old.DeliverSubject) ? "can not update pull consumer to push based" : "can not update push consumer to pull based");
        if (old.DeliverSubject != next.DeliverSubject) return JsErrors.ConsumerExistingActive;
        if (old.FilterSubject != next.FilterSubject || !(old.FilterSubjects ?? []).SequenceEqual(next.FilterSubjects ?? []))
            return JsErrors.ConsumerCreate("filter subject can not be updated by this server yet");
        return null;
    }

    private static string RandomName()
    {
        const string alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
        Span<char> c = stackalloc char[8];
        for (int i = 0; i < c.Length; i++) c[i] = alphabet[RandomNumberGenerator.GetInt32(alphabet.Length)];
        return new string(c);
    }

    /// <summary>A ConsumerInfo response, its config's metadata naming this server (nats-server setDynamicConsumerInfoMetadata).</summary>
    private static byte[] ConsumerInfoJson(string type, ConsumerInfo info)
    {
        var resp = ConsumerInfoResponse.From(P + type, info);
        resp.Config = AssetVersioning.WithDynamic(info.Config);
        return JsJson.Serialize(resp, JsJsonContext.Default.ConsumerInfoResponse);
    }

    private bool ConsumerInfo(ApiRequest req, string streamName, string name)
    {
        const string type = "consumer_info_response";
        if (!req.JetStream.TryGet(streamName, out var stream)) return Fail(req, type, JsErrors.StreamNotFound);
        if (!stream.TryGetConsumer(name, out var c)) return Fail(req, type, JsErrors.ConsumerNotFound);
        return Respond(req, ConsumerInfoJson(type, c.Info()));
    }

    private async Task<bool> ConsumerDeleteAsync(ApiRequest req, string streamName, string name)
    {
        const string type = "consumer_delete_response";
        if (!req.JetStream.TryGet(streamName, out var stream)) return Fail(req, type, JsErrors.StreamNotFound);
        if (!stream.TryGetConsumer(name, out var c)) return Fail(req, type, JsErrors.ConsumerNotFound);
        c.MarkDeleted();
        bool deleted = await DeleteConsumerAsync(stream, c, advise: false).ConfigureAwait(false);
        Respond(req, JsJson.Serialize(new ConsumerDeleteResponse { Type = P + type, Success = true }, JsJsonContext.Default.ConsumerDeleteResponse));
        // As for streams, nats-server's consumer delete advisory arrives after the API audit.
        if (deleted) stream.Js.Advisories.ConsumerAction(stream.Name, c.Name, "delete");
        return true;
    }

    /// <summary>
    /// Removes a consumer and its durable state (API delete, or an ephemeral past inactive_threshold), with the
    /// consumer delete advisory when <paramref name="advise"/>. False when it was already gone.
    /// </summary>
    internal async Task<bool> DeleteConsumerAsync(JsStream stream, JsConsumer consumer, bool advise = true)
    {
        try
        {
            if (!stream.RemoveConsumer(consumer)) return false;
            await consumer.StopAsync(delete: true).ConfigureAwait(false);
            if (advise) stream.Js.Advisories.ConsumerAction(stream.Name, consumer.Name, "delete");
            return true;
        }
        catch (Exception ex)
        {
            Logger.LogError(ex, "JetStream: deleting consumer {Consumer} of {Stream} failed", consumer.Name, stream.Name);
            return false;
        }
    }

    private bool ConsumerNames(ApiRequest req, string streamName)
    {
        const string type = "consumer_names_response";
        if (!JsJson.TryParse(req.Body, JsJsonContext.Default.OffsetRequest, out var r, out var perr)) return Fail(req, type, perr!);
        if (!req.JetStream.TryGet(streamName, out var stream)) return Fail(req, type, JsErrors.StreamNotFound);
        const int limit = 1024;
        var all = stream.Consumers;
        int offset = Math.Clamp(r!.Offset ?? 0, 0, all.Length);
        var resp = new ConsumerNamesResponse { Type = P + type, Total = all.Length, Offset = offset, Limit = limit, Consumers = all.Skip(offset).Take(limit).Select(c => c.Name).ToList() };
        return Respond(req, JsJson.Serialize(resp, JsJsonContext.Default.ConsumerNamesResponse));
    }

    private bool ConsumerList(ApiRequest req, string streamName)
    {
        const string type = "consumer_list_response";
        if (!JsJson.TryParse(req.Body, JsJsonContext.Default.OffsetRequest, out var r, out var perr)) return Fail(req, type, perr!);
        if (!req.JetStream.TryGet(streamName, out var stream)) return Fail(req, type, JsErrors.StreamNotFound);
        const int limit = 256;
        var all = stream.Consumers;
        int offset = Math.Clamp(r!.Offset ?? 0, 0, all.Length);
        var resp = new ConsumerListResponse { Type = P + type, Total = all.Length, Offset = offset, Limit = limit, Consumers = all.Skip(offset).Take(limit).Select(c => c.Info()).ToList() };
        return Respond(req, JsJson.Serialize(resp, JsJsonContext.Default.ConsumerListResponse));
    }
}
