using System.Globalization;
using System.Text;
using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Auth;

/// <summary>
/// Subscribe permissions against wildcard and queue subscriptions, our broker against nats-server 2.14.5 (issue 38):
/// which SUBs are refused (and the -ERR text), which deliveries each subscription gets, and that violations leave
/// the connection open. Only 2.14.5: Debian's 2.9.10 differs on purpose here (it filtered deliveries only for SUBs
/// a deny entry was a subset of, so deny "pub.secret.&gt;" let SUB "pub.*.x" receive pub.secret.x, and it let a
/// queue-scoped deny override a plain one). Skipped without the 2.14.5 binary (failed under CI=true).
/// </summary>
public sealed class PermissionWildcardDifferentialTests(ITestOutputHelper output)
{
    private const int Seed = 38;
    private const int Users = 160;
    private const int SubsPerUser = 16;

    private static readonly string[] Literals = ["a", "b", "c"];
    private static readonly string[] EntryQueues = ["q1", "q2", "q.*", "q.a"];
    private static readonly string[] SubQueues = ["q1", "q2", "q.a", "q.b"];

    private sealed record Case(List<string>? Allow, List<string>? Deny, List<(string Subject, string? Queue)> Subs);

    /// <summary>Every literal subject of 1 to 4 tokens over a, b, c (120), published by each user to itself.</summary>
    private static readonly string[] Published = AllLiterals(4).ToArray();

    private static IEnumerable<string> AllLiterals(int maxDepth)
    {
        IEnumerable<string> level = Literals;
        for (int d = 1; d <= maxDepth; d++)
        {
            foreach (var s in level) yield return s;
            level = level.SelectMany(s => Literals.Select(t => s + "." + t)).ToList();
        }
    }

    private static string Pattern(Random r)
    {
        int depth = r.Next(10) switch { 0 => 1, < 4 => 2, < 8 => 3, _ => 4 };
        var tokens = new string[depth];
        for (int i = 0; i < depth; i++)
        {
            int k = r.Next(100);
            tokens[i] = i == depth - 1 && k < 15 ? ">" : k < 40 ? "*" : Literals[r.Next(Literals.Length)];
        }
        return string.Join('.', tokens);
    }

    private static List<string> Entries(Random r)
    {
        int n = 1 + r.Next(3);
        var list = new List<string>();
        for (int i = 0; i < n; i++)
            list.Add(r.Next(100) < 20 ? Pattern(r) + " " + EntryQueues[r.Next(EntryQueues.Length)] : Pattern(r));
        return list;
    }

    private static List<Case> Generate()
    {
        var r = new Random(Seed);
        var cases = new List<Case>();
        for (int u = 0; u < Users; u++)
        {
            var allow = r.Next(100) < 50 ? Entries(r) : null;
            var deny = r.Next(100) < 85 || allow is null ? Entries(r) : null;
            // One member per queue group (each user has its own account): which member gets a message is random.
            var freeQueues = new List<string>(SubQueues);
            var subs = new List<(string, string?)>();
            while (subs.Count < SubsPerUser)
            {
                string? queue = null;
                if (freeQueues.Count > 0 && r.Next(100) < 30)
                {
                    queue = freeQueues[r.Next(freeQueues.Count)];
                    freeQueues.Remove(queue);
                }
                var sub = (Pattern(r), queue);
                if (!subs.Contains(sub)) subs.Add(sub);
                else if (queue is not null) freeQueues.Add(queue);
            }
            cases.Add(new Case(allow, deny, subs));
        }
        return cases;
    }

    private static string List(List<string> entries) => "[" + string.Join(", ", entries.Select(e => "\"" + e + "\"")) + "]";

