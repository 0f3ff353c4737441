using System.Text;
using System.Text.Json;
using NATS.Client.Core;
using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;

namespace NatsBroker.Tests.JetStream;

/// <summary>
/// The same JetStream API requests against our broker and Go nats-server 2.9.10 (-js): error objects must be
/// identical and every JSON field nats-server answers must be in ours (2.10 fields 2.9 lacks may be extra).
/// </summary>
public sealed class JetStreamDifferentialTests(ITestOutputHelper output)
{
    private sealed record Exchange(string Name, string Subject, string Body);

    private static readonly Exchange[] Script =
    [
        new("account info", "$JS.API.INFO", ""),
        new("create", "$JS.API.STREAM.CREATE.S", """{"name":"S","subjects":["s.>"],"storage":"file"}"""),
        new("create again (same config)", "$JS.API.STREAM.CREATE.S", """{"name":"S","subjects":["s.>"],"storage":"file"}"""),
        new("create with other config", "$JS.API.STREAM.CREATE.S", """{"name":"S","subjects":["s.>","t"],"storage":"file"}"""),
        new("overlap", "$JS.API.STREAM.CREATE.S2", """{"name":"S2","subjects":["s.a"]}"""),
        new("name mismatch", "$JS.API.STREAM.CREATE.X", """{"name":"Y","subjects":["y"]}"""),
        new("info of a missing stream", "$JS.API.STREAM.INFO.NOPE", ""),
        new("info", "$JS.API.STREAM.INFO.S", ""),
        new("names", "$JS.API.STREAM.NAMES", ""),
        new("missing message", "$JS.API.STREAM.MSG.GET.S", """{"seq":99}"""),
        new("durable consumer", "$JS.API.CONSUMER.DURABLE.CREATE.S.D", """{"stream_name":"S","config":{"durable_name":"D","ack_policy":"explicit"}}"""),
        new("consumer info", "$JS.API.CONSUMER.INFO.S.D", ""),
        new("missing consumer", "$JS.API.CONSUMER.INFO.S.NOPE", ""),
        new("consumer without config", "$JS.API.CONSUMER.DURABLE.CREATE.S.E", """{"stream_name":"S"}"""),
        new("durable name mismatch", "$JS.API.CONSUMER.DURABLE.CREATE.S.E", """{"stream_name":"S","config":{"durable_name":"F"}}"""),
        new("bad deliver policy combination", "$JS.API.CONSUMER.DURABLE.CREATE.S.G", """{"stream_name":"S","config":{"durable_name":"G","deliver_policy":"by_start_sequence"}}"""),
        new("consumer names", "$JS.API.CONSUMER.NAMES.S", ""),
        new("delete consumer", "$JS.API.CONSUMER.DELETE.S.D", ""),
        new("purge", "$JS.API.STREAM.PURGE.S", ""),
        new("delete", "$JS.API.STREAM.DELETE.S", ""),
        new("delete missing", "$JS.API.STREAM.DELETE.S", ""),
        new("name with a path separator", "$JS.API.STREAM.CREATE.a/b", """{"name":"a/b"}"""),
        new("malformed JSON (codes only)", "$JS.API.STREAM.CREATE.BAD", """{"name":"""),
        new("consumer on a missing stream", "$JS.API.CONSUMER.DURABLE.CREATE.NOPE.D", """{"stream_name":"NOPE","config":{"durable_name":"D"}}"""),
        new("msg get on a missing stream", "$JS.API.STREAM.MSG.GET.NOPE", """{"seq":1}"""),
        new("work queue", "$JS.API.STREAM.CREATE.WQ", """{"name":"WQ","subjects":["wq"],"retention":"workqueue"}"""),
        // 2.9 words 10084 as "consumer in pull mode requires ack policy"; 2.10+ (errors.json) as we do.
        new("work queue consumer without explicit ack (codes only)", "$JS.API.CONSUMER.DURABLE.CREATE.WQ.W", """{"stream_name":"WQ","config":{"durable_name":"W","ack_policy":"none"}}"""),
        new("push consumer with wildcard deliver subject", "$JS.API.CONSUMER.DURABLE.CREATE.WQ.P", """{"stream_name":"WQ","config":{"durable_name":"P","ack_policy":"explicit","deliver_subject":"d.*"}}"""),
        new("origin with republish", "$JS.API.STREAM.CREATE.O", """{"name":"O","subjects":["o.>"],"storage":"memory","allow_direct":true,"republish":{"src":"o.>","dest":"rp.>"}}"""),
        new("mirror", "$JS.API.STREAM.CREATE.M", """{"name":"M","storage":"memory","mirror":{"name":"O"}}"""),
        new("filtered source", "$JS.API.STREAM.CREATE.SRC", """{"name":"SRC","subjects":["own"],"storage":"memory","sources":[{"name":"O","filter_subject":"o.a"}]}"""),
        new("mirror with subjects", "$JS.API.STREAM.CREATE.M2", """{"name":"M2","subjects":["x"],"mirror":{"name":"O"}}"""),
        new("mirror with sources", "$JS.API.STREAM.CREATE.M3", """{"name":"M3","mirror":{"name":"O"},"sources":[{"name":"O"}]}"""),
        new("mirror update", "$JS.API.STREAM.UPDATE.M", """{"name":"M","storage":"memory","mirror":{"name":"SRC"}}"""),
        new("republish cycle", "$JS.API.STREAM.CREATE.R2", """{"name":"R2","subjects":["r2.>"],"republish":{"src":">","dest":"r2.x"}}"""),
        new("republish headers only", "$JS.API.STREAM.CREATE.R3", """{"name":"R3","subjects":["r3.>"],"storage":"memory","republish":{"src":"r3.>","dest":"r3h.>","headers_only":true}}"""),
        new("small heartbeat", "$JS.API.CONSUMER.DURABLE.CREATE.WQ.H", """{"stream_name":"WQ","config":{"durable_name":"H","ack_policy":"explicit","deliver_subject":"d.h","idle_heartbeat":1000}}"""),
    ];

