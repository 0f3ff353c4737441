using System.Net.Http.Json;
using System.Text.Json;
using System.Text.RegularExpressions;
using NatsBroker.Configuration;
using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Configuration;

/// <summary>
/// Differential: the config digest (/varz config_digest, conf/parse.go configDigest) of the same file, computed by
/// ours and logged by nats-server 2.14.5 ("Using configuration file: ... (sha256:...)").
/// </summary>
public sealed partial class ConfigDigestTests(ITestOutputHelper output)
{
    public static TheoryData<string> Configs => new()
    {
        "port: 4222\n",
        """
        # variables, sizes, durations, floats, booleans, arrays and nested maps
        NAME: "edge-1"
        NOTE: "a <b> & c"
        server_name: $NAME
        max_payload: 2MB
        max_pending: 10MB
        ping_interval: "30s"
        write_deadline: "5s"
        debug: false
        trace: true
        server_tags: ["az:1", "region=eu", "quote\"d"]
        authorization {
          timeout: 1.5
          users: [
            { user: alice, password: "p<a>ss&\tword" }
            { user: carol, password: $NOTE }
            { user: bob, password: s3cret, permissions: { publish: ["a.>", "b.*"], subscribe: { deny: "secret.>" } } }
          ]
        }
        jetstream { enabled: false, max_memory_store: 1G, max_file_store: 10G }
        """,
        """
        accounts: {
          SYS: { users: [ { user: sys, password: sys } ] }
          APP: { jetstream: enabled, users: [ { user: a, password: a } ], exports: [ { service: "svc.>" } ] }
        }
        system_account: SYS
        lame_duck_duration: "2m"
        lame_duck_grace_period: "1s"
        """,
    };

    [SkippableTheory]
    [MemberData(nameof(Configs))]
    public async Task Digest_IsNatsServers(string config)
    {
        var binary = Prerequisites.RequireOracle214(output);
        await using var go = await ServerProcess.StartAsync(ServerKind.Go, new ServerStartOptions { Config = config, GoBinary = binary }, output);
        var logged = LoggedDigest().Match(go.Output);
        Assert.True(logged.Success, "nats-server did not log a digest: " + go.OutputTail());
        var ours = ConfigDigest.Of(ConfigParser.ParseFile(go.ConfigPath));
        output.WriteLine(ConfigDigest.Json(ConfigParser.ParseFile(go.ConfigPath)));
        Assert.Equal(logged.Groups[1].Value, ours);
    }

    [SkippableFact]
    public async Task Varz_ShowsTheDigestOfTheLoadedFile()
    {
        Prerequisites.RequireServer(ServerKind.Ours, output);
        await using var ours = await ServerProcess.StartAsync(ServerKind.Ours, new ServerStartOptions { Config = "server_name: digest\n", Monitoring = true }, output);
        using var http = new HttpClient();
        var varz = await http.GetFromJsonAsync<JsonElement>($"http://127.0.0.1:{ours.MonitorPort}/varz");
        Assert.Equal(ConfigDigest.Of(ConfigParser.ParseFile(ours.ConfigPath)), varz.GetProperty("config_digest").GetString());
        Assert.StartsWith("sha256:", varz.GetProperty("config_digest").GetString(), StringComparison.Ordinal);
    }

    [GeneratedRegex(@"Using configuration file: .* \((sha256:[0-9a-f]{64})\)")]
    private static partial Regex LoggedDigest();
}
