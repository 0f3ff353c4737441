using System.Text;
using System.Text.Json;
using NATS.Client.Core;
using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;

namespace NatsBroker.Tests.JetStream;

/// <summary>
/// Stored message sizes against nats-server (issue 39): each engine counts nats-server's figure (memstore.go
/// memStoreMsgSize: subject + headers + payload + 16; filestore.go fileStoreMsgSize: 22 + subject + payload + 8, plus
/// 4 + headers with headers), so with headers and long subjects the same script gives the same state bytes, keeps the
/// same messages under max_bytes, refuses the same publishes (discard new, max_msg_size, the account's max_mem /
/// max_file) with the same errors. The script runs on ours and on nats-server; every answer is reduced to the fields
/// compared (PubAck sequence or error; state messages, bytes, first and last sequence).
/// </summary>
public sealed class StoredSizeDifferentialTests(ITestOutputHelper output)
{
    private const string Long = "orders.europe.west.warehouse-0042.shipments.express.priority.high";

    /// <summary>One step: a JetStream API request (rendered by <see cref="Render"/>) or a publish with a payload of <c>Payload</c> bytes and a header of <c>Pad</c> bytes (-1: none).</summary>
    private sealed record Step(string User, string Subject, string Body = "", int Payload = -1, int Pad = -1, bool Info = false);

    private static Step Api(string subject, string body = "", string user = "a") => new(user, subject, body);
    private static Step Pub(string subject, int payload, int pad = -1, string user = "a") => new(user, subject, Payload: payload, Pad: pad);
    private static Step Info(string stream, string user = "a") => new(user, "$JS.API.STREAM.INFO." + stream, Info: true);

    private static string Create(string name, string subjects, string storage, string extra = "") =>
        $$"""{"name":"{{name}}","subjects":["{{subjects}}"],"storage":"{{storage}}"{{extra}}}""";

    /// <summary>Messages of every kind: short and long subjects, with and without headers, empty payloads.</summary>
    private static IEnumerable<Step> Mix(string prefix, string user = "a") =>
    [
        Pub(prefix + ".a", 1, user: user),
        Pub(prefix + "." + Long, 100, user: user),
        Pub(prefix + ".a", 2, pad: 20, user: user),
        Pub(prefix + "." + Long, 0, pad: 20, user: user),
        Pub(prefix + ".e", 0, user: user),
    ];

    /// <summary>State bytes, delete and purge, discard old, max_msg_size: the same on nats-server 2.9.10 and 2.14.5.</summary>
    private static List<Step> CommonScript()
    {
        var steps = new List<Step>();
        foreach (var (st, p) in new[] { ("memory", "m"), ("file", "f") })
        {
            steps.Add(Api("$JS.API.STREAM.CREATE.S" + p, Create("S" + p, "s" + p + ".>", st)));
            steps.AddRange(Mix("s" + p));
            steps.Add(Info("S" + p));
            steps.Add(Api("$JS.API.STREAM.MSG.DELETE.S" + p, """{"seq":2}"""));
            steps.Add(Info("S" + p));
            steps.Add(Api("$JS.API.STREAM.PURGE.S" + p, """{"filter":"s%.a"}""".Replace("%", p, StringComparison.Ordinal)));
            steps.Add(Info("S" + p));

            // Discard old: which messages remain depends on each message's figure.
            steps.Add(Api("$JS.API.STREAM.CREATE.O" + p, Create("O" + p, "o" + p + ".>", st, ""","max_bytes":450""")));
            for (int round = 0; round < 3; round++)
            {
                steps.AddRange(Mix("o" + p));
                steps.Add(Info("O" + p));
            }

            // max_msg_size: headers + payload, not the subject. NATS.Net's header "X-Pad: hhhhh" is 26 bytes in all.
            steps.Add(Api("$JS.API.STREAM.CREATE.Z" + p, Create("Z" + p, "z" + p + ".>", st, ""","max_msg_size":40""")));
            steps.Add(Pub("z" + p + "." + Long, 40));
            steps.Add(Pub("z" + p + "." + Long, 41));
            steps.Add(Pub("z" + p + "." + Long, 14, pad: 5));
            steps.Add(Pub("z" + p + "." + Long, 15, pad: 5));
            steps.Add(Info("Z" + p));
        }
        return steps;
    }