    private static string Config(List<Case> cases)
    {
        var sb = new StringBuilder("accounts {\n");
        for (int u = 0; u < cases.Count; u++)
        {
            var c = cases[u];
            var parts = new List<string>();
            if (c.Allow is not null) parts.Add("allow: " + List(c.Allow));
            if (c.Deny is not null) parts.Add("deny: " + List(c.Deny));
            sb.Append(CultureInfo.InvariantCulture,
                $"  A{u}: {{ users: [ {{user: u{u}, password: p, permissions: {{ subscribe: {{ {string.Join(", ", parts)} }} }} }} ] }}\n");
        }
        return sb.Append("}\n").ToString();
    }

    /// <summary>Per user: the lines other than MSG after its SUBs, then its deliveries as sorted "sid subject".</summary>
    private static List<string> Run(int port, List<Case> cases)
    {
        var results = new List<string>();
        var pubs = new StringBuilder();
        foreach (var p in Published) pubs.Append("PUB ").Append(p).Append(" 0\r\n\r\n");
        string publishAll = pubs.ToString();
        for (int u = 0; u < cases.Count; u++)
        {
            using var client = new RawClient(port);
            var subs = new StringBuilder($$"""CONNECT {"verbose":false,"pedantic":false,"echo":true,"user":"u{{u}}","pass":"p"}""" + "\r\n");
            for (int i = 0; i < cases[u].Subs.Count; i++)
            {
                var (subject, queue) = cases[u].Subs[i];
                subs.Append(CultureInfo.InvariantCulture, $"SUB {subject} {(queue is null ? "" : queue + " ")}{i + 1}\r\n");
            }
            string afterSubs = client.Send(subs.ToString());
            var got = new List<string>();
            foreach (var line in client.Send(publishAll).Split('\n'))
            {
                if (line.Length == 0) continue;
                var f = line.Split(' ');
                got.Add(f[0] == "MSG" ? f[2] + " " + f[1] : "other: " + line);
            }
            got.Sort(StringComparer.Ordinal);
            results.Add(afterSubs + string.Join('\n', got) + (client.Closed ? "\n<closed>" : ""));
        }
        return results;
    }

    [SkippableFact]
    public async Task Subscribe_permissions_on_wildcard_and_queue_subscriptions_match_nats_server_2_14()
    {
        string oracle = Prerequisites.RequireOracle214(output);
        var cases = Generate();
        string config = Config(cases);

        var started = System.Diagnostics.Stopwatch.StartNew();
        List<string> expected;
        using (var go = new NatsServerOracle(config, oracle)) expected = Run(go.Port, cases);
        List<string> actual;
        await using (var ours = await ServerProcess.StartAsync(ServerKind.Ours, config, output)) actual = Run(ours.Port, cases);
        output.WriteLine($"{Users} users x {SubsPerUser} SUBs x {Published.Length} subjects in {started.Elapsed.TotalSeconds:0.0}s");

        // Not vacuous: the cases refuse SUBs, deliver, and withhold matching subjects from allowed wildcard SUBs.
        int refused = expected.Sum(e => e.Split('\n').Count(l => l.StartsWith("-ERR 'Permissions Violation for Subscription", StringComparison.Ordinal)));
        int delivered = expected.Sum(e => e.Split('\n').Count(l => l.Length > 0 && char.IsDigit(l[0])));
        int withheld = 0;
        for (int u = 0; u < cases.Count; u++)
        {
            var lines = expected[u].Split('\n').ToHashSet();
            for (int i = 0; i < cases[u].Subs.Count; i++)
            {
                var (subject, queue) = cases[u].Subs[i];
                string err = queue is null
                    ? $"-ERR 'Permissions Violation for Subscription to \"{subject}\"'"
                    : $"-ERR 'Permissions Violation for Subscription to \"{subject}\" using queue \"{queue}\"'";
                if (lines.Contains(err)) continue;
                withheld += Published.Count(p => NatsBroker.Subjects.Subject.Matches(subject, p) && !lines.Contains($"{i + 1} {p}"));
            }
        }
        output.WriteLine($"refused SUBs {refused}, deliveries {delivered}, matching deliveries withheld by a deny {withheld}");
        Assert.True(refused > 200 && delivered > 2000 && withheld > 200, $"weak cases: refused {refused}, delivered {delivered}, withheld {withheld}");

        var problems = new List<string>();
        for (int u = 0; u < cases.Count; u++)
        {
            if (expected[u] == actual[u]) continue;
            var c = cases[u];
            var e = expected[u].Split('\n');
            var a = actual[u].Split('\n');
            problems.Add($"u{u} allow {(c.Allow is null ? "-" : List(c.Allow))} deny {(c.Deny is null ? "-" : List(c.Deny))} subs " +
                string.Join(", ", c.Subs.Select((s, i) => $"{i + 1}:{s.Subject}{(s.Queue is null ? "" : " " + s.Queue)}")) +
                $"\n  only nats-server: {string.Join(" | ", e.Except(a).Take(8))}\n  only ours: {string.Join(" | ", a.Except(e).Take(8))}");
        }
        Assert.True(problems.Count == 0, $"{problems.Count} of {Users} users differ:\n" + string.Join('\n', problems.Take(6)));
    }

