using NatsBroker.Tests.Clients;
using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;

namespace NatsBroker.Tests.JetStream;

/// <summary>JetStream, KV and object store through nats.js 2.29.3 (tests/js/jetstream.mjs), against both servers.</summary>
public sealed class NatsJsJetStreamTests(ITestOutputHelper output)
{
    public static TheoryData<ServerKind, string> Cases()
    {
        var d = new TheoryData<ServerKind, string>();
        foreach (var k in new[] { ServerKind.Ours, ServerKind.Go })
        {
            foreach (var c in new[] { "streams", "consumers", "kv", "objects" }) d.Add(k, c);
        }
        return d;
    }

    [SkippableTheory]
    [MemberData(nameof(Cases))]
    public async Task Scenario(ServerKind kind, string @case)
    {
        NatsJs.Require(kind, output);
        var dir = Path.Combine(Path.GetTempPath(), "natsbroker-js-tests", Guid.NewGuid().ToString("N"));
        try
        {
            await using var s = await ServerProcess.StartAsync(kind, new ServerStartOptions { ExtraArgs = ["-js", "-sd", dir] }, output);
            await NodeClient.RunAndAssertOkAsync("jetstream.mjs", [s.Url], TimeSpan.FromSeconds(30), NatsJs.Env(("CASE", @case)), output);
        }
        finally
        {
            try { Directory.Delete(dir, recursive: true); } catch (IOException) { }
        }
    }
}
