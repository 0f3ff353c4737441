using System.Text.Json;
using NATS.Client.Core;
using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;

namespace NatsBroker.Tests.JetStream;

/// <summary>
/// Account JetStream against Go nats-server 2.9.10 with the same config: the reply to an account without JetStream,
/// the account info limits, and the limit errors (streams, consumers, memory / file reservations, ingest past
/// max_file) must carry the same code, err_code and description.
/// </summary>
public sealed class AccountJetStreamDifferentialTests(ITestOutputHelper output)
{
    private sealed record Step(string Name, string User, string Subject, string Body);

    private static readonly string Kilobyte = new('x', 1000);

    private static readonly Step[] Script =
    [
        new("no JetStream: info", "n", "$JS.API.INFO", ""),
        new("no JetStream: create", "n", "$JS.API.STREAM.CREATE.S", """{"name":"S","subjects":["s"]}"""),
        new("no JetStream: stream info", "n", "$JS.API.STREAM.INFO.S", ""),
        new("no JetStream: consumer info", "n", "$JS.API.CONSUMER.INFO.S.C", ""),
        new("limited: info", "l", "$JS.API.INFO", ""),
        new("memory reservation", "l", "$JS.API.STREAM.CREATE.M", """{"name":"M","subjects":["m"],"storage":"memory","max_bytes":2000}"""),
        new("file reservation", "l", "$JS.API.STREAM.CREATE.F", """{"name":"F","subjects":["f"],"storage":"file","max_bytes":3000}"""),
        new("stream max_consumers above the account's", "l", "$JS.API.STREAM.CREATE.F", """{"name":"F","subjects":["f"],"storage":"file","max_consumers":5}"""),
        new("create", "l", "$JS.API.STREAM.CREATE.F", """{"name":"F","subjects":["f"],"storage":"file"}"""),
        new("max streams", "l", "$JS.API.STREAM.CREATE.G", """{"name":"G","subjects":["g"],"storage":"file"}"""),
        new("consumer", "l", "$JS.API.CONSUMER.DURABLE.CREATE.F.C1", """{"stream_name":"F","config":{"durable_name":"C1","ack_policy":"explicit"}}"""),
        new("max consumers", "l", "$JS.API.CONSUMER.DURABLE.CREATE.F.C2", """{"stream_name":"F","config":{"durable_name":"C2","ack_policy":"explicit"}}"""),
        new("publish 1", "l", "f", Kilobyte),
        new("publish 2", "l", "f", Kilobyte),
        new("publish past max_file", "l", "f", Kilobyte),
        new("unlimited: info", "a", "$JS.API.INFO", ""),
    ];

    private static string Config(string storeDir) => $$"""
        jetstream { store_dir: "{{storeDir}}" }
        accounts {
          A { users [{user: a, password: a}], jetstream: enabled }
          L { users [{user: l, password: l}], jetstream { max_mem: 1000, max_file: 2500, max_streams: 1, max_consumers: 1 } }
          N { users [{user: n, password: n}] }
        }
        """;

    [SkippableFact]
    public async Task Account_JetStream_answers_match_nats_server()
    {
        Prerequisites.RequireGoServer();
        var ours = await RunAsync(ServerKind.Ours);
        var go = await RunAsync(ServerKind.Go);
        var problems = new List<string>();
        for (int i = 0; i < Script.Length; i++)
        {
            var name = Script[i].Name;
            output.WriteLine($"{name}\n  ours: {ours[i]}\n  go:   {go[i]}");
            using var a = JsonDocument.Parse(ours[i]);
            using var b = JsonDocument.Parse(go[i]);
            bool goErr = b.RootElement.TryGetProperty("error", out var ge);
            bool ourErr = a.RootElement.TryGetProperty("error", out var oe);
            if (goErr != ourErr)
            {
                problems.Add($"{name}: error on one side only");
                continue;
            }
            if (goErr)
            {
                foreach (var f in new[] { "code", "err_code", "description" })
                {
                    string g = ge.TryGetProperty(f, out var gv) ? gv.ToString() : "<none>";
                    string o = oe.TryGetProperty(f, out var ov) ? ov.ToString() : "<none>";
                    if (g != o) problems.Add($"{name}: error.{f} ours {o}, go {g}");
                }
            }
            if (b.RootElement.TryGetProperty("type", out var gt) && a.RootElement.TryGetProperty("type", out var ot) && gt.ToString() != ot.ToString())
                problems.Add($"{name}: type ours {ot}, go {gt}");
            // Account info: the limits object must be the same, field by field.
            if (b.RootElement.TryGetProperty("limits", out var gl))
            {
                if (!a.RootElement.TryGetProperty("limits", out var ol))
                {
                    problems.Add($"{name}: no limits in ours");
                    continue;
                }
                foreach (var p in gl.EnumerateObject())
                {
                    string o = ol.TryGetProperty(p.Name, out var ov) ? ov.ToString() : "<none>";
                    if (o != p.Value.ToString()) problems.Add($"{name}: limits.{p.Name} ours {o}, go {p.Value}");
                }
            }
        }
        Assert.True(problems.Count == 0, string.Join("\n", problems));
    }

    private async Task<List<string>> RunAsync(ServerKind kind)
    {
        var dir = Path.Combine(Path.GetTempPath(), "natsbroker-js-tests", Guid.NewGuid().ToString("N"));
        try
        {
            await using var server = await ServerProcess.StartAsync(kind, new ServerStartOptions { Config = Config(dir) }, output);
            var connections = new Dictionary<string, NatsConnection>();
            try
            {
                var answers = new List<string>();
                foreach (var step in Script)
                {
                    if (!connections.TryGetValue(step.User, out var nats))
                    {
                        nats = new NatsConnection(new NatsOpts { Url = server.Url, AuthOpts = new NatsAuthOpts { Username = step.User, Password = step.User } });
                        await nats.ConnectAsync();
                        connections[step.User] = nats;
                    }
                    answers.Add((await AccountJetStreamTests.RequestAsync(nats, step.Subject, step.Body)).GetRawText());
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
