using System.Text;
using System.Text.Json;
using System.Threading.Channels;
using NatsBroker.Connections;
using NatsBroker.Monitoring;
using NatsBroker.Routing;
using NatsBroker.Server;
using NatsBroker.Subscriptions;

namespace NatsBroker.Accounts;

/// <summary>
/// The system account's request services and events (server/events.go), as internal subscriptions in the system
/// account's router:
/// <list type="bullet">
/// <item><c>$SYS.REQ.SERVER.PING</c> (statsz), <c>$SYS.REQ.SERVER.PING.&lt;KIND&gt;</c> and
/// <c>$SYS.REQ.SERVER.&lt;id&gt;.&lt;KIND&gt;</c> for VARZ, CONNZ, SUBSZ, JSZ, HEALTHZ, ACCOUNTZ, ROUTEZ, GATEWAYZ, LEAFZ,
/// STATSZ: the monitoring JSON (the same builders as HTTP) in <c>{"server":..,"data":..}</c>; a JSON request body
/// carries the endpoint's options (<c>{"subscriptions":true}</c>, <c>{"acc":"A"}</c>...).</item>
/// <item><c>$SYS.REQ.ACCOUNT.&lt;acc&gt;.&lt;KIND&gt;</c> for CONNZ, SUBSZ, JSZ, INFO, limited to that account.</item>
/// <item>Operator mode: <c>$SYS.REQ.CLAIMS.UPDATE</c> / <c>$SYS.REQ.ACCOUNT.&lt;acc&gt;.CLAIMS.UPDATE</c> store an
/// account JWT; <c>$SYS.REQ.ACCOUNT.&lt;acc&gt;.CLAIMS.LOOKUP</c> answers with the stored JWT.</item>
/// <item>Events: <c>$SYS.ACCOUNT.&lt;acc&gt;.CONNECT</c> / <c>.DISCONNECT</c>, <c>$SYS.SERVER.&lt;id&gt;.CLIENT.AUTH.ERR</c>,
/// <c>$SYS.SERVER.&lt;id&gt;.STATSZ</c> (every 10 s while someone listens), <c>$SYS.SERVER.&lt;id&gt;.SHUTDOWN</c>.</item>
/// </list>
/// Internal callbacks run on the publisher's thread, so they only copy the request into a bounded queue; one worker
/// builds the JSON and publishes. When the queue is full the oldest work is dropped (nats-server's send queue
/// likewise never blocks a client on an advisory); <see cref="Dropped"/> counts it.
/// </summary>
public sealed partial class SystemServices : IAsyncDisposable
{
    private static readonly TimeSpan StatszInterval = TimeSpan.FromSeconds(10);
    private readonly NatsServer _server;
    private readonly Account _system;
    private readonly SystemEventWriter _json;
    private readonly MonitorEndpoints _monitor;
    private readonly Channel<Action> _work = Channel.CreateBounded<Action>(new BoundedChannelOptions(4096)
    {
        FullMode = BoundedChannelFullMode.DropOldest,
        SingleReader = true,
    });
    private readonly List<Subscription> _subs = [];
    private readonly Task _worker;
    private readonly ITimer _statsz;
    private readonly byte[] _statszSubject;
    private long _dropped;

