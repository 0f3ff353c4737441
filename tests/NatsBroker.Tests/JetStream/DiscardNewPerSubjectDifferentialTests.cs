using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;

namespace NatsBroker.Tests.JetStream;

/// <summary>
/// discard_new_per_subject with max_msgs_per_subject and roll-ups, against nats-server 2.14.5 (stream.go
/// checkStreamCfg / configUpdateCheck: "discard new per subject requires discard new policy to be set" / "... max
/// msgs per subject > 0"; memstore.go storeRawMsg and filestore.go: a subject at its limit refuses a new message
/// with 10077 unless it carries Nats-Rollup).
/// </summary>
public sealed class DiscardNewPerSubjectDifferentialTests(ITestOutputHelper output)
{
    private static readonly JsExchange[] ConfigScript =
    [
        new("001 STREAM.CREATE.A", "$JS.API.STREAM.CREATE.A", "{\"name\":\"A\",\"subjects\":[\"a.>\"],\"discard_new_per_subject\":true,\"max_msgs_per_subject\":1}"),
        new("002 STREAM.CREATE.A", "$JS.API.STREAM.CREATE.A", "{\"name\":\"A\",\"subjects\":[\"a.>\"],\"discard\":\"new\",\"discard_new_per_subject\":true}"),
        new("003 STREAM.CREATE.A", "$JS.API.STREAM.CREATE.A", "{\"name\":\"A\",\"subjects\":[\"a.>\"],\"discard\":\"new\",\"discard_new_per_subject\":true,\"max_msgs_per_subject\":-1}"),
        new("004 STREAM.CREATE.A", "$JS.API.STREAM.CREATE.A", "{\"name\":\"A\",\"subjects\":[\"a.>\"],\"discard\":\"new\",\"discard_new_per_subject\":true,\"max_msgs_per_subject\":1,\"allow_rollup_hdrs\":true}"),
        new("005 STREAM.UPDATE.A", "$JS.API.STREAM.UPDATE.A", "{\"name\":\"A\",\"subjects\":[\"a.>\"],\"discard\":\"new\",\"discard_new_per_subject\":true,\"max_msgs_per_subject\":0,\"allow_rollup_hdrs\":true}"),
        new("006 STREAM.UPDATE.A", "$JS.API.STREAM.UPDATE.A", "{\"name\":\"A\",\"subjects\":[\"a.>\"],\"discard\":\"old\",\"discard_new_per_subject\":true,\"max_msgs_per_subject\":1,\"allow_rollup_hdrs\":true}"),
        new("007 STREAM.UPDATE.A", "$JS.API.STREAM.UPDATE.A", "{\"name\":\"A\",\"subjects\":[\"a.>\"],\"discard\":\"new\",\"max_msgs_per_subject\":1,\"allow_rollup_hdrs\":true}"),
        new("008 STREAM.UPDATE.A", "$JS.API.STREAM.UPDATE.A", "{\"name\":\"A\",\"subjects\":[\"a.>\"],\"discard\":\"new\",\"discard_new_per_subject\":true,\"max_msgs_per_subject\":2,\"allow_rollup_hdrs\":true,\"deny_purge\":true}"),
        new("009 STREAM.CREATE.B", "$JS.API.STREAM.CREATE.B", "{\"name\":\"B\",\"subjects\":[\"b.>\"],\"discard\":\"new\",\"discard_new_per_subject\":true,\"max_msgs_per_subject\":1,\"storage\":\"memory\",\"subject_delete_marker_ttl\":1000000000}"),
        new("010 a.x", "a.x", "1"),
        new("011 a.x", "a.x", "2"),
        new("012 a.y", "a.y", "3"),
        new("013 STREAM.INFO.A", "$JS.API.STREAM.INFO.A", ""),
    ];

    [SkippableFact]
    public Task Discard_new_per_subject_configs_match_nats_server() => MatchAsync(ConfigScript);

    private async Task MatchAsync(JsExchange[] script)
    {
        JsApiScript.Require("2.14.5", output);
        var ours = await JsApiScript.RunAsync("ours", script, output);
        var reference = await JsApiScript.RunAsync("2.14.5", script, output);
        var problems = JsApiScript.Compare("2.14.5", script, ours, reference, output);
        Assert.True(problems.Count == 0, string.Join("\n", problems));
    }
}
