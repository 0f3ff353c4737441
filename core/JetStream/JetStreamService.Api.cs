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
        if (RefusedBeforeAccountChecks(req, t) is { } refused) return refused;
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
        // CONSUMER.RESET goes through the $JS.API import in nats-server (only MSG.NEXT and DIRECT.GET skip it) and
        // is dropped there: no answer at all.
        bool perStream = t[2] == "DIRECT" || (t[2] == "CONSUMER" && t.Length >= 4 && t[3] == "MSG");
        if (perStream) NoRespondersTo(req);
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
        Reply(req, JsJson.Error(P + type, error), error: true);
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
        if (!JsJson.TryParseStrict(req.Body, JsJsonContext.Default.StreamConfig, GoSchemas.StreamConfigRequest, out var cfg, out var perr)) return Fail(req, type, perr!);
        // jsStreamCreateRequest's own checks, before checkStreamCfg.
        if (cfg!.Name != name) return Fail(req, type, JsErrors.StreamMismatch);
        if (name.Contains('/') || name.Contains('\\')) return Fail(req, type, JsErrors.StreamNameContainsPathSeparators);
        if (cfg.Sealed) return Fail(req, type, JsErrors.StreamInvalidConfig("stream configuration for create can not be sealed"));
        if (cfg.MirrorDirect && cfg.Mirror is null) return Fail(req, type, JsErrors.StreamInvalidConfig("stream has no mirror but does have mirror direct"));
        var err = JsConfigCheck.CheckStream(cfg, req.JetStream, PedanticRequested(req.Body));
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
        if (!JsJson.TryParseStrict(req.Body, JsJsonContext.Default.StreamConfig, GoSchemas.StreamConfigRequest, out var cfg, out var perr)) return Fail(req, type, perr!);
        // jsStreamUpdateRequest: checkStreamCfg first, then the name in the subject.
        var err = JsConfigCheck.CheckStream(cfg!, req.JetStream, PedanticRequested(req.Body));
        if (err is not null) return Fail(req, type, err);
        if (cfg!.Name != name) return Fail(req, type, JsErrors.StreamMismatch);
        AssetVersioning.SetStatic(cfg);
        if (!req.JetStream.TryGet(name, out var stream)) return Fail(req, type, JsErrors.StreamNotFound);
        err = JsConfigCheck.CheckStreamUpdate(stream.Config, cfg);
        if (err is not null) return Fail(req, type, err);
        if (cfg.Sealed)
        {
            // configUpdateCheck: a sealed stream keeps everything: no age limit, no deletes, purges or roll-ups.
            cfg.MaxAge = 0;
            cfg.Discard = StreamDiscardPolicy.New;
            cfg.DenyDelete = cfg.DenyPurge = true;
            cfg.AllowRollupHdrs = false;
        }
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
        // jsStreamInfoRequest reads a body only when it starts as a JSON object or array.
        var r = new StreamInfoRequest();
        if (ApiBodies.IsJsonObjectOrArray(req.Body) && !JsJson.TryParseStrict(req.Body, JsJsonContext.Default.StreamInfoRequest, GoSchemas.StreamInfoRequest, out r, out var perr)) return Fail(req, type, perr!);
        if (!req.JetStream.TryGet(name, out var stream)) return Fail(req, type, JsErrors.StreamNotFound);
        // The paging fields are those of the subject details: all 0 without matching subjects; otherwise the
        // request's offset (negative as 0, not clamped to the total) and nats-server's limit of 100,000.
        int offset = Math.Max(r!.Offset ?? 0, 0);
        var info = stream.Info(r.SubjectsFilter, r.DeletedDetails == true, offset, out int total);
        var paging = total > 0 ? (total, offset, 100_000) : (0, 0, 0);
        return Respond(req, StreamInfoJson(type, info, paging: paging));
    }

    /// <summary>
    /// A StreamInfo response, its config's metadata naming this server (nats-server setDynamicStreamMetadata).
    /// <paramref name="didCreate"/>: STREAM.CREATE's did_create (nats-server sets it on every
    /// successful create, also for an identical existing stream); <paramref name="paging"/>: STREAM.INFO carries
    /// ApiPaged (total/offset/limit of subject details).
    /// </summary>
    private static byte[] StreamInfoJson(string type, StreamInfo info, bool didCreate = false, (int Total, int Offset, int Limit)? paging = null)
    {
        bool paged = paging is not null;
        return JsJson.Serialize(new StreamInfoResponse
        {
            Type = P + type,
            DidCreate = didCreate ? true : null,
            Total = paging?.Total,
            Offset = paging?.Offset,
            Limit = paging?.Limit,
            Config = AssetVersioning.WithDynamic(info.Config),
            Created = info.Created,
            State = info.State,
            // nats-server's create and update answers carry no cluster info; STREAM.INFO does (jsStreamInfoRequest).
            Cluster = paged ? info.Cluster : null,
            Mirror = info.Mirror,
            Sources = info.Sources,
            Ts = info.Ts,
        }, JsJsonContext.Default.StreamInfoResponse);
    }

    private async Task<bool> StreamDeleteAsync(ApiRequest req, string name)
    {
        const string type = "stream_delete_response";
        if (!ApiBodies.IsEmptyRequest(req.Body)) return Fail(req, type, JsErrors.NotEmptyRequest);
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
        var r = new StreamPurgeRequest();
        if (ApiBodies.IsJsonObjectOrArray(req.Body))
        {
            if (!JsJson.TryParseStrict(req.Body, JsJsonContext.Default.StreamPurgeRequest, GoSchemas.StreamPurgeRequest, out r, out var perr)) return Fail(req, type, perr!);
            if (r!.Seq is > 0 && r.Keep is > 0) return Fail(req, type, JsErrors.BadRequest);
        }
        if (!req.JetStream.TryGet(name, out var stream)) return Fail(req, type, JsErrors.StreamNotFound);
        var err = stream.Purge(r!, out ulong purged);
        req.JetStream.SyncUsage(stream);
        if (err is not null) return Fail(req, type, err);
        return Respond(req, JsJson.Serialize(new StreamPurgeResponse { Type = P + type, Success = true, Purged = purged }, JsJsonContext.Default.StreamPurgeResponse));
    }

    private bool StreamNames(ApiRequest req)
    {
        const string type = "stream_names_response";
        var r = new StreamNamesRequest();
        if (ApiBodies.IsJsonObjectOrArray(req.Body) && !JsJson.TryParseStrict(req.Body, JsJsonContext.Default.StreamNamesRequest, GoSchemas.StreamNamesRequest, out r, out var perr)) return Fail(req, type, perr!);
        const int limit = 1024;
        var names = req.JetStream.Streams()
            .Where(s => string.IsNullOrEmpty(r!.Subject) || (s.Config.Subjects ?? []).Any(x => JsSubjects.Collide(x, r.Subject)))
            .Select(s => s.Name).Order(StringComparer.Ordinal).ToList(); // sorted, as jsStreamNamesRequest
        int offset = Math.Clamp(r!.Offset ?? 0, 0, names.Count);
        // Go appends to a nil slice: no name on this page is "streams":null.
        var page = names.Skip(offset).Take(limit).ToList();
        var resp = new StreamNamesResponse { Type = P + type, Total = names.Count, Offset = offset, Limit = limit, Streams = page.Count > 0 ? page : null };
        return Respond(req, JsJson.Serialize(resp, JsJsonContext.Default.StreamNamesResponse));
    }

    private bool StreamList(ApiRequest req)
    {
        const string type = "stream_list_response";
        var r = new StreamNamesRequest();
        if (ApiBodies.IsJsonObjectOrArray(req.Body) && !JsJson.TryParseStrict(req.Body, JsJsonContext.Default.StreamNamesRequest, GoSchemas.StreamListRequest, out r, out var perr)) return Fail(req, type, perr!);
        const int limit = 256;
        var all = req.JetStream.Streams()
            .Where(s => string.IsNullOrEmpty(r!.Subject) || (s.Config.Subjects ?? []).Any(x => JsSubjects.Collide(x, r.Subject)))
            .OrderBy(s => s.Name, StringComparer.Ordinal).ToList(); // sorted, as jsStreamListRequest
        int offset = Math.Clamp(r!.Offset ?? 0, 0, all.Count);
        var resp = new StreamListResponse { Type = P + type, Total = all.Count, Offset = offset, Limit = limit, Streams = all.Skip(offset).Take(limit).Select(s => WithoutCluster(s.Info())).ToList() };
        return Respond(req, JsJson.Serialize(resp, JsJsonContext.Default.StreamListResponse));
    }

    private bool StreamMsgGet(ApiRequest req, string name)
    {
        const string type = "stream_msg_get_response";
        if (ApiBodies.IsEmptyRequest(req.Body)) return Fail(req, type, JsErrors.BadRequest);
        if (!JsJson.TryParseStrict(req.Body, JsJsonContext.Default.MsgGetRequest, GoSchemas.MsgGetRequest, out var r, out var perr)) return Fail(req, type, perr!);
        if (JsStream.RefuseMsgGet(r!) is { } refused) return Fail(req, type, refused);
        if (!req.JetStream.TryGet(name, out var stream)) return Fail(req, type, JsErrors.StreamNotFound);
        lock (_apiMsgLock)
        {
            var err = stream.GetMessage(r!, _apiMsg);
            if (err is not null) return Fail(req, type, err);
            var msg = new StoredMsgInfo
            {
                Subject = Encoding.UTF8.GetString(_apiMsg.Subject),
                Seq = _apiMsg.Sequence,
                Hdrs = _apiMsg.HeadersLength > 0 && r!.NoHdr != true ? _apiMsg.Headers.ToArray() : null,
                Data = _apiMsg.PayloadLength > 0 ? _apiMsg.Payload.ToArray() : null,
                Time = GoTime.FromUnixNanos(_apiMsg.Timestamp),
            };
            // jsMsgGetRequest sends its answer outside the API layer: not audited, not counted.
            ReplyUncounted(req, JsJson.Serialize(new MsgGetResponse { Type = P + type, Message = msg }, JsJsonContext.Default.MsgGetResponse));
            return true;
        }
    }

    private bool StreamMsgDelete(ApiRequest req, string name)
    {
        const string type = "stream_msg_delete_response";
        if (ApiBodies.IsEmptyRequest(req.Body)) return Fail(req, type, JsErrors.BadRequest);
        if (!JsJson.TryParseStrict(req.Body, JsJsonContext.Default.MsgDeleteRequest, GoSchemas.MsgDeleteRequest, out var r, out var perr)) return Fail(req, type, perr!);
        if (!req.JetStream.TryGet(name, out var stream)) return Fail(req, type, JsErrors.StreamNotFound);
        var err = stream.DeleteMessage(r!);
        req.JetStream.SyncUsage(stream);
        if (err is not null) return Fail(req, type, err);
        return Respond(req, JsJson.Serialize(new MsgDeleteResponse { Type = P + type, Success = true }, JsJsonContext.Default.MsgDeleteResponse));
    }

    /// <summary>
    /// StreamConfigRequest's "pedantic" (2.11+; not part of the stream's config, so read beside it). The body was
    /// already decoded strictly; the last top-level value decides, as Go decodes them one over the other.
    /// </summary>
    private static bool PedanticRequested(ReadOnlySpan<byte> body)
    {
        if (body.IndexOf("edantic"u8) < 0) return false;
        bool pedantic = false;
        var reader = new Utf8JsonReader(body, new JsonReaderOptions { AllowMultipleValues = true });
        try
        {
            while (reader.Read())
            {
                if (reader.TokenType == JsonTokenType.PropertyName && reader.CurrentDepth == 1 && reader.ValueTextEquals("pedantic"u8))
                {
                    reader.Read();
                    if (reader.TokenType is JsonTokenType.True or JsonTokenType.False) pedantic = reader.TokenType == JsonTokenType.True;
                }
                else if (reader.TokenType is JsonTokenType.StartObject or JsonTokenType.StartArray && reader.CurrentDepth >= 1)
                {
                    reader.Skip();
                }
            }
        }
        catch (JsonException)
        {
            return false;
        }
        return pedantic;
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

    /// <summary>
    /// CONSUMER.CREATE.&lt;stream&gt;[.&lt;name&gt;[.&lt;filter&gt;]] and CONSUMER.DURABLE.CREATE.&lt;stream&gt;.&lt;durable&gt;, in the
    /// order of nats-server's jsConsumerCreateRequest and stream.addConsumerWithAssignment (the first refusal wins).
    /// </summary>
    private bool ConsumerCreate(ApiRequest req, string streamName, string? nameInSubject, string? filterInSubject, bool durableForm)
    {
        const string type = "consumer_create_response";
        if (!JsJson.TryParseStrict(req.Body, JsJsonContext.Default.CreateConsumerRequest, GoSchemas.CreateConsumerRequest, out var r, out var perr)) return Fail(req, type, perr!);
        // nats-server's request holds the config by value: a missing one is an empty config.
        var cfg = r!.Config ?? new ConsumerConfig();
        bool legacyEphemeral = !durableForm && nameInSubject is null;
        string? consumerName = legacyEphemeral ? cfg.Name : nameInSubject;
        if (streamName != (r.StreamName ?? "")) return Fail(req, type, JsErrors.StreamMismatch);
        if (!string.IsNullOrEmpty(consumerName) && (consumerName.Contains('/') || consumerName.Contains('\\')))
            return Fail(req, type, JsErrors.ConsumerNameContainsPathSeparators);
        if (durableForm)
        {
            if (string.IsNullOrEmpty(cfg.DurableName)) return Fail(req, type, JsErrors.ConsumerDurableNameNotSet);
            if (cfg.DurableName != consumerName) return Fail(req, type, JsErrors.ConsumerDurableNameNotMatchSubject);
            cfg.Name = consumerName;
        }
        else if (!legacyEphemeral)
        {
            if (!string.IsNullOrEmpty(cfg.DurableName) && cfg.DurableName != consumerName) return Fail(req, type, JsErrors.ConsumerDurableNameNotMatchSubject);
            cfg.Name = consumerName;
        }
        if (legacyEphemeral && !string.IsNullOrEmpty(cfg.DurableName)) return Fail(req, type, JsErrors.ConsumerEphemeralWithDurableName);
        if (!string.IsNullOrEmpty(filterInSubject))
        {
            if (cfg.FilterSubjects is { Length: > 0 }) return Fail(req, type, JsErrors.ConsumerMultipleFiltersNotAllowed);
            if (cfg.FilterSubject != filterInSubject) return Fail(req, type, JsErrors.ConsumerCreateFilterSubjectMismatch);
        }
        if (cfg.NumReplicas > 1) return Fail(req, type, JsErrors.StreamReplicasNotSupported);
        if (!req.JetStream.TryGet(streamName, out var stream)) return Fail(req, type, JsErrors.StreamNotFound);
        // An existing consumer keeps its pause_until (CONSUMER.PAUSE changes it, not a create).
        if (!string.IsNullOrEmpty(consumerName) && stream.TryGetConsumer(consumerName, out var paused)) cfg.PauseUntil = paused.Config.PauseUntil;
        AssetVersioning.SetStatic(cfg);
        var err = JsConfigCheck.CheckConsumer(cfg, stream.Config, req.JetStream.Limits.MaxAckPending, r.Pedantic == true);
        if (err is not null) return Fail(req, type, err);

        string? name = !string.IsNullOrEmpty(cfg.DurableName) ? cfg.DurableName : cfg.Name;
        JsConsumer? consumer;
        lock (stream.ConsumersLock)
        {
            var wq = stream.Config.Retention == RetentionPolicy.WorkQueue;
            if (!string.IsNullOrEmpty(name) && stream.TryGetConsumer(name, out var existing))
            {
                if (r.Action == "create")
                {
                    // nats-server addConsumerWithAssignment: a create compares with the existing required level.
                    AssetVersioning.CopyStatic(cfg, existing.Config);
                    if (!SameJson(existing.Config, cfg)) return Fail(req, type, JsErrors.ConsumerAlreadyExists);
                }
                if (wq && !PartitionUnique(stream, name, cfg)) return Fail(req, type, JsErrors.ConsumerWqConsumerNotUnique);
                if (!SameJson(existing.Config, cfg))
                {
                    var uerr = CheckConsumerUpdate(req.JetStream, existing.Config, cfg);
                    if (uerr is not null) return Fail(req, type, uerr);
                    existing.Update(cfg);
                }
                return Respond(req, ConsumerInfoJson(type, existing.Info()));
            }
            if (r.Action == "update") return Fail(req, type, JsErrors.ConsumerDoesNotExist);
            if (req.JetStream.ConsumerLimitReached(stream)) return Fail(req, type, JsErrors.MaximumConsumersLimit);
            if (wq)
            {
                if (cfg.AckPolicy is not (AckPolicy.Explicit or AckPolicy.FlowControl)) return Fail(req, type, JsErrors.ConsumerWqRequiresExplicitAck);
                if (cfg.DeliverPolicy != DeliverPolicy.All) return Fail(req, type, JsErrors.ConsumerWqConsumerNotDeliverAll);
                if (stream.ConsumersUnlocked.Any())
                {
                    if (Filters(cfg).Length == 0) return Fail(req, type, JsErrors.ConsumerWqMultipleUnfiltered);
                    if (!PartitionUnique(stream, name, cfg)) return Fail(req, type, JsErrors.ConsumerWqConsumerNotUnique);
                }
            }
            if (!string.IsNullOrEmpty(cfg.DurableName) && cfg.DurableName.Length > JsConfigCheck.MaxNameLength)
                return Fail(req, type, JsErrors.ConsumerNameTooLong(JsConfigCheck.MaxNameLength));
            if (string.IsNullOrEmpty(name))
            {
                // A legacy ephemeral's generated name is not written into its config (consumer.go names it after
                // copying the config), so its info shows no config.name.
                do name = RandomName(); while (stream.TryGetConsumer(name, out _));
            }
            else
            {
                cfg.Name = name;
            }
            if (!JsConfigCheck.IsValidAssetName(name)) return Fail(req, type, JsErrors.ConsumerBadDurableName);
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

    private static string[] Filters(ConsumerConfig c) =>
        c.FilterSubjects is { Length: > 0 } fs ? fs : string.IsNullOrEmpty(c.FilterSubject) ? [] : [c.FilterSubject];

    /// <summary>
    /// stream.go partitionUnique: on a work queue no other consumer's filters may overlap this one's (an unfiltered
    /// other consumer overlaps everything; a request without filters has nothing to compare).
    /// </summary>
    private static bool PartitionUnique(JsStream stream, string? name, ConsumerConfig cfg)
    {
        var mine = Filters(cfg);
        if (mine.Length == 0) return true;
        foreach (var other in stream.ConsumersUnlocked)
        {
            if (other.Name == name) continue;
            var theirs = Filters(other.Config);
            if (theirs.Length == 0) return false;
            foreach (var a in mine)
                foreach (var b in theirs)
                    if (JsSubjects.Collide(a, b)) return false;
        }
        return true;
    }

    /// <summary>What a consumer update may not change (nats-server consumer.go checkNewConsumerConfig, its order and texts).</summary>
    private static ApiError? CheckConsumerUpdate(JsAccount js, ConsumerConfig old, ConsumerConfig next)
    {
        if (old.DeliverPolicy != next.DeliverPolicy) return JsErrors.ConsumerCreate("deliver policy can not be updated");
        if ((old.MemStorage ?? false) != (next.MemStorage ?? false)) return JsErrors.ConsumerCreate("storage type can not be updated");
        if (old.OptStartSeq != next.OptStartSeq) return JsErrors.ConsumerCreate("start sequence can not be updated");
        if (old.OptStartTime != next.OptStartTime) return JsErrors.ConsumerCreate("start time can not be updated");
        if (old.AckPolicy != next.AckPolicy) return JsErrors.ConsumerCreate("ack policy can not be updated");
        if (old.ReplayPolicy != next.ReplayPolicy) return JsErrors.ConsumerCreate("replay policy can not be updated");
        if (old.IdleHeartbeat != next.IdleHeartbeat) return JsErrors.ConsumerCreate("heart beats can not be updated");
        if ((old.FlowControl ?? false) != (next.FlowControl ?? false)) return JsErrors.ConsumerCreate("flow control can not be updated");
        if (old.DeliverSubject != next.DeliverSubject)
        {
            if (string.IsNullOrEmpty(old.DeliverSubject)) return JsErrors.ConsumerCreate("can not update pull consumer to push based");
            if (string.IsNullOrEmpty(next.DeliverSubject)) return JsErrors.ConsumerCreate("can not update push consumer to pull based");
            // Only a consumer nobody listens to may move (the old deliver subject still has interest: 10013).
            if (js.HasInterest(System.Text.Encoding.UTF8.GetBytes(old.DeliverSubject))) return JsErrors.ConsumerNameExist;
        }
        if (old.MaxWaiting != next.MaxWaiting) return JsErrors.ConsumerCreate("max waiting can not be updated");
        if (next.Backoff is { Length: > 0 } bo && next.MaxDeliver != -1 && bo.Length > next.MaxDeliver) return JsErrors.ConsumerMaxDeliverBackoff;
        // Everything else may change (filters, deliver_group, headers_only, rate_limit_bps, ack_wait, max_deliver,
        // backoff, max_ack_pending, sample_freq, description, metadata, ...): JsConsumer.Update applies it.
        return null;
    }

    private static string RandomName()
    {
        const string alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
        Span<char> c = stackalloc char[8];
        for (int i = 0; i < c.Length; i++) c[i] = alphabet[RandomNumberGenerator.GetInt32(alphabet.Length)];
        return new string(c);
    }

    /// <summary>
    /// A non-clustered nats-server 2.14 leaves cluster info out of consumer answers and STREAM.LIST entries
    /// (js.clusterInfo of a nil raft group); only STREAM.INFO names the server as leader.
    /// </summary>
    private static ConsumerInfo WithoutCluster(ConsumerInfo info)
    {
        info.Cluster = null;
        return info;
    }

    private static StreamInfo WithoutCluster(StreamInfo info)
    {
        info.Cluster = null;
        return info;
    }

    /// <summary>A ConsumerInfo response, its config's metadata naming this server (nats-server setDynamicConsumerInfoMetadata).</summary>
    private static byte[] ConsumerInfoJson(string type, ConsumerInfo info)
    {
        WithoutCluster(info);
        var resp = ConsumerInfoResponse.From(P + type, info);
        resp.Config = AssetVersioning.WithDynamic(info.Config);
        return JsJson.Serialize(resp, JsJsonContext.Default.ConsumerInfoResponse);
    }

    private bool ConsumerInfo(ApiRequest req, string streamName, string name)
    {
        const string type = "consumer_info_response";
        // A request body was refused before (RefusedBeforeAccountChecks), as jsConsumerInfoRequest does first.
        if (!req.JetStream.TryGet(streamName, out var stream)) return Fail(req, type, JsErrors.StreamNotFound);
        if (!stream.TryGetConsumer(name, out var c)) return Fail(req, type, JsErrors.ConsumerNotFound);
        return Respond(req, ConsumerInfoJson(type, c.Info()));
    }

    private async Task<bool> ConsumerDeleteAsync(ApiRequest req, string streamName, string name)
    {
        const string type = "consumer_delete_response";
        if (!ApiBodies.IsEmptyRequest(req.Body)) return Fail(req, type, JsErrors.NotEmptyRequest);
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
        var r = new OffsetRequest();
        if (ApiBodies.IsJsonObjectOrArray(req.Body) && !JsJson.TryParseStrict(req.Body, JsJsonContext.Default.OffsetRequest, GoSchemas.ConsumersRequest, out r, out var perr)) return Fail(req, type, perr!);
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
        var r = new OffsetRequest();
        if (ApiBodies.IsJsonObjectOrArray(req.Body) && !JsJson.TryParseStrict(req.Body, JsJsonContext.Default.OffsetRequest, GoSchemas.ConsumersRequest, out r, out var perr)) return Fail(req, type, perr!);
        if (!req.JetStream.TryGet(streamName, out var stream)) return Fail(req, type, JsErrors.StreamNotFound);
        const int limit = 256;
        var all = stream.Consumers;
        int offset = Math.Clamp(r!.Offset ?? 0, 0, all.Length);
        var resp = new ConsumerListResponse { Type = P + type, Total = all.Length, Offset = offset, Limit = limit, Consumers = all.Skip(offset).Take(limit).Select(c => WithoutCluster(c.Info())).ToList() };
        return Respond(req, JsJson.Serialize(resp, JsJsonContext.Default.ConsumerListResponse));
    }
}