    /// <summary>The memory / file figure of a message on the stream prefix (as the servers count it; for limits set in the script).</summary>
    private static long Figure(string storage, string subject, int headers, int payload) => storage == "memory"
        ? Encoding.UTF8.GetByteCount(subject) + headers + payload + 16
        : headers == 0 ? 22 + Encoding.UTF8.GetByteCount(subject) + payload + 8 : 22 + Encoding.UTF8.GetByteCount(subject) + 4 + headers + payload + 8;

    /// <summary>Discard new and the account's limits: nats-server 2.14.5 (2.9.10 compares hdr + msg with ">=" there, and checks account usage only after the fact).</summary>
    private static List<Step> NewerScript()
    {
        var steps = new List<Step>();
        foreach (var (st, p) in new[] { ("memory", "m"), ("file", "f") })
        {
            // Discard new with max_bytes: the refusal comes at the message whose figure passes the limit.
            steps.Add(Api("$JS.API.STREAM.CREATE.N" + p, Create("N" + p, "n" + p + ".>", st, ""","max_bytes":400,"discard":"new" """)));
            steps.AddRange(Mix("n" + p));
            steps.AddRange(Mix("n" + p));
            steps.Add(Info("N" + p));

            // A subject at max_msgs_per_subject replaces its oldest: max_msgs does not refuse it.
            steps.Add(Api("$JS.API.STREAM.CREATE.R" + p, Create("R" + p, "r" + p + ".>", st, ""","max_msgs":2,"max_msgs_per_subject":1,"discard":"new" """)));
            steps.Add(Pub("r" + p + ".a", 5));
            steps.Add(Pub("r" + p + ".b", 5));
            steps.Add(Pub("r" + p + ".c", 5));
            steps.Add(Pub("r" + p + ".a", 6));
            steps.Add(Info("R" + p));

            // ... and max_bytes only when the oldest it replaces is smaller than it.
            long max = 2 * Figure(st, "q" + p + ".a", 0, 10);
            steps.Add(Api("$JS.API.STREAM.CREATE.Q" + p, Create("Q" + p, "q" + p + ".>", st, $$""","max_bytes":{{max}},"max_msgs_per_subject":1,"discard":"new" """)));
            steps.Add(Pub("q" + p + ".a", 10));
            steps.Add(Pub("q" + p + ".b", 10));
            steps.Add(Pub("q" + p + ".a", 10));
            steps.Add(Pub("q" + p + ".a", 11));
            steps.Add(Pub("q" + p + ".a", 5));
            steps.Add(Pub("q" + p + ".c", 6));
            steps.Add(Info("Q" + p));

            // The account's max_mem / max_file (1000 each): the pre-check counts the store's figure.
            steps.Add(Api("$JS.API.STREAM.CREATE.L" + p, Create("L" + p, "l" + p + ".>", st), user: "l"));
            for (int i = 0; i < 7; i++) steps.Add(Pub("l" + p + "." + Long, 50, pad: 20, user: "l"));
            steps.Add(Info("L" + p, user: "l"));
        }
        return steps;
    }

    private static string Config(string storeDir) => $$"""
        jetstream { store_dir: "{{storeDir}}" }
        accounts {
          A { users [{user: a, password: a}], jetstream: enabled }
          L { users [{user: l, password: l}], jetstream { max_mem: 1000, max_file: 1000 } }
        }
        """;

    [SkippableTheory]
    [InlineData("2.14.5")]
    [InlineData("2.9.10")]
    public async Task State_bytes_delete_purge_discard_old_and_max_msg_size_match_nats_server(string version)
    {
        string? binary = version == "2.14.5" ? Prerequisites.RequireOracle214(output) : Prerequisites.RequireGoServer(output);
        await CompareAsync(CommonScript(), binary);
    }

