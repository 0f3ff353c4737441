using System.Text.Json;
using System.Text.Json.Nodes;
using NATS.Client.Core;
using NATS.NKeys;
using NatsBroker.Tests.Infrastructure;
using NatsBroker.Tests.Protocol;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Accounts;

/// <summary>
/// Service latency tracking (server/accounts.go TrackServiceExportWithSampling, sendTrackingLatency): an export with
/// <c>latency</c> publishes <c>io.nats.server.metric.v1.service_latency</c> into the exporting account for sampled
/// requests through an import. NATS.Net clients on both servers; the JSON shape compared with nats-server.
/// </summary>
public sealed class ServiceLatencyTests(ITestOutputHelper output, ServerPool pool) : ProtocolTestBase(output, pool)
{
    private const string Config = """
        accounts {
          SVC: {
            users: [{user: s, password: s}]
            exports: [
              {service: "echo", latency: { sampling: "100%", subject: "latency.echo" }}
              {service: "traced", latency: { sampling: headers, subject: "latency.traced" }}
              {service: "idle", latency: "latency.idle"}
              {service: "stall", latency: { sampling: "100%", subject: "latency.stall" }}
            ]
          }
          APP: {
            users: [{user: a, password: a}]
            imports: [
              {service: {account: SVC, subject: "echo"}, to: "app.echo"}
              {service: {account: SVC, subject: "traced"}}
              {service: {account: SVC, subject: "idle"}, share: true}
              {service: {account: SVC, subject: "stall"}}
            ]
          }
        }
        """;

    private static NatsConnection Open(ServerProcess s, string user, string name) => new(new NatsOpts
    {
        Url = s.Url,
        Name = name,
        AuthOpts = new NatsAuthOpts { Username = user, Password = user },
    });

    /// <summary>A responder in SVC answering every request (messages with a reply) on <paramref name="subject"/> until cancelled.</summary>
    private static async Task<Task> ServeAsync(NatsConnection svc, string subject, CancellationToken ct)
    {
        var sub = await svc.SubscribeCoreAsync<string>(subject, cancellationToken: ct);
        await svc.PingAsync(ct);
        return Task.Run(async () =>
        {
            await using (sub)
            {
                await foreach (var m in sub.Msgs.ReadAllAsync(ct))
                {
                    if (m.ReplyTo is not null) await m.ReplyAsync("ok:" + m.Data, cancellationToken: ct);
                }
            }
        }, ct);
    }

