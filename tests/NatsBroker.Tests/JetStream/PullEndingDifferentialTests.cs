using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;

namespace NatsBroker.Tests.JetStream;

/// <summary>
/// How pull requests end, run against our broker and nats-server 2.14.5 and compared line by line (consumer.go
/// processNextMsgRequest, processWaiting, nextWaiting, loopAndGatherMsgs): no_wait and expires endings (404 / 408
/// with Nats-Pending-Messages / Nats-Pending-Bytes), idle heartbeats with Nats-Last-Consumer / Nats-Last-Stream, the
/// 400 / 409 refusals with nats-server's descriptions (Go's JSON error texts too), max_bytes counted as subject +
/// ack reply + headers + payload (409 Message Size Exceeds MaxBytes, 409 Batch Completed), a push consumer, a deleted
/// consumer, and the 503 no-responders status (with Nats-Subject) for MSG.NEXT and ack subjects nobody serves.
/// </summary>
public sealed class PullEndingDifferentialTests(ITestOutputHelper output)
{
    [SkippableFact]
    public async Task Pull_request_endings_match_nats_server_2_14()
    {
        Prerequisites.RequireOracle214(output);
        var go = await RunAsync(oracle: true);
        var ours = await RunAsync(oracle: false);
        Compare(go, ours, "404 ", "408 ", "409 ", "400 ", "100 ", "503 ");
    }

    [SkippableFact]
    public async Task Ack_replies_and_unserved_ack_subjects_match_nats_server_2_14()
    {
        Prerequisites.RequireOracle214(output);
        var go = await RunAcksAsync(oracle: true);
        var ours = await RunAcksAsync(oracle: false);
        Compare(go, ours, "503 ", "reply ''", "400 ");
    }

    private void Compare(List<string> go, List<string> ours, params string[] seen)
    {
        for (int i = 0; i < Math.Max(go.Count, ours.Count); i++)
        {
            string g = i < go.Count ? go[i] : "<none>", o = i < ours.Count ? ours[i] : "<none>";
            output.WriteLine(g == o ? $"   {g}" : $"!! go:   {g}\n!! ours: {o}");
        }
        // Not vacuous: nats-server's answers include each of these statuses.
        foreach (var code in seen) Assert.Contains(go, l => l.StartsWith(code, StringComparison.Ordinal));
        Assert.Equal(go, ours);
    }

    private async Task<List<string>> RunAsync(bool oracle)
    {
        await using var server = await PullScript.StartAsync(oracle, output);
        await using var s = await PullScript.ConnectAsync(server, "E");
        var lines = new List<string>();
        async Task Pull(string label, string consumer, string body, int quietMs = 400)
        {
            lines.Add($"== {label}");
            lines.AddRange(await s.PullAsync(consumer, body, quietMs));
        }
        async Task Consumer(string name, string config = "") => lines.Add(await s.ConsumerAsync(name, "\"ack_policy\":\"explicit\"" + (config.Length > 0 ? "," + config : "")));
        for (int i = 0; i < 3; i++) await s.PublishAsync("E.a", $"m{i}");

        await Consumer("C1");
        await Pull("no_wait, fewer than asked", "C1", """{"batch":5,"no_wait":true}""");
        await Pull("no_wait, nothing left", "C1", """{"batch":5,"no_wait":true}""");
        await Pull("no_wait + expires, nothing left", "C1", """{"batch":5,"no_wait":true,"expires":300000000}""");
        await Consumer("C2");
        await Pull("no_wait + expires, fewer than asked", "C2", """{"batch":5,"no_wait":true,"expires":300000000}""");
        await Consumer("C3");
        await Pull("expires after some", "C3", """{"batch":5,"expires":300000000}""");
        await Pull("expires with nothing", "C3", """{"batch":2,"expires":300000000}""");
        await Pull("expires in the past, no batch", "C3", """{"expires":-5,"no_wait":true}""");
        await Consumer("C4");
        await Pull("idle heartbeats", "C4", """{"batch":5,"expires":700000000,"idle_heartbeat":200000000}""");
        await Pull("heartbeat over half the expiry", "C4", """{"batch":5,"expires":300000000,"idle_heartbeat":200000000}""");
        await Pull("heartbeat without expiry", "C4", """{"batch":5,"idle_heartbeat":200000000}""");
        await Consumer("C5");
        await Pull("empty body", "C5", "", 250);
        await Pull("a number", "C5", "2", 250);
        foreach (var bad in new[]
        {
            """{"batch":1,"expires":200000000""", """{"batch":"x"}""", """{"batch":1,"expires":"1s"}""", """{"group":1}""", """{"priority":"x"}""",
            """{"batch":1.5}""", """{"no_wait":1}""", """{"batch":99999999999999999999}""", """{"batch":1,}""", """{"batch" 1}""", """{"batch":1 "x":2}""",
            """{batch:1}""", """{"batch":tru}""", """{"batch":[1]}""", """{"min_pending":"a"}""", """{"batch":1}x""", """{"batch":"\q"}""",
            """{"batch":-}""", "{\"x\":\"a\nb\"}", """{"batch":true,"expires":"x"}""", "{",
        })
        {
            await Pull($"bad JSON {bad}", "C5", bad, 250);
        }
        await Pull("field names in another case", "C5", """{"Batch":2,"No_Wait":true}""");
        await Consumer("C6", "\"max_batch\":2,\"max_expires\":500000000,\"max_bytes\":1000");
        await Pull("over max_batch", "C6", """{"batch":3}""");
        await Pull("over max_expires", "C6", """{"batch":1,"expires":600000000}""");
        await Pull("over max_bytes", "C6", """{"batch":1,"max_bytes":2000}""");
        await Pull("within the limits", "C6", """{"batch":1}""", 250);
        await Consumer("C8", "\"deliver_policy\":\"new\",\"max_waiting\":1");
        var first = s.PullAsync("C8", """{"batch":1,"expires":1500000000}""", 2500);
        await Task.Delay(200);
        await Pull("over max_waiting", "C8", """{"batch":1,"expires":1000000000}""");
        await Pull("over max_waiting with heartbeats (no answer)", "C8", """{"batch":1,"expires":1000000000,"idle_heartbeat":400000000}""", 300);
        lines.Add("== the waiting one");
        lines.AddRange(await first);
        await Consumer("C9");
        await Pull("max_bytes below the first message", "C9", """{"batch":5,"max_bytes":10}""");
        await Pull("max_bytes for one message", "C9", """{"batch":5,"max_bytes":100}""");
        await Consumer("CA");
        await Pull("batch done, bytes left", "CA", """{"batch":1,"max_bytes":1000}""");
        // NATS.Net's max_bytes fetch: ten 1 KiB messages, max_bytes 10 x (1024 + 50), deliver what fits whole.
        for (int i = 0; i < 10; i++) await s.PublishAsync("E.big", new string('x', 1024));
        await Consumer("CB", "\"filter_subject\":\"E.big\"");
        await Pull("max_bytes over ten 1 KiB messages", "CB", """{"batch":100,"max_bytes":10740,"expires":500000000}""");
        lines.Add(await s.ConsumerAsync("P1", "\"ack_policy\":\"explicit\",\"deliver_subject\":\"push.p1\""));
        await Pull("pull on a push consumer", "P1", "");
        await Pull("pull on a missing consumer", "NOPE", "");
        foreach (var subject in new[] { "$JS.API.CONSUMER.MSG.NEXT.E", "$JS.API.CONSUMER.MSG.NEXT.E.C1.x", "$JS.API.CONSUMER.MSG.NEXT.NOS.C1" })
        {
            lines.Add($"== {subject.Replace("$JS.API.CONSUMER.MSG.NEXT.", "MSG.NEXT ", StringComparison.Ordinal)}");
            lines.AddRange(await s.RequestAsync(subject, "", 300));
        }
        await Consumer("CD", "\"deliver_policy\":\"new\"");
        var waiting = s.PullAsync("CD", """{"batch":1,"expires":3000000000}""", 2000);
        await Task.Delay(200);
        await s.ApiAsync("$JS.API.CONSUMER.DELETE.E.CD");
        lines.Add("== consumer deleted under a waiting request");
        lines.AddRange(await waiting);
        return lines;
    }