    [SkippableFact]
    public async Task Discard_new_and_account_limits_match_nats_server_2_14()
    {
        await CompareAsync(NewerScript(), Prerequisites.RequireOracle214(output));
    }

    private async Task CompareAsync(List<Step> script, string? goBinary)
    {
        var ours = await RunAsync(ServerKind.Ours, script, null);
        var go = await RunAsync(ServerKind.Go, script, goBinary);
        var problems = new List<string>();
        for (int i = 0; i < script.Count; i++)
        {
            output.WriteLine($"{script[i].User} {script[i].Subject} {(script[i].Payload >= 0 ? $"payload {script[i].Payload} pad {script[i].Pad}" : script[i].Body)}\n  ours: {ours[i]}\n  go:   {go[i]}");
            if (ours[i] != go[i]) problems.Add($"step {i} ({script[i].Subject}): ours {ours[i]}, go {go[i]}");
        }
        Assert.True(problems.Count == 0, string.Join("\n", problems));
    }

    /// <summary>The fields compared: a PubAck's sequence or error, a stream's state, an API error or "ok".</summary>
    private static string Render(Step step, JsonElement reply)
    {
        if (reply.TryGetProperty("error", out var e))
            return $"error {e.GetProperty("code")} {(e.TryGetProperty("err_code", out var ec) ? ec.ToString() : "-")} {e.GetProperty("description")}";
        if (step.Payload >= 0) return "seq " + reply.GetProperty("seq");
        if (step.Info)
        {
            var s = reply.GetProperty("state");
            return $"messages {s.GetProperty("messages")} bytes {s.GetProperty("bytes")} first {s.GetProperty("first_seq")} last {s.GetProperty("last_seq")}";
        }
        if (reply.TryGetProperty("purged", out var purged)) return "purged " + purged;
        return "ok";
    }

    private async Task<List<string>> RunAsync(ServerKind kind, List<Step> script, string? goBinary)
    {
        var dir = Path.Combine(Path.GetTempPath(), "natsbroker-js-tests", Guid.NewGuid().ToString("N"));
        try
        {
            await using var server = await ServerProcess.StartAsync(kind, new ServerStartOptions { Config = Config(dir), GoBinary = goBinary }, output);
            var connections = new Dictionary<string, NatsConnection>();
            try
            {
                var answers = new List<string>();
                foreach (var step in script)
                {
                    if (!connections.TryGetValue(step.User, out var nats))
                    {
                        nats = new NatsConnection(new NatsOpts { Url = server.Url, AuthOpts = new NatsAuthOpts { Username = step.User, Password = step.User } });
                        await nats.ConnectAsync();
                        connections[step.User] = nats;
                    }
                    JsonElement reply;
                    if (step.Payload >= 0)
                    {
                        var headers = step.Pad >= 0 ? new NATS.Client.Core.NatsHeaders { ["X-Pad"] = new string('h', step.Pad) } : null;
                        var msg = await nats.RequestAsync<byte[], byte[]>(step.Subject, new byte[step.Payload], headers: headers, replyOpts: new NatsSubOpts { Timeout = TimeSpan.FromSeconds(5) });
                        reply = JsonDocument.Parse(msg.Data ?? []).RootElement.Clone();
                    }
                    else
                    {
                        reply = await AccountJetStreamTests.RequestAsync(nats, step.Subject, step.Body);
                    }
                    answers.Add(Render(step, reply));
                }
                return answers;
            }
            finally
            {
                foreach (var c in connections.Values) await c.DisposeAsync();
            }
        }
        finally
        {
            try { Directory.Delete(dir, recursive: true); }
            catch (DirectoryNotFoundException) { }
            catch (IOException) { }
            catch (UnauthorizedAccessException) { }
        }
    }
}
