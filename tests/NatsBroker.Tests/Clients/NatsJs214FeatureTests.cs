using System.Text.Json;
using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Clients;

/// <summary>
/// nats.js 3.x enables batch direct get and priority groups only for a server that announces 2.11+, and consumer
/// reset only for 2.14+ (nats-core semver.ts Features): tests/js/features214.mjs uses all three against ours and
/// nats-server 2.14.5, and what each records (messages, sequences, the reset answer) must be the same.
/// </summary>
public sealed class NatsJs214FeatureTests(ITestOutputHelper output)
{
    [SkippableFact]
    public async Task Features_gated_on_2_11_and_2_14_work_as_on_nats_server()
    {
        Prerequisites.RequireNode(output);
        var oracle = Prerequisites.RequireOracle214(output);
        var results = new Dictionary<ServerKind, string>();
        var dir = Directory.CreateTempSubdirectory("js214-");
        try
        {
            foreach (var (kind, binary) in new[] { (ServerKind.Ours, (string?)null), (ServerKind.Go, oracle) })
            {
                var options = new ServerStartOptions { ExtraArgs = ["-js", "-sd", Path.Combine(dir.FullName, kind.ToString())], GoBinary = binary };
                await using var s = await ServerProcess.StartAsync(kind, options, output);
                var r = await NodeClient.RunAndAssertOkAsync("features214.mjs", [s.Url], TimeSpan.FromSeconds(45), log: output);
                results[kind] = Figures(r);
                output.WriteLine($"{kind}: {results[kind]}");
            }
        }
        finally
        {
            dir.Delete(recursive: true);
        }
        Assert.Equal(results[ServerKind.Go], results[ServerKind.Ours]);
    }

    // The recorded figures, without the check count and the done/ok envelope.
    private static string Figures(JsonElement result) => string.Join("\n", result.EnumerateObject()
        .Where(p => p.Name is not ("done" or "ok" or "checks" or "failures"))
        .Select(p => $"{p.Name}={p.Value.GetRawText()}"));
}