    public SystemServices(NatsServer server, Account system)
    {
        _server = server;
        _system = system;
        _json = new SystemEventWriter(server);
        // Its own instance: $SYS requests do not count in /varz http_req_stats.
        _monitor = new MonitorEndpoints(server);
        _statszSubject = Encoding.ASCII.GetBytes($"$SYS.SERVER.{server.ServerId}.STATSZ");
        var router = system.Router;
        _subs.Add(router.SubscribeInternal("$SYS.REQ.SERVER.PING", null, (Subscription _, in InternalMessage m) => Queue(m, "STATSZ", null)));
        _subs.Add(router.SubscribeInternal("$SYS.REQ.SERVER.PING.*", null, (Subscription _, in InternalMessage m) => QueueKind(m, 4, null)));
        _subs.Add(router.SubscribeInternal($"$SYS.REQ.SERVER.{server.ServerId}.*", null, (Subscription _, in InternalMessage m) => QueueKind(m, 4, null)));
        _subs.Add(router.SubscribeInternal("$SYS.REQ.ACCOUNT.*.*", null, (Subscription _, in InternalMessage m) => QueueAccount(m)));
        _subs.Add(router.SubscribeInternal("$SYS.REQ.ACCOUNT.*.CLAIMS.*", null, (Subscription _, in InternalMessage m) => QueueClaims(m)));
        _subs.Add(router.SubscribeInternal("$SYS.REQ.CLAIMS.UPDATE", null, (Subscription _, in InternalMessage m) => QueueClaims(m)));
        SubscribeUserInfoInEveryAccount();
        _worker = Task.Run(RunAsync);
        _statsz = TimeProvider.System.CreateTimer(static s => ((SystemServices)s!).Enqueue(((SystemServices)s!).PublishStatszIfWanted), this, StatszInterval, StatszInterval);
    }

    /// <summary>Work dropped because the queue was full.</summary>
    public long Dropped => Interlocked.Read(ref _dropped);

    private void Enqueue(Action work)
    {
        if (!_work.Writer.TryWrite(work)) Interlocked.Increment(ref _dropped);
    }

    private async Task RunAsync()
    {
        await foreach (var work in _work.Reader.ReadAllAsync().ConfigureAwait(false))
        {
            try
            {
                work();
            }
            catch (Exception ex) when (ex is JsonException or InvalidOperationException or ArgumentException or IOException or MonitorQueryException)
            {
                _server.Log.InternalCallbackFault(ex);
            }
        }
    }

    // ---- requests ----

    /// <summary>Token <paramref name="index"/> of the subject names the kind (VARZ...).</summary>
    private void QueueKind(in InternalMessage m, int index, string? account)
    {
        var tokens = Encoding.ASCII.GetString(m.Subject).Split('.');
        if (tokens.Length <= index) return;
        Queue(m, tokens[index], account);
    }

    private void QueueAccount(in InternalMessage m)
    {
        var tokens = Encoding.UTF8.GetString(m.Subject).Split('.');
        // $SYS.REQ.ACCOUNT.PING.* are the per-account imports of nats-server's account-scoped requests: not served here.
        if (tokens.Length != 5 || tokens[3] == "PING") return;
        Queue(m, "ACCOUNT." + tokens[4], tokens[3]);
    }

    private void Queue(in InternalMessage m, string kind, string? account)
    {
        if (m.Reply.IsEmpty) return;
        var reply = m.Reply.ToArray();
        var body = System.Buffers.BuffersExtensions.ToArray(m.Body);
        Enqueue(() => Answer(kind, account, reply, body));
    }

    private void Answer(string kind, string? account, byte[] reply, byte[] body)
    {
        var query = Options(body);
        if (account is not null) query["acc"] = account;
        string? path = kind switch
        {
            "VARZ" => "/varz",
            "CONNZ" or "ACCOUNT.CONNZ" => "/connz",
            "SUBSZ" => "/subsz",
            "ACCOUNT.SUBSZ" => "/subsz",
            "JSZ" or "ACCOUNT.JSZ" => "/jsz",
            "HEALTHZ" => "/healthz",
            "ACCOUNTZ" or "ACCOUNT.INFO" => "/accountz",
            "ROUTEZ" => "/routez",
            "GATEWAYZ" => "/gatewayz",
            "LEAFZ" or "ACCOUNT.LEAFZ" => "/leafz",
            _ => null,
        };
        byte[] answer;
        if (kind == "STATSZ") answer = _json.Statsz();
        else if (path is null) return; // unknown kinds go unanswered, as in nats-server
        else
        {
            if (kind == "ACCOUNT.SUBSZ") query.TryAdd("subs", "1");
            var r = _monitor.Handle(path, k => query.TryGetValue(k, out var v) ? v : null);
            if (r.Status != 200)
            {
                answer = ErrorResponse(r.Status, r.BodyText.Trim());
            }
            else
            {
                var data = r.Body;
                if (kind == "ACCOUNT.INFO")
                {
                    // /accountz?acc= wraps the detail; the $SYS request answers with the detail itself.
                    using var doc = JsonDocument.Parse(data);
                    data = doc.RootElement.TryGetProperty("account_detail", out var detail) ? Encoding.UTF8.GetBytes(detail.GetRawText()) : data;
                }
                answer = _json.Response(data);
            }
        }
        _system.Router.PublishInternal(reply, default, default, answer);
    }