    private static async Task<JsonElement> NextMetricAsync(INatsSub<byte[]> metrics, CancellationToken ct)
    {
        var m = await metrics.Msgs.ReadAsync(ct);
        using var doc = JsonDocument.Parse(m.Data!);
        return doc.RootElement.Clone();
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task A_sampled_request_through_an_import_publishes_one_metric_in_the_exporting_account(ServerKind kind)
    {
        var s = await SharedAsync(kind, Config);
        using var cts = new CancellationTokenSource(TimeSpan.FromSeconds(20));
        await using var svc = Open(s, "s", "svc-client");
        await using var app = Open(s, "a", "app-client");
        await using var metrics = await svc.SubscribeCoreAsync<byte[]>("latency.echo", cancellationToken: cts.Token);
        var serving = await ServeAsync(svc, "echo", cts.Token);
        await app.ConnectAsync();

        var before = DateTime.UtcNow;
        var reply = await app.RequestAsync<string, string>("app.echo", "hi", cancellationToken: cts.Token);
        Assert.Equal("ok:hi", reply.Data);
        var m = await NextMetricAsync(metrics, cts.Token);
        Output.WriteLine(m.GetRawText());

        Assert.Equal("io.nats.server.metric.v1.service_latency", m.GetProperty("type").GetString());
        Assert.Equal(22, m.GetProperty("id").GetString()!.Length);
        Assert.Equal(200, m.GetProperty("status").GetInt32());
        Assert.False(m.TryGetProperty("description", out _));
        // The import does not share: the requestor is its account and RTT only.
        var requestor = m.GetProperty("requestor");
        Assert.Equal(["acc", "rtt"], requestor.EnumerateObject().Select(p => p.Name).Order(StringComparer.Ordinal).ToArray());
        Assert.Equal("APP", requestor.GetProperty("acc").GetString());
        Assert.True(requestor.GetProperty("rtt").GetInt64() > 0);
        var responder = m.GetProperty("responder");
        Assert.Equal("SVC", responder.GetProperty("acc").GetString());
        Assert.Equal("svc-client", responder.GetProperty("name").GetString());
        Assert.Equal("s", responder.GetProperty("user").GetString());
        Assert.Equal("Client", responder.GetProperty("kind").GetString());
        long service = m.GetProperty("service").GetInt64(), system = m.GetProperty("system").GetInt64(), total = m.GetProperty("total").GetInt64();
        Assert.True(service >= 0 && system >= 0, $"service {service}, system {system}");
        // total = requestor RTT + time in the service (which includes the responder's RTT) + system.
        Assert.True(total >= service + system, $"total {total} < service {service} + system {system}");
        var start = m.GetProperty("start").GetDateTime();
        var timestamp = m.GetProperty("timestamp").GetDateTime();
        Assert.True(start <= timestamp && timestamp >= before.AddSeconds(-1), $"start {start:O}, timestamp {timestamp:O}, before {before:O}");

        // One metric per request: the next one on the subject belongs to the next request (a request without a reply: 400).
        await app.PublishAsync("app.echo", "no reply", cancellationToken: cts.Token);
        var bad = await NextMetricAsync(metrics, cts.Token);
        Assert.Equal(400, bad.GetProperty("status").GetInt32());
        Assert.Equal("Bad Request", bad.GetProperty("description").GetString());
        Assert.False(bad.TryGetProperty("responder", out _));
        Assert.Equal(0, bad.GetProperty("total").GetInt64());
        cts.Cancel();
        await Assert.ThrowsAnyAsync<OperationCanceledException>(() => serving);
    }

    /// <summary>
    /// The requester stops listening on its reply (UNSUB, then a closed connection) while the service still holds the
    /// request: nats-server reports 408 "Request Timeout" for it (client.go unsubscribe, accounts.go
    /// sendReplyInterestLostTrackLatency).
    /// </summary>
    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task A_requester_that_stops_listening_before_the_response_is_reported_as_408(ServerKind kind)
    {
        var s = await SharedAsync(kind, Config);
        using var cts = new CancellationTokenSource(TimeSpan.FromSeconds(20));
        await using var svc = Open(s, "s", "svc-client");
        await using var metrics = await svc.SubscribeCoreAsync<byte[]>("latency.stall", cancellationToken: cts.Token);
        // The service takes requests and never answers.
        await using var requests = await svc.SubscribeCoreAsync<string>("stall", cancellationToken: cts.Token);
        await svc.PingAsync(cts.Token);

        // 1. UNSUB of the reply subscription.
        await using (var app = Open(s, "a", "app-client"))
        {
            var reply = await app.SubscribeCoreAsync<string>("stall.reply.1", cancellationToken: cts.Token);
            await app.PublishAsync("stall", "one", replyTo: "stall.reply.1", cancellationToken: cts.Token);
            Assert.Equal("one", (await requests.Msgs.ReadAsync(cts.Token)).Data);
            await reply.DisposeAsync();
            await app.PingAsync(cts.Token);
            var m = await NextMetricAsync(metrics, cts.Token);
            Output.WriteLine(m.GetRawText());
            Assert.Equal(408, m.GetProperty("status").GetInt32());
            Assert.Equal("Request Timeout", m.GetProperty("description").GetString());
            Assert.Equal("APP", m.GetProperty("requestor").GetProperty("acc").GetString());
            Assert.False(m.TryGetProperty("responder", out _));
        }

        // 2. The requester's connection closes with the request outstanding.
        var app2 = Open(s, "a", "app-client-2");
        await using (await app2.SubscribeCoreAsync<string>("stall.reply.2", cancellationToken: cts.Token))
        {
            await app2.PublishAsync("stall", "two", replyTo: "stall.reply.2", cancellationToken: cts.Token);
            Assert.Equal("two", (await requests.Msgs.ReadAsync(cts.Token)).Data);
            await app2.DisposeAsync();
        }
        var closed = await NextMetricAsync(metrics, cts.Token);
        Assert.Equal(408, closed.GetProperty("status").GetInt32());

        // 3. While another subscription still wants the reply, nothing is reported: the response arrives as usual.
        await using var app3 = Open(s, "a", "app-client-3");
        await using var keeper = await app3.SubscribeCoreAsync<string>("stall.reply.*", cancellationToken: cts.Token);
        var leaving = await app3.SubscribeCoreAsync<string>("stall.reply.3", cancellationToken: cts.Token);
        await app3.PublishAsync("stall", "three", replyTo: "stall.reply.3", cancellationToken: cts.Token);
        var request3 = await requests.Msgs.ReadAsync(cts.Token);
        await leaving.DisposeAsync();
        await app3.PingAsync(cts.Token);
        await request3.ReplyAsync("late", cancellationToken: cts.Token);
        Assert.Equal("late", (await keeper.Msgs.ReadAsync(cts.Token)).Data);
        var answered = await NextMetricAsync(metrics, cts.Token);
        Assert.Equal(200, answered.GetProperty("status").GetInt32());
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Headers_sampling_measures_only_requests_with_a_sampled_trace_header(ServerKind kind)
    {
        var s = await SharedAsync(kind, Config);
        using var cts = new CancellationTokenSource(TimeSpan.FromSeconds(20));
        await using var svc = Open(s, "s", "svc-client");
        await using var app = Open(s, "a", "app-client");
        await using var metrics = await svc.SubscribeCoreAsync<byte[]>("latency.traced", cancellationToken: cts.Token);
        var serving = await ServeAsync(svc, "traced", cts.Token);
        await app.ConnectAsync();

        async Task Request(NatsHeaders? headers)
        {
            var r = await app.RequestAsync<string, string>("traced", "x", headers: headers, cancellationToken: cts.Token);
            Assert.Equal("ok:x", r.Data);
        }

        // Not sampled: no headers, unrelated headers, and each format's "not sampled" form.
        await Request(null);
        await Request(new NatsHeaders { ["foo"] = "bar" });
        await Request(new NatsHeaders { ["traceparent"] = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00" });
        await Request(new NatsHeaders { ["uber-trace-id"] = "479fefe9525eddb:5adb976bfc1f95c1:479fefe9525eddb:0" });
        await Request(new NatsHeaders { ["X-B3-Sampled"] = "0", ["X-B3-TraceId"] = "80f198ee56343ba864fe8b2a57d3eff7" });
        await Request(new NatsHeaders { ["b3"] = "80f198ee56343ba864fe8b2a57d3eff7-e457b5a2e4d86bd1-0" });

        // Sampled: the metric carries the headers that triggered it, keys in canonical MIME form, and nothing else.
        var cases = new (NatsHeaders Headers, string Expected)[]
        {
            (new NatsHeaders { ["traceparent"] = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", ["tracestate"] = "a=b", ["foo"] = "bar" },
                """{"Traceparent":["00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"],"Tracestate":["a=b"]}"""),
            (new NatsHeaders { ["uber-trace-id"] = "479fefe9525eddb:5adb976bfc1f95c1:479fefe9525eddb:1", ["uberctx-user-id"] = "7" },
                """{"Uber-Trace-Id":["479fefe9525eddb:5adb976bfc1f95c1:479fefe9525eddb:1"],"Uberctx-User-Id":["7"]}"""),
            (new NatsHeaders { ["X-B3-TraceId"] = "80f198ee56343ba864fe8b2a57d3eff7", ["X-B3-SpanId"] = "e457b5a2e4d86bd1" },
                """{"X-B3-Spanid":["e457b5a2e4d86bd1"],"X-B3-Traceid":["80f198ee56343ba864fe8b2a57d3eff7"]}"""),
            (new NatsHeaders { ["b3"] = "80f198ee56343ba864fe8b2a57d3eff7-e457b5a2e4d86bd1-1" },
                """{"B3":["80f198ee56343ba864fe8b2a57d3eff7-e457b5a2e4d86bd1-1"]}"""),
        };
        foreach (var (headers, expected) in cases)
        {
            await Request(headers);
            var m = await NextMetricAsync(metrics, cts.Token);
            Output.WriteLine(m.GetRawText());
            Assert.Equal(200, m.GetProperty("status").GetInt32());
            Assert.Equal(expected, m.GetProperty("header").GetRawText());
        }
        cts.Cancel();
        await Assert.ThrowsAnyAsync<OperationCanceledException>(() => serving);
    }

    /// <summary>
    /// The metric's field set and JSON types against nats-server 2.9.10 (not the times): a served request, one
    /// without a reply (400), one nobody serves (503) with a shared requestor, and a header-triggered one.
    /// </summary>
    [SkippableFact]
    public async Task The_metric_has_nats_server_fields_and_types()
    {
        var ours = await Collect(ServerKind.Ours);
        var go = await Collect(ServerKind.Go);
        Assert.Equal(go.Count, ours.Count);
        for (int i = 0; i < go.Count; i++)
        {
            Output.WriteLine($"go:   {go[i].GetRawText()}");
            Output.WriteLine($"ours: {ours[i].GetRawText()}");
            Assert.Equal(Shape(go[i]), Shape(ours[i]));
        }
    }

    private async Task<List<JsonElement>> Collect(ServerKind kind)
    {
        var s = await SharedAsync(kind, Config);
        using var cts = new CancellationTokenSource(TimeSpan.FromSeconds(20));
        await using var svc = Open(s, "s", "svc-client");
        await using var app = Open(s, "a", "app-client");
        await using var echo = await svc.SubscribeCoreAsync<byte[]>("latency.echo", cancellationToken: cts.Token);
        await using var idle = await svc.SubscribeCoreAsync<byte[]>("latency.idle", cancellationToken: cts.Token);
        await using var traced = await svc.SubscribeCoreAsync<byte[]>("latency.traced", cancellationToken: cts.Token);
        var serving = await ServeAsync(svc, "echo", cts.Token);
        var servingTraced = await ServeAsync(svc, "traced", cts.Token);
        await app.ConnectAsync();
        List<JsonElement> got = [];

        await app.RequestAsync<string, string>("app.echo", "hi", cancellationToken: cts.Token);
        got.Add(await NextMetricAsync(echo, cts.Token));
        await app.PublishAsync("app.echo", "no reply", cancellationToken: cts.Token);
        got.Add(await NextMetricAsync(echo, cts.Token));
        // Nobody serves "idle": nats-server 2.9.10 sends no 503 status to the requester, so only the metric is awaited.
        await app.PublishAsync("idle", "x", replyTo: app.NewInbox(), cancellationToken: cts.Token);
        got.Add(await NextMetricAsync(idle, cts.Token));
        await app.RequestAsync<string, string>("traced", "x", headers: new NatsHeaders { ["traceparent"] = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01" },
            cancellationToken: cts.Token);
        got.Add(await NextMetricAsync(traced, cts.Token));
        cts.Cancel();
        await Assert.ThrowsAnyAsync<OperationCanceledException>(() => serving);
        await Assert.ThrowsAnyAsync<OperationCanceledException>(() => servingTraced);
        return got;
    }

    private static readonly KeyPair Op = KeyPair.CreatePair(PrefixByte.Operator);
    private static readonly KeyPair Sys = KeyPair.CreatePair(PrefixByte.Account);
    private static readonly KeyPair SvcAccount = KeyPair.CreatePair(PrefixByte.Account);
    private static readonly KeyPair AppAccount = KeyPair.CreatePair(PrefixByte.Account);
    private static readonly KeyPair SvcUser = KeyPair.CreatePair(PrefixByte.User);
    private static readonly KeyPair AppUser = KeyPair.CreatePair(PrefixByte.User);

    private static readonly string OperatorConfig = BuildOperatorConfig();

    private static string BuildOperatorConfig()
    {
        string svc = JwtFactory.Account(Op, SvcAccount, new JsonObject
        {
            ["exports"] = new JsonArray(new JsonObject
            {
                ["name"] = "echo", ["subject"] = "echo", ["type"] = "service",
                ["service_latency"] = new JsonObject { ["sampling"] = 100, ["results"] = "latency.echo" },
            }),
        }, name: "SVC");
        string app = JwtFactory.Account(Op, AppAccount, new JsonObject
        {
            ["imports"] = new JsonArray(new JsonObject
            {
                ["name"] = "echo", ["subject"] = "echo", ["account"] = SvcAccount.GetPublicKey(), ["type"] = "service", ["local_subject"] = "app.echo",
            }),
        }, name: "APP");
        return $$"""
            operator: {{JwtFactory.Operator(Op, Sys.GetPublicKey())}}
            system_account: {{Sys.GetPublicKey()}}
            resolver: MEMORY
            resolver_preload: {
              {{Sys.GetPublicKey()}}: {{JwtFactory.Account(Op, Sys, name: "SYS")}}
              {{SvcAccount.GetPublicKey()}}: {{svc}}
              {{AppAccount.GetPublicKey()}}: {{app}}
            }
            """;
    }

    private static NatsConnection OpenJwt(ServerProcess s, KeyPair account, KeyPair user) => new(new NatsOpts
    {
        Url = s.Url,
        AuthOpts = new NatsAuthOpts { Jwt = JwtFactory.User(account, user), Seed = user.GetSeed() },
    });

    /// <summary>Operator mode: <c>service_latency</c> on a JWT service export; accounts are named by public key.</summary>
    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task A_jwt_service_export_with_service_latency_publishes_metrics(ServerKind kind)
    {
        var s = await SharedAsync(kind, OperatorConfig);
        using var cts = new CancellationTokenSource(TimeSpan.FromSeconds(20));
        await using var svc = OpenJwt(s, SvcAccount, SvcUser);
        await using var app = OpenJwt(s, AppAccount, AppUser);
        await using var metrics = await svc.SubscribeCoreAsync<byte[]>("latency.echo", cancellationToken: cts.Token);
        var serving = await ServeAsync(svc, "echo", cts.Token);
        await app.ConnectAsync();
        var reply = await app.RequestAsync<string, string>("app.echo", "hi", cancellationToken: cts.Token);
        Assert.Equal("ok:hi", reply.Data);
        var m = await NextMetricAsync(metrics, cts.Token);
        Output.WriteLine(m.GetRawText());
        Assert.Equal(200, m.GetProperty("status").GetInt32());
        Assert.Equal(AppAccount.GetPublicKey(), m.GetProperty("requestor").GetProperty("acc").GetString());
        var responder = m.GetProperty("responder");
        Assert.Equal(SvcAccount.GetPublicKey(), responder.GetProperty("acc").GetString());
        Assert.Equal(SvcUser.GetPublicKey(), responder.GetProperty("user").GetString());
        Assert.True(responder.TryGetProperty("jwt", out _));
        Assert.Equal(SvcAccount.GetPublicKey(), responder.GetProperty("issuer_key").GetString());
        Assert.Equal("user", responder.GetProperty("name_tag").GetString());
        cts.Cancel();
        await Assert.ThrowsAnyAsync<OperationCanceledException>(() => serving);
    }

    /// <summary>Every property path with its JSON kind, sorted: what two metrics must share regardless of values.</summary>
    private static string[] Shape(JsonElement e)
    {
        List<string> paths = [];
        void Walk(JsonElement v, string path)
        {
            paths.Add($"{path}:{v.ValueKind}");
            if (v.ValueKind == JsonValueKind.Object)
                foreach (var p in v.EnumerateObject()) Walk(p.Value, path + "." + p.Name);
            else if (v.ValueKind == JsonValueKind.Array)
                foreach (var item in v.EnumerateArray()) Walk(item, path + "[]");
        }
        Walk(e, "$");
        return [.. paths.Distinct().Order(StringComparer.Ordinal)];
    }
}