    private async Task<List<string>> RunAcksAsync(bool oracle)
    {
        await using var server = await PullScript.StartAsync(oracle, output);
        await using var s = await PullScript.ConnectAsync(server, "A");
        var lines = new List<string>();
        for (int i = 0; i < 4; i++) await s.PublishAsync("A.x", $"m{i}");
        lines.Add(await s.ConsumerAsync("C", "\"ack_policy\":\"explicit\""));
        lines.Add(await s.ConsumerAsync("N", "\"ack_policy\":\"none\""));
        var ms = new List<NATS.Client.Core.NatsMsg<byte[]>>();
        var ns = new List<NATS.Client.Core.NatsMsg<byte[]>>();
        lines.AddRange(await s.PullAsync("C", """{"batch":2}""", 300, ms));
        lines.AddRange(await s.PullAsync("N", """{"batch":2}""", 300, ns));
        async Task Ack(string label, string subject, string body)
        {
            lines.Add($"== {label}: '{body}'");
            lines.AddRange(await s.RequestAsync(subject, body, 250));
        }
        foreach (var (label, m, body) in new[]
        {
            ("first", ms[0], "+ACK"), ("first again", ms[0], "+ACK"), ("second", ms[1], "-NAK"), ("second", ms[1], "+WPI"), ("second", ms[1], "+WPI "),
            ("second", ms[1], "bogus"), ("second", ms[1], " +ACK"), ("second", ms[1], "+OK"), ("ack none consumer", ns[0], "+ACK"), ("ack none consumer", ns[0], "-NAK"),
        })
        {
            await Ack(label, m.ReplyTo!, body);
        }
        foreach (var (subject, body) in new[]
        {
            ("$JS.ACK.A.C.x.y.z.w.v", "+ACK"), ("$JS.ACK.A.C.x.y.z.w.v", "-NAK"), ("$JS.ACK.A.C.1.2.3", "+ACK"), ("$JS.ACK.A.C.1.2.3.4.5.6", ""),
            ("$JS.ACK.A.NOPE.1.1.1.1.1", "+ACK"), ("$JS.ACK.A.NOPE.1.1.1.1.1", "-NAK"), ("$JS.ACK.A.C.1.99.99.1.1", "+ACK"), ("$JS.ACK.A.C.1.0.0.1.1", "-NAK"),
            ("$JS.ACK.A.C.1.2.2.1.1", "+TERM x"), ("$JS.ACK.A.C.1.3.3.1.1", "+NXT {\"batch\":1,\"no_wait\":true}"), ("$JS.ACK.A.C.1.3.3.1.1", "+NXT {bad"),
        })
        {
            await Ack(subject, subject, body);
        }
        lines.Add("== info " + await s.InfoAsync("C"));
        return lines;
    }
}