    [SkippableFact]
    public async Task Api_answers_match_nats_server()
    {
        Prerequisites.RequireGoServer();
        var ours = await RunAsync(ServerKind.Ours);
        var go = await RunAsync(ServerKind.Go);
        var problems = new List<string>();
        for (int i = 0; i < Script.Length; i++)
        {
            var name = Script[i].Name;
            using var a = JsonDocument.Parse(ours[i]);
            using var b = JsonDocument.Parse(go[i]);
            output.WriteLine($"{name}\n  ours: {ours[i]}\n  go:   {go[i]}");
            bool goErr = b.RootElement.TryGetProperty("error", out var ge);
            bool ourErr = a.RootElement.TryGetProperty("error", out var oe);
            if (goErr != ourErr)
            {
                problems.Add($"{name}: error on one side only");
                continue;
            }
            if (goErr)
            {
                foreach (var f in name.EndsWith("(codes only)", StringComparison.Ordinal) ? ["code", "err_code"] : new[] { "code", "err_code", "description" })
                {
                    string g = ge.TryGetProperty(f, out var gv) ? gv.ToString() : "<none>";
                    string o = oe.TryGetProperty(f, out var ov) ? ov.ToString() : "<none>";
                    if (g != o) problems.Add($"{name}: error.{f} ours {o}, go {g}");
                }
                continue;
            }
            CompareKeys(name, "", a.RootElement, b.RootElement, problems);
        }
        Assert.True(problems.Count == 0, string.Join("\n", problems));
    }

