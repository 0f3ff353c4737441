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

    private static readonly (string, string)[] RollupSub = [("Nats-Rollup", "sub")];
    private static readonly (string, string)[] RollupAll = [("Nats-Rollup", "all")];

    /// <summary>
    /// A subject at max_msgs_per_subject with discard_new_per_subject: a plain message is refused (10077), one with
    /// Nats-Rollup is stored and purges the subject's older messages (memstore.go / filestore.go storeRawMsg let
    /// rollups through), on both engines; max_msgs still refuses a rollup on a subject below its limit.
    /// </summary>
    private static readonly JsExchange[] RollupScript =
    [
        new("001 STREAM.CREATE.F", "$JS.API.STREAM.CREATE.F", "{\"name\":\"F\",\"subjects\":[\"f.>\"],\"discard\":\"new\",\"discard_new_per_subject\":true,\"max_msgs_per_subject\":1,\"max_msgs\":3,\"allow_rollup_hdrs\":true}"),
        new("002 f.x", "f.x", "1"),
        new("003 f.x", "f.x", "2"),
        new("004 f.x rollup sub", "f.x", "3") { Headers = RollupSub },
        new("005 f.x rollup all", "f.x", "4") { Headers = RollupAll },
        new("006 f.y", "f.y", "5"),
        new("007 f.z", "f.z", "6"),
        new("008 f.w rollup sub", "f.w", "7") { Headers = RollupSub },
        new("009 STREAM.INFO.F", "$JS.API.STREAM.INFO.F", ""),
        new("010 STREAM.MSG.GET.F", "$JS.API.STREAM.MSG.GET.F", "{\"last_by_subj\":\"f.x\"}"),
        new("011 STREAM.CREATE.M", "$JS.API.STREAM.CREATE.M", "{\"name\":\"M\",\"subjects\":[\"m.>\"],\"storage\":\"memory\",\"discard\":\"new\",\"discard_new_per_subject\":true,\"max_msgs_per_subject\":2,\"allow_rollup_hdrs\":true}"),
        new("012 m.x", "m.x", "1"),
        new("013 m.x", "m.x", "2"),
        new("014 m.x", "m.x", "3"),
        new("015 m.x rollup sub", "m.x", "4") { Headers = RollupSub },
        new("016 m.x", "m.x", "5"),
        new("017 STREAM.INFO.M", "$JS.API.STREAM.INFO.M", ""),
        new("018 STREAM.MSG.GET.M", "$JS.API.STREAM.MSG.GET.M", "{\"last_by_subj\":\"m.x\"}"),
    ];

    [SkippableFact]
    public Task A_rollup_on_a_subject_at_its_limit_is_stored_as_nats_server_stores_it() => MatchAsync(RollupScript);

    private async Task MatchAsync(JsExchange[] script)
    {
        JsApiScript.Require("2.14.5", output);
        var ours = await JsApiScript.RunAsync("ours", script, output);
        var reference = await JsApiScript.RunAsync("2.14.5", script, output);
        var problems = JsApiScript.Compare("2.14.5", script, ours, reference, output);
        Assert.True(problems.Count == 0, string.Join("\n", problems));
    }
}
