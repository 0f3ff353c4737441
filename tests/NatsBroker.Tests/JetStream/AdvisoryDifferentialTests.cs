using System.Collections.Concurrent;
using System.Text;
using System.Text.Json;
using NATS.Client.Core;
using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;

namespace NatsBroker.Tests.JetStream;

/// <summary>
/// $JS.EVENT.ADVISORY.&gt; and $JS.EVENT.METRIC.&gt; against nats-server 2.9.10: the same scenario (stream create /
/// update / delete, consumer create / delete, a sampled ack, a NAK, a TERM, max deliveries, API audits) must give
/// the same advisories on the same subjects in the same order (audits and the others each in their order), and every field nats-server writes must be in ours
/// with the same value (ids, times, round-trip times and the embedded response's volatile fields aside).
/// </summary>
public sealed class AdvisoryDifferentialTests(ITestOutputHelper output)
{
    private static readonly TimeSpan Wait = TimeSpan.FromSeconds(10);

    [SkippableFact]
    public async Task Advisories_match_nats_server()
    {
        Prerequisites.RequireGoServer(output);
        List<(string Subject, string Json)> ours, go;
        await using (var t = await JsTestServer.StartAsync())
            ours = await RunAsync(t.Url);
        var dir = Path.Combine(Path.GetTempPath(), "natsbroker-js-tests", Guid.NewGuid().ToString("N"));
        await using (var g = await ServerProcess.StartAsync(ServerKind.Go, new ServerStartOptions { ExtraArgs = ["-js", "-sd", dir] }))
            go = await RunAsync(g.Url);

        foreach (var (s, j) in go) output.WriteLine($"go   {s} {j}");
        foreach (var (s, j) in ours) output.WriteLine($"ours {s} {j}");
        // nats-server sends stream and consumer advisories through a send queue, API audits inline: the two
        // interleave differently from run to run, so each kind is compared in its own order.
        static bool IsAudit((string Subject, string) e) => e.Subject == "$JS.EVENT.ADVISORY.API";
        go = [.. go.Where(e => !IsAudit(e)), .. go.Where(IsAudit)];
        ours = [.. ours.Where(e => !IsAudit(e)), .. ours.Where(IsAudit)];
        Assert.Equal(go.Select(x => x.Subject), ours.Select(x => x.Subject));
        var problems = new List<string>();
        for (int i = 0; i < go.Count; i++)
        {
            using var a = JsonDocument.Parse(ours[i].Json);
            using var b = JsonDocument.Parse(go[i].Json);
            Compare(go[i].Subject, "", a.RootElement, b.RootElement, problems);
        }
        Assert.True(problems.Count == 0, string.Join("\n", problems));
    }

    private static readonly HashSet<string> Volatile = ["id", "timestamp", "rtt", "server", "ack_time", "start"];

    private static void Compare(string subject, string path, JsonElement ours, JsonElement go, List<string> problems)
    {
        foreach (var p in go.EnumerateObject())
        {
            if (!ours.TryGetProperty(p.Name, out var o))
            {
                problems.Add($"{subject}: field {path}{p.Name} missing in ours");
                continue;
            }
            if (Volatile.Contains(p.Name)) continue;
            if (p.Name == "response")
            {
                // The embedded API response: same type and same error (if any); its own fields are covered by
                // the API differential tests.
                using var ro = JsonDocument.Parse(o.GetString()!);
                using var rg = JsonDocument.Parse(p.Value.GetString()!);
                Assert.Equal(rg.RootElement.GetProperty("type").GetString(), ro.RootElement.GetProperty("type").GetString());
                Assert.Equal(rg.RootElement.TryGetProperty("error", out var ge) ? ge.ToString() : "", ro.RootElement.TryGetProperty("error", out var oe) ? oe.ToString() : "");
                continue;
            }
            if (p.Value.ValueKind == JsonValueKind.Object) Compare(subject, path + p.Name + ".", o, p.Value, problems);
            else if (p.Value.ToString() != o.ToString()) problems.Add($"{subject}: {path}{p.Name} ours {o}, go {p.Value}");
        }
    }