    /// <summary>
    /// parser.go applies the account's subject mapping (client.go selectMappedSubject) before processInboundClientMsg
    /// checks the publish permissions, so they and the -ERR text see the mapped subject (2.9.10 does the same).
    /// </summary>
    [SkippableFact]
    public async Task Publish_permissions_see_the_mapped_subject()
    {
        string oracle = Prerequisites.RequireOracle214(output);
        const string config = """
            mappings: { "src.a": "dst.a" }
            authorization { users = [
              {user: u, password: p, permissions: { publish: { deny: ["dst.>"] } }}
              {user: v, password: p, permissions: { publish: { deny: ["src.>"] } }}
              {user: w, password: p, permissions: { publish: { allow: ["src.>"] } }}
            ] }
            """;
        static List<string> RunMapped(int port)
        {
            var all = new List<string>();
            foreach (var user in new[] { "u", "v", "w" })
            {
                using var c = new RawClient(port);
                all.Add(user + ": " + c.Send($$"""CONNECT {"verbose":false,"user":"{{user}}","pass":"p"}""" + "\r\nSUB > 1\r\nPUB src.a 1\r\nx\r\nPUB src.b 1\r\ny\r\n"));
            }
            return all;
        }
        List<string> expected;
        using (var go = new NatsServerOracle(config, oracle)) expected = RunMapped(go.Port);
        await using var ours = await ServerProcess.StartAsync(ServerKind.Ours, config, output);
        var actual = RunMapped(ours.Port);
        Assert.Contains("Permissions Violation for Publish to \"dst.a\"", expected[0], StringComparison.Ordinal);
        Assert.Equal(expected, actual);
    }

    /// <summary>
    /// A push consumer delivers to the deliver subject's SUB with the stored subject; nats-server checks that
    /// subject against the subscribe deny list once any SUB of the connection overlapped a deny entry (client.go
    /// processMsgResults passes pa.deliver to deliverMsg, which consults c.mperms), whatever the deliver SUB is.
    /// </summary>
    [SkippableFact]
    public async Task JetStream_push_deliveries_follow_the_deny_filter()
    {
        string oracle = Prerequisites.RequireOracle214(output);
        var results = new List<List<string>>();
        foreach (var go in new[] { true, false })
        {
            var store = Directory.CreateTempSubdirectory("natsbroker-permjs-").FullName;
            try
            {
                string config = $$$"""
                    jetstream { store_dir: "{{{store}}}" }
                    accounts { J { jetstream: enabled, users: [
                      {user: w, password: p, permissions: { subscribe: { deny: ["orders.secret"] } }}
                      {user: l, password: p, permissions: { subscribe: { deny: ["orders.secret"] } }}
                    ] } }
                    """;
                if (go)
                {
                    using var server = new NatsServerOracle(config, oracle);
                    results.Add(RunJetStream(server.Port));
                }
                else
                {
                    await using var server = await ServerProcess.StartAsync(ServerKind.Ours, config, output);
                    results.Add(RunJetStream(server.Port));
                }
            }
            finally
            {
                Directory.Delete(store, true);
            }
        }
        output.WriteLine("nats-server: " + string.Join(" | ", results[0]) + "\nours: " + string.Join(" | ", results[1]));
        // w (with SUB orders.*): the secret stays out of both its SUBs; l (deliver SUB only): it gets both.
        Assert.Equal(new List<string> { "l: 1 orders.ok", "l: 1 orders.secret", "w: 2 orders.ok", "w: 3 orders.ok" }, results[0]);
        Assert.Equal(results[0], results[1]);
    }