    [SkippableFact]
    public async Task Pub_acks_and_pull_status_headers_match_nats_server()
    {
        Prerequisites.RequireGoServer();
        var results = new Dictionary<ServerKind, List<string>>();
        foreach (var kind in new[] { ServerKind.Ours, ServerKind.Go })
        {
            await using var server = await StartAsync(kind);
            await using var nats = new NatsConnection(new NatsOpts { Url = server.Url });
            await nats.ConnectAsync();
            var lines = new List<string>();
            await Request(nats, "$JS.API.STREAM.CREATE.P", """{"name":"P","subjects":["p"],"storage":"memory"}""");
            lines.Add(await Request(nats, "p", "one"));
            var hdr = new NatsHeaders { ["Nats-Msg-Id"] = "x" };
            lines.Add(Encoding.UTF8.GetString((await nats.RequestAsync<byte[], byte[]>("p", "two"u8.ToArray(), headers: hdr)).Data ?? []));
            lines.Add(Encoding.UTF8.GetString((await nats.RequestAsync<byte[], byte[]>("p", "two"u8.ToArray(), headers: hdr)).Data ?? []));
            var wrong = new NatsHeaders { ["Nats-Expected-Last-Sequence"] = "9" };
            lines.Add(Encoding.UTF8.GetString((await nats.RequestAsync<byte[], byte[]>("p", "x"u8.ToArray(), headers: wrong)).Data ?? []));
            await Request(nats, "$JS.API.CONSUMER.DURABLE.CREATE.P.C", """{"stream_name":"P","config":{"durable_name":"C","ack_policy":"explicit","deliver_policy":"new"}}""");
            var empty = await nats.RequestAsync<byte[], byte[]>("$JS.API.CONSUMER.MSG.NEXT.P.C", """{"batch":1,"no_wait":true}"""u8.ToArray());
            lines.Add($"status {(int?)empty.Headers?.Code} {empty.Headers?.MessageText}");
            results[kind] = lines;
            foreach (var l in lines) output.WriteLine($"{kind}: {l}");
        }
        Assert.Equal(results[ServerKind.Go], results[ServerKind.Ours]);
    }

    private static void CompareKeys(string name, string path, JsonElement ours, JsonElement go, List<string> problems)
    {
        if (go.ValueKind != JsonValueKind.Object || ours.ValueKind != JsonValueKind.Object) return;
        foreach (var p in go.EnumerateObject())
        {
            if (!ours.TryGetProperty(p.Name, out var o))
            {
                problems.Add($"{name}: field {path}{p.Name} missing in ours");
                continue;
            }
            // Values that are configuration defaults must agree too (not times, ids, counters of API calls).
            if (path.StartsWith("config.", StringComparison.Ordinal) || path == "config." || (path.Length == 0 && p.Name == "type"))
            {
                if (p.Value.ValueKind != JsonValueKind.Object && p.Value.ValueKind != JsonValueKind.Array && p.Value.ToString() != o.ToString())
                    problems.Add($"{name}: {path}{p.Name} ours {o}, go {p.Value}");
            }
            CompareKeys(name, path + p.Name + ".", o, p.Value, problems);
        }
    }

    private static Task<ServerProcess> StartAsync(ServerKind kind)
    {
        var dir = Path.Combine(Path.GetTempPath(), "natsbroker-js-tests", Guid.NewGuid().ToString("N"));
        return ServerProcess.StartAsync(kind, new ServerStartOptions { ExtraArgs = ["-js", "-sd", dir] });
    }

    private async Task<List<string>> RunAsync(ServerKind kind)
    {
        await using var server = await StartAsync(kind);
        await using var nats = new NatsConnection(new NatsOpts { Url = server.Url });
        await nats.ConnectAsync();
        var answers = new List<string>();
        foreach (var e in Script) answers.Add(await Request(nats, e.Subject, e.Body));
        _ = output;
        return answers;
    }

    private static async Task<string> Request(NatsConnection nats, string subject, string body)
    {
        var reply = await nats.RequestAsync<byte[], byte[]>(subject, Encoding.UTF8.GetBytes(body),
            replyOpts: new NatsSubOpts { Timeout = TimeSpan.FromSeconds(5) });
        return Encoding.UTF8.GetString(reply.Data ?? []);
    }
}