    /// <summary>The scenario; returns the advisories seen, in order.</summary>
    private static async Task<List<(string, string)>> RunAsync(string url)
    {
        await using var nats = new NatsConnection(new NatsOpts { Url = url, Name = "adv-test", RequestTimeout = Wait });
        await nats.ConnectAsync();
        var events = new ConcurrentQueue<(string, string)>();
        await using var evSub = await nats.SubscribeCoreAsync<byte[]>("$JS.EVENT.>");
        var collect = Task.Run(async () =>
        {
            await foreach (var m in evSub.Msgs.ReadAllAsync()) events.Enqueue((m.Subject, Encoding.UTF8.GetString(m.Data ?? [])));
        });
        await using var inbox = await nats.SubscribeCoreAsync<byte[]>("pull.inbox");
        await nats.PingAsync();

        await Api(nats, "$JS.API.STREAM.CREATE.S", """{"name":"S","subjects":["s.>"],"storage":"memory"}""");
        await Api(nats, "$JS.API.STREAM.UPDATE.S", """{"name":"S","subjects":["s.>"],"storage":"memory","max_msgs":100}""");
        await Api(nats, "$JS.API.CONSUMER.DURABLE.CREATE.S.C",
            """{"stream_name":"S","config":{"durable_name":"C","ack_policy":"explicit","max_deliver":2,"sample_freq":"100%","ack_wait":1000000000}}""");
        await Api(nats, "$JS.API.STREAM.CREATE.BAD", """{"name":"OTHER"}""");
        for (int i = 0; i < 3; i++) await nats.RequestAsync<string, byte[]>($"s.{i}", "x");

        await nats.PublishAsync("$JS.API.CONSUMER.MSG.NEXT.S.C", """{"batch":3}""", replyTo: "pull.inbox");
        var first = new List<string>();
        while (first.Count < 3) first.Add((await Next(inbox)).ReplyTo!);
        await nats.PublishAsync(first[0], "+ACK");
        await WaitFor(events, "$JS.EVENT.METRIC.CONSUMER.ACK.S.C");
        await nats.PublishAsync(first[1], "-NAK");
        await WaitFor(events, "$JS.EVENT.ADVISORY.CONSUMER.MSG_NAKED.S.C");
        await nats.PublishAsync(first[2], "+TERM");
        await WaitFor(events, "$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED.S.C");

        // The NAKed message comes again (its 2nd and last delivery); left unacknowledged past ack_wait, it reaches
        // max_deliver. nats-server 2.9 notices on the next pull, later versions on the ack timer: pull again.
        await nats.PublishAsync("$JS.API.CONSUMER.MSG.NEXT.S.C", """{"batch":1}""", replyTo: "pull.inbox");
        var again = await Next(inbox);
        Assert.Contains(".2.2.", again.ReplyTo!, StringComparison.Ordinal);
        await Task.Delay(1500);
        await nats.PublishAsync("$JS.API.CONSUMER.MSG.NEXT.S.C", """{"batch":1,"expires":2000000000}""", replyTo: "pull.inbox");
        await WaitFor(events, "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.S.C");

        await Api(nats, "$JS.API.CONSUMER.DELETE.S.C", "");
        await Api(nats, "$JS.API.STREAM.DELETE.S", "");
        await WaitFor(events, "$JS.EVENT.ADVISORY.API", count: 6);
        // Stream and consumer advisories go out through a queue (both servers), after the API reply: wait for them too.
        await WaitFor(events, "$JS.EVENT.ADVISORY.CONSUMER.DELETED.S.C");
        await WaitFor(events, "$JS.EVENT.ADVISORY.STREAM.DELETED.S");
        await evSub.UnsubscribeAsync();
        await collect;
        return [.. events];
    }

    private static async Task Api(NatsConnection nats, string subject, string body) =>
        await nats.RequestAsync<byte[], byte[]>(subject, Encoding.UTF8.GetBytes(body));

    private static async Task<NatsMsg<byte[]>> Next(INatsSub<byte[]> sub)
    {
        using var cts = new CancellationTokenSource(Wait);
        while (true)
        {
            var m = await sub.Msgs.ReadAsync(cts.Token);
            if (m.ReplyTo is not null && m.ReplyTo.StartsWith("$JS.ACK.", StringComparison.Ordinal)) return m;
        }
    }

    private static async Task WaitFor(ConcurrentQueue<(string Subject, string)> events, string subject, int count = 1)
    {
        var deadline = DateTime.UtcNow + Wait;
        while (events.Count(e => e.Subject == subject) < count)
        {
            if (DateTime.UtcNow > deadline) throw new TimeoutException($"no {subject} advisory (count {count}) within {Wait}");
            await Task.Delay(20);
        }
    }
}