    private static List<string> RunJetStream(int port)
    {
        using var w = new RawClient(port);
        using var l = new RawClient(port);
        Assert.Equal("", w.Send("""CONNECT {"verbose":false,"user":"w","pass":"p"}""" + "\r\nSUB _INBOX.w 9\r\nSUB orders.* 2\r\nSUB dlv.w 3\r\n"));
        Assert.Equal("", l.Send("""CONNECT {"verbose":false,"user":"l","pass":"p"}""" + "\r\nSUB _INBOX.l 9\r\nSUB dlv.l 1\r\n"));
        Api(w, "_INBOX.w", "$JS.API.STREAM.CREATE.ORD", """{"name":"ORD","subjects":["orders.>"],"storage":"memory"}""");
        Api(w, "_INBOX.w", "$JS.API.CONSUMER.CREATE.ORD", """{"stream_name":"ORD","config":{"deliver_subject":"dlv.w","ack_policy":"none"}}""");
        Api(l, "_INBOX.l", "$JS.API.CONSUMER.CREATE.ORD", """{"stream_name":"ORD","config":{"deliver_subject":"dlv.l","ack_policy":"none"}}""");
        var got = new List<string>();
        string first = w.Send("PUB orders.secret 1\r\ns\r\nPUB orders.ok 1\r\nk\r\n");
        var wLines = new StringBuilder(first);
        var lLines = new StringBuilder();
        var deadline = DateTime.UtcNow.AddSeconds(5);
        // Deliveries run on the consumer's own worker: wait for the last expected ones, then a little longer.
        while (DateTime.UtcNow < deadline && !(Count(lLines) >= 2 && wLines.ToString().Contains("MSG orders.ok 3 ", StringComparison.Ordinal)))
        {
            Thread.Sleep(20);
            wLines.Append(w.Send(""));
            lLines.Append(l.Send(""));
        }
        Thread.Sleep(300);
        wLines.Append(w.Send(""));
        lLines.Append(l.Send(""));
        foreach (var (name, text) in new[] { ("w", wLines.ToString()), ("l", lLines.ToString()) })
        {
            foreach (var line in text.Split('\n'))
            {
                if (!line.StartsWith("MSG ", StringComparison.Ordinal)) continue;
                var f = line.Split(' ');
                got.Add($"{name}: {f[2]} {f[1]}");
            }
        }
        got.Sort(StringComparer.Ordinal);
        return got;

        static int Count(StringBuilder sb) => sb.ToString().Split('\n').Count(x => x.StartsWith("MSG ", StringComparison.Ordinal));
    }

    /// <summary>A JetStream API request; waits for its reply and fails on an error reply.</summary>
    private static void Api(RawClient c, string inbox, string subject, string body)
    {
        var reply = new StringBuilder(c.Send($"PUB {subject} {inbox} {Encoding.UTF8.GetByteCount(body)}\r\n{body}\r\n"));
        var deadline = DateTime.UtcNow.AddSeconds(5);
        while (!reply.ToString().Contains("MSG " + inbox, StringComparison.Ordinal) && DateTime.UtcNow < deadline)
        {
            Thread.Sleep(20);
            reply.Append(c.Send(""));
        }
        string text = reply.ToString();
        Assert.True(text.Contains("MSG " + inbox, StringComparison.Ordinal) && !text.Contains("\"error\"", StringComparison.Ordinal), subject + ": " + text);
    }
}
