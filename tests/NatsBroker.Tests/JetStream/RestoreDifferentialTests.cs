using System.Text.Json.Nodes;
using NATS.Client.Core;
using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;

namespace NatsBroker.Tests.JetStream;

/// <summary>
/// Restores racing for one name, as nats-server 2.14.5 answers them (jetstream_api.go jsStreamRestoreRequest,
/// stream.go RestoreStream): the name is not held while a restore reads, so a second restore request and a create are
/// accepted, and the restore that ends after the name was taken fails with 10130 in its stream_create_response.
/// Each server restores its own snapshot (the formats differ); the answers are compared field by field.
/// </summary>
public sealed class RestoreDifferentialTests(ITestOutputHelper output)
{
    [SkippableFact]
    public async Task Concurrent_restores_and_a_create_of_one_name_match_nats_server()
    {
        JsApiScript.Require("2.14.5", output);
        var ours = await RunAsync("ours");
        var reference = await RunAsync("2.14.5");
        Assert.Equal(reference.Select(x => x.Name), ours.Select(x => x.Name));
        var script = ours.Select(x => new JsExchange(x.Name, "", "") { RandomName = true }).ToArray();
        var problems = JsApiScript.Compare("2.14.5", script, [.. ours.Select(x => x.Answer)], [.. reference.Select(x => x.Answer)], output);
        Assert.True(problems.Count == 0, string.Join("\n", problems));
    }

    private async Task<List<(string Name, string Answer)>> RunAsync(string version)
    {
        await using var server = await JsApiScript.StartAsync(version, output);
        await using var nats = new NatsConnection(new NatsOpts { Url = server.Url });
        await nats.ConnectAsync();
        using var cts = new CancellationTokenSource(TimeSpan.FromSeconds(60));
        var ct = cts.Token;
        var log = new List<(string, string)>();
        const string create = "{\"name\":\"S\",\"subjects\":[\"s.>\"]}";
        await JsApiScript.RequestAsync(nats, "$JS.API.STREAM.CREATE.S", create);
        for (int i = 0; i < 5; i++) await nats.PublishAsync($"s.{i}", System.Text.Encoding.UTF8.GetBytes($"m{i}"), cancellationToken: ct);
        await nats.PingAsync(ct);
        var backup = await SnapshotClient.BackupAsync(nats, "S", ct: ct);
        Assert.True(backup.Data.Length > 0, SnapshotClient.Describe(backup.Response));
        await JsApiScript.RequestAsync(nats, "$JS.API.STREAM.DELETE.S", "");
        // The restore request's config as a client sends it: the name and subjects (the rest defaults).
        var config = JsonNode.Parse(create)!;

        var first = await SnapshotClient.RestoreRequestAsync(nats, "S", config, null, ct);
        log.Add(("01 first restore", first.ToJsonString()));
        var second = await SnapshotClient.RestoreRequestAsync(nats, "S", config, null, ct);
        log.Add(("02 second restore of the same name", second.ToJsonString()));
        var done = await SnapshotClient.SendRestoreDataAsync(nats, second["deliver_subject"]!.GetValue<string>(), backup.Data, ct);
        log.Add(("03 second restore's end", Summary(done)));
        var late = await SnapshotClient.SendRestoreDataAsync(nats, first["deliver_subject"]!.GetValue<string>(), backup.Data, ct);
        log.Add(("04 first restore's end", Summary(late)));
        log.Add(("05 restore of an existing stream", (await SnapshotClient.RestoreRequestAsync(nats, "S", config, null, ct)).ToJsonString()));

        await JsApiScript.RequestAsync(nats, "$JS.API.STREAM.DELETE.S", "");
        var third = await SnapshotClient.RestoreRequestAsync(nats, "S", config, null, ct);
        log.Add(("06 restore again", third.ToJsonString()));
        log.Add(("07 create while it reads", Summary(JsonNode.Parse(await JsApiScript.RequestAsync(nats, "$JS.API.STREAM.CREATE.S", create))!.AsObject())));
        var refused = await SnapshotClient.SendRestoreDataAsync(nats, third["deliver_subject"]!.GetValue<string>(), backup.Data, ct);
        log.Add(("08 its end", Summary(refused)));
        log.Add(("09 the created stream", Summary(JsonNode.Parse(await JsApiScript.RequestAsync(nats, "$JS.API.STREAM.INFO.S", ""))!.AsObject())));
        return log;
    }

    /// <summary>An answer's type and error, or its stream state's message figures (the configs differ by version in places).</summary>
    private static string Summary(JsonObject answer)
    {
        var o = new JsonObject { ["type"] = answer["type"]?.DeepClone() };
        if (answer["error"] is { } e) o["error"] = e.DeepClone();
        if (answer["state"] is { } s)
        {
            o["messages"] = s["messages"]?.DeepClone();
            o["first_seq"] = s["first_seq"]?.DeepClone();
            o["last_seq"] = s["last_seq"]?.DeepClone();
        }
        return o.ToJsonString();
    }
}