    /// <summary>nats-server's error answer: <c>{"error":{"code":..,"description":..}}</c>.</summary>
    private static byte[] ErrorResponse(int code, string description)
    {
        var buffer = new System.Buffers.ArrayBufferWriter<byte>();
        using (var w = new Utf8JsonWriter(buffer))
        {
            w.WriteStartObject();
            w.WriteStartObject("error");
            w.WriteNumber("code", code);
            w.WriteString("description", description);
            w.WriteEndObject();
            w.WriteEndObject();
        }
        return buffer.WrittenSpan.ToArray();
    }

    /// <summary>A request body's options as monitoring query parameters (ConnzEventOptions etc. → ?subs=1, ?acc=...).</summary>
    private static Dictionary<string, string> Options(byte[] body)
    {
        var query = new Dictionary<string, string>(StringComparer.Ordinal);
        if (body.Length == 0) return query;
        try
        {
            using var doc = JsonDocument.Parse(body);
            if (doc.RootElement.ValueKind != JsonValueKind.Object) return query;
            foreach (var p in doc.RootElement.EnumerateObject())
            {
                string value = p.Value.ValueKind switch
                {
                    JsonValueKind.String => p.Value.GetString()!,
                    JsonValueKind.True => "1",
                    JsonValueKind.False => "0",
                    _ => p.Value.GetRawText(),
                };
                switch (p.Name)
                {
                    case "subscriptions": if (value == "1") query["subs"] = "1"; break;
                    case "subscriptions_detail": if (value == "1") query["subs"] = "detail"; break;
                    case "account": query["acc"] = value; break;
                    default: query[p.Name] = value; break;
                }
            }
        }
        catch (JsonException)
        {
            // nats-server answers a bad options body with an error; an empty option set is close enough here.
        }
        return query;
    }

    // ---- operator mode: claims ----

    private void QueueClaims(in InternalMessage m)
    {
        string subject = Encoding.UTF8.GetString(m.Subject);
        var reply = m.Reply.ToArray();
        string body = Encoding.UTF8.GetString(System.Buffers.BuffersExtensions.ToArray(m.Body)).Trim();
        Enqueue(() => Claims(subject, reply, body));
    }

    private void Claims(string subject, byte[] reply, string body)
    {
        var resolver = _server.Resolver;
        if (resolver is null) return;
        var tokens = subject.Split('.');
        if (subject.EndsWith(".CLAIMS.LOOKUP", StringComparison.Ordinal) && tokens.Length == 6)
        {
            // Unknown accounts get no answer (the requester times out), as nats-server's dir resolver does.
            if (resolver.Find(tokens[3]) is { } claims && reply.Length > 0)
                _system.Router.PublishInternal(reply, default, default, Encoding.UTF8.GetBytes(claims.Token));
            return;
        }
        if (!subject.EndsWith(".CLAIMS.UPDATE", StringComparison.Ordinal)) return;
        string? expected = tokens.Length == 6 ? tokens[3] : null;
        var validated = resolver.Validate(body, out string error);
        byte[] answer;
        if (validated is null)
            answer = ClaimsAnswer(expected ?? "", 500, error, isError: true);
        else if (expected is not null && validated.Subject != expected)
            answer = ClaimsAnswer(expected, 500, "subject does not match account", isError: true);
        else if (resolver.Store(body, out error) is null)
            answer = ClaimsAnswer(validated.Subject, 500, error, isError: true);
        else
            answer = ClaimsAnswer(validated.Subject, 200, "jwt updated", isError: false);
        if (reply.Length > 0) _system.Router.PublishInternal(reply, default, default, answer);
    }

    private byte[] ClaimsAnswer(string account, int code, string message, bool isError) =>
        isError
            ? _json.ClaimsResponse(account.Length == 0 ? "n/a" : account, code, "jwt update resulted in error - " + message, true)
            : _json.ClaimsResponse(account, code, message, false);

    // ---- events ----

    /// <summary>A client finished CONNECT: $SYS.ACCOUNT.&lt;acc&gt;.CONNECT.</summary>
    /// <remarks>
    /// Skipped when nothing in the system account listens (no subscription, no stream import of it): the event would
    /// reach no one, and building it (JSON, a random event id, a hop to the worker) was a large part of a login's cost.
    /// nats-server builds it regardless; the only trace of the difference is that the <c>seq</c> of later system
    /// messages does not count events nobody received.
    /// </remarks>
    public void ClientConnected(ClientConnection c)
    {
        string subject = $"$SYS.ACCOUNT.{c.Account.Name}.CONNECT";
        if (HasListeners(subject)) Enqueue(() => Publish(subject, _json.ClientConnect(c)));
    }

    /// <summary>An authenticated client closed: $SYS.ACCOUNT.&lt;acc&gt;.DISCONNECT with its counters and reason.</summary>
    /// <remarks>Skipped when nothing listens, as <see cref="ClientConnected"/>.</remarks>
    public void ClientDisconnected(ClientConnection c)
    {
        string subject = $"$SYS.ACCOUNT.{c.Account.Name}.DISCONNECT";
        if (HasListeners(subject))
            Enqueue(() => Publish(subject, _json.ClientDisconnect(c, (c.ClosedReason ?? CloseReason.ClientClosed).ToNatsString(), c.Account.Name)));
    }

    /// <summary>Whether a message on <paramref name="subject"/> in the system account would reach any subscriber.</summary>
    private bool HasListeners(string subject)
    {
        int max = Encoding.UTF8.GetMaxByteCount(subject.Length);
        Span<byte> bytes = max <= 512 ? stackalloc byte[max] : new byte[max];
        int n = Encoding.UTF8.GetBytes(subject, bytes);
        return !_system.Router.SubList.Match(bytes[..n]).IsEmpty;
    }

    /// <summary>A CONNECT was refused: $SYS.SERVER.&lt;id&gt;.CLIENT.AUTH.ERR.</summary>
    public void AuthenticationFailed(ClientConnection c) =>
        Enqueue(() => Publish($"$SYS.SERVER.{_server.ServerId}.CLIENT.AUTH.ERR",
            _json.ClientDisconnect(c, CloseReason.AuthenticationViolation.ToNatsString(), Account.GlobalName)));

    private void PublishStatszIfWanted()
    {
        if (_system.Router.SubList.Match(_statszSubject).IsEmpty) return;
        Publish(Encoding.ASCII.GetString(_statszSubject), _json.Statsz());
    }

    private void Publish(string subject, byte[] payload) =>
        _system.Router.PublishInternal(Encoding.UTF8.GetBytes(subject), default, default, payload);

    /// <summary>$SYS.SERVER.&lt;id&gt;.SHUTDOWN (sent synchronously: the server is about to stop), then stops the worker.</summary>
    public async ValueTask DisposeAsync()
    {
        await _statsz.DisposeAsync().ConfigureAwait(false);
        _work.Writer.TryComplete();
        await _worker.ConfigureAwait(false);
        Publish($"$SYS.SERVER.{_server.ServerId}.SHUTDOWN", _json.ServerInfo());
        foreach (var s in _subs) _system.Router.Unsubscribe(s);
        UnsubscribeUserInfo();
    }
}
