using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;

namespace NatsBroker.Tests.JetStream;

/// <summary>
/// Mirror and source answers and pedantic mode, compared field by field with nats-server 2.14.5 (JsApiScript):
/// STREAM.INFO's mirror / sources entries before the origin exists (active -1, error 10059 "stream not found"),
/// the 2.14 durable-consumer options of a mirror or source (10213 / 10215 / 10216), which mirror updates are refused
/// (10055) and that removing the mirror promotes the stream (default subjects, publishes accepted); and
/// "pedantic": true on stream and consumer creates and updates (10157 instead of a changed default, stream.go
/// checkStreamCfg / consumer.go setConsumerConfigDefaults). Not here: a flow_control ack consumer with a valid
/// config in pedantic mode (nats-server creates it, this server refuses 10181).
/// </summary>
public sealed class SourcingPedanticDifferentialTests(ITestOutputHelper output)
{
    private static readonly JsExchange[] MirrorScript =
    [
        new("001 STREAM.CREATE.O", "$JS.API.STREAM.CREATE.O", "{\"name\":\"O\",\"subjects\":[\"o.>\"]}"),
        new("003 STREAM.CREATE.M", "$JS.API.STREAM.CREATE.M", "{\"name\":\"M\",\"mirror\":{\"name\":\"O\"}}"),
        new("002 o.a", "o.a", "1") { Publish = true },
        new("004 STREAM.CREATE.M2", "$JS.API.STREAM.CREATE.M2", "{\"name\":\"M2\",\"mirror\":{\"name\":\"NOPE\"}}"),
        new("005 STREAM.CREATE.SRC", "$JS.API.STREAM.CREATE.SRC", "{\"name\":\"SRC\",\"subjects\":[\"src\"],\"sources\":[{\"name\":\"NOPE\"}]}"),
        new("006 STREAM.INFO.M", "$JS.API.STREAM.INFO.M", "") { DelayMs = 1500 },
        new("007 STREAM.INFO.M2", "$JS.API.STREAM.INFO.M2", ""),
        new("008 STREAM.INFO.SRC", "$JS.API.STREAM.INFO.SRC", ""),
        new("009 STREAM.UPDATE.M", "$JS.API.STREAM.UPDATE.M", "{\"name\":\"M\",\"mirror\":{\"name\":\"O\"},\"max_msgs\":5}"),
        new("010 STREAM.UPDATE.M", "$JS.API.STREAM.UPDATE.M", "{\"name\":\"M\",\"mirror\":{\"name\":\"O\",\"consumer\":{\"name\":\"x\",\"deliver_subject\":\"y\"}}}"),
        new("011 STREAM.UPDATE.M", "$JS.API.STREAM.UPDATE.M", "{\"name\":\"M\"}"),
        new("012 STREAM.UPDATE.M", "$JS.API.STREAM.UPDATE.M", "{\"name\":\"M\",\"mirror\":{\"name\":\"O\"}}"),
        new("013 M", "M", "2") { Publish = true },
        new("014 STREAM.INFO.M", "$JS.API.STREAM.INFO.M", ""),
        new("015 STREAM.CREATE.M3", "$JS.API.STREAM.CREATE.M3", "{\"name\":\"M3\",\"mirror\":{\"name\":\"O\",\"consumer\":{\"name\":\"x\"}}}"),
        new("016 STREAM.CREATE.M4", "$JS.API.STREAM.CREATE.M4", "{\"name\":\"M4\",\"mirror\":{\"name\":\"O\",\"consumer\":{\"deliver_subject\":\"x\"}}}"),
        new("017 STREAM.CREATE.M4", "$JS.API.STREAM.CREATE.M4", "{\"name\":\"M4\",\"mirror\":{\"name\":\"O\",\"consumer\":{\"name\":\"x\",\"deliver_subject\":\"x.*\"}}}"),
        new("018 STREAM.CREATE.M4", "$JS.API.STREAM.CREATE.M4", "{\"name\":\"M4\",\"mirror\":{\"name\":\"O\",\"opt_start_seq\":2,\"consumer\":{\"name\":\"x\",\"deliver_subject\":\"x\"}}}"),
        new("019 STREAM.CREATE.M4", "$JS.API.STREAM.CREATE.M4", "{\"name\":\"M4\",\"mirror\":{\"name\":\"O\",\"filter_subject\":\"o.a\",\"consumer\":{\"name\":\"x\",\"deliver_subject\":\"x\"}}}"),
        new("020 STREAM.CREATE.M4", "$JS.API.STREAM.CREATE.M4", "{\"name\":\"M4\",\"mirror\":{\"name\":\"O\",\"filter_subject\":\"o.a\",\"subject_transforms\":[{\"src\":\"o.b\",\"dest\":\"x\"}],\"consumer\":{\"name\":\"x\",\"deliver_subject\":\"x\"}}}"),
        new("021 STREAM.CREATE.M5", "$JS.API.STREAM.CREATE.M5", "{\"name\":\"M5\",\"subjects\":[\"m5\"],\"sources\":[{\"name\":\"O\",\"consumer\":{\"name\":\"x\"}}]}"),
        new("022 STREAM.CREATE.M6", "$JS.API.STREAM.CREATE.M6", "{\"name\":\"M6\",\"subjects\":[\"m6\"],\"sources\":[{\"name\":\"O\",\"subject_transforms\":[{\"src\":\"o.a\",\"dest\":\"x\"}],\"consumer\":{\"name\":\"x\",\"deliver_subject\":\"d1\"}},{\"name\":\"O\",\"subject_transforms\":[{\"src\":\"o.b\",\"dest\":\"y\"}],\"consumer\":{\"name\":\"x\",\"deliver_subject\":\"d2\"}}]}"),
        new("023 STREAM.CREATE.M7", "$JS.API.STREAM.CREATE.M7", "{\"name\":\"M7\",\"subjects\":[\"m7\"],\"sources\":[{\"name\":\"O\",\"opt_start_time\":\"2020-01-01T00:00:00Z\",\"consumer\":{\"name\":\"x\",\"deliver_subject\":\"d1\"}}]}"),
        new("024 STREAM.CREATE.M8", "$JS.API.STREAM.CREATE.M8", "{\"name\":\"M8\",\"subjects\":[\"m8\"],\"sources\":[{\"name\":\"O\",\"consumer\":{\"name\":\"a.b\",\"deliver_subject\":\"d1\"}}]}"),
    ];

    private static readonly JsExchange[] PedanticScript =
    [
        new("001 STREAM.CREATE.O", "$JS.API.STREAM.CREATE.O", "{\"name\":\"O\",\"subjects\":[\"o.>\"],\"allow_direct\":true}"),
        new("002 STREAM.CREATE.P1", "$JS.API.STREAM.CREATE.P1", "{\"name\":\"P1\",\"subjects\":[\"p1\"],\"max_msgs\":-2,\"pedantic\":true}"),
        new("003 STREAM.CREATE.P2", "$JS.API.STREAM.CREATE.P2", "{\"name\":\"P2\",\"subjects\":[\"p2\"],\"max_bytes\":-2,\"pedantic\":true}"),
        new("004 STREAM.CREATE.P3", "$JS.API.STREAM.CREATE.P3", "{\"name\":\"P3\",\"subjects\":[\"p3\"],\"max_msgs_per_subject\":-5,\"pedantic\":true}"),
        new("005 STREAM.CREATE.P4", "$JS.API.STREAM.CREATE.P4", "{\"name\":\"P4\",\"subjects\":[\"p4\"],\"max_msg_size\":-5,\"pedantic\":true}"),
        new("006 STREAM.CREATE.P5", "$JS.API.STREAM.CREATE.P5", "{\"name\":\"P5\",\"subjects\":[\"p5\"],\"max_consumers\":-5,\"pedantic\":true}"),
        new("007 STREAM.CREATE.P6", "$JS.API.STREAM.CREATE.P6", "{\"name\":\"P6\",\"subjects\":[\"p6\"],\"max_age\":1000000000,\"pedantic\":true}"),
        new("008 STREAM.CREATE.P7", "$JS.API.STREAM.CREATE.P7", "{\"name\":\"P7\",\"subjects\":[\"p7\"],\"max_age\":1000000000,\"duplicate_window\":500000000,\"pedantic\":true}"),
        new("009 STREAM.CREATE.P8", "$JS.API.STREAM.CREATE.P8", "{\"name\":\"P8\",\"mirror\":{\"name\":\"O\"},\"pedantic\":true}"),
        new("010 STREAM.CREATE.P9", "$JS.API.STREAM.CREATE.P9", "{\"name\":\"P9\",\"mirror\":{\"name\":\"O\"},\"mirror_direct\":true,\"pedantic\":true}"),
        new("011 STREAM.CREATE.P10", "$JS.API.STREAM.CREATE.P10", "{\"name\":\"P10\",\"subjects\":[\"p10\"],\"republish\":{\"dest\":\"rp.>\"},\"pedantic\":true}"),
        new("012 STREAM.CREATE.P11", "$JS.API.STREAM.CREATE.P11", "{\"name\":\"P11\",\"subjects\":[\"p11.>\"],\"subject_transform\":{\"src\":\"p11.>\",\"dest\":\"q11.>\"},\"republish\":{\"src\":\">\",\"dest\":\">\"},\"pedantic\":true}"),
        new("013 STREAM.CREATE.P12", "$JS.API.STREAM.CREATE.P12", "{\"name\":\"P12\",\"subjects\":[\"p12\"],\"max_msgs\":-2,\"pedantic\":false}"),
        new("014 STREAM.CREATE.P13", "$JS.API.STREAM.CREATE.P13", "{\"name\":\"P13\",\"subjects\":[\"p13\"],\"max_msgs\":-2}"),
        new("015 STREAM.UPDATE.P13", "$JS.API.STREAM.UPDATE.P13", "{\"name\":\"P13\",\"subjects\":[\"p13\"],\"max_msgs\":-2,\"pedantic\":true}"),
        new("016 STREAM.CREATE.P14", "$JS.API.STREAM.CREATE.P14", "{\"name\":\"P14\",\"subjects\":[\"p14\"],\"consumer_limits\":{\"max_ack_pending\":10,\"inactive_threshold\":5000000000}}"),
        new("017 CONSUMER.CREATE.O.Q1", "$JS.API.CONSUMER.CREATE.O.Q1", "{\"stream_name\":\"O\",\"config\":{\"durable_name\":\"Q1\",\"max_deliver\":-2},\"pedantic\":true}"),
        new("018 CONSUMER.CREATE.O.Q2", "$JS.API.CONSUMER.CREATE.O.Q2", "{\"stream_name\":\"O\",\"config\":{\"durable_name\":\"Q2\",\"max_waiting\":-2},\"pedantic\":true}"),
        new("019 CONSUMER.CREATE.O.Q3", "$JS.API.CONSUMER.CREATE.O.Q3", "{\"stream_name\":\"O\",\"config\":{\"durable_name\":\"Q3\",\"max_ack_pending\":-2},\"pedantic\":true}"),
        new("020 CONSUMER.CREATE.O.Q4", "$JS.API.CONSUMER.CREATE.O.Q4", "{\"stream_name\":\"O\",\"config\":{\"durable_name\":\"Q4\",\"max_batch\":-2},\"pedantic\":true}"),
        new("021 CONSUMER.CREATE.O.Q5", "$JS.API.CONSUMER.CREATE.O.Q5", "{\"stream_name\":\"O\",\"config\":{\"durable_name\":\"Q5\",\"max_expires\":-2},\"pedantic\":true}"),
        new("022 CONSUMER.CREATE.O.Q6", "$JS.API.CONSUMER.CREATE.O.Q6", "{\"stream_name\":\"O\",\"config\":{\"durable_name\":\"Q6\",\"max_bytes\":-2},\"pedantic\":true}"),
        new("023 CONSUMER.CREATE.O.Q7", "$JS.API.CONSUMER.CREATE.O.Q7", "{\"stream_name\":\"O\",\"config\":{\"durable_name\":\"Q7\",\"idle_heartbeat\":-2},\"pedantic\":true}"),
        new("024 CONSUMER.CREATE.O.Q8", "$JS.API.CONSUMER.CREATE.O.Q8", "{\"stream_name\":\"O\",\"config\":{\"durable_name\":\"Q8\",\"inactive_threshold\":-2},\"pedantic\":true}"),
        new("025 CONSUMER.CREATE.O.Q9", "$JS.API.CONSUMER.CREATE.O.Q9", "{\"stream_name\":\"O\",\"config\":{\"durable_name\":\"Q9\",\"priority_timeout\":-2},\"pedantic\":true}"),
        new("026 CONSUMER.CREATE.O.Q10", "$JS.API.CONSUMER.CREATE.O.Q10", "{\"stream_name\":\"O\",\"config\":{\"durable_name\":\"Q10\",\"ack_policy\":\"explicit\",\"backoff\":[1000000000]},\"pedantic\":true}"),
        new("027 CONSUMER.CREATE.O.Q11", "$JS.API.CONSUMER.CREATE.O.Q11", "{\"stream_name\":\"O\",\"config\":{\"durable_name\":\"Q11\",\"ack_policy\":\"explicit\",\"ack_wait\":1000000000,\"backoff\":[1000000000]},\"pedantic\":true}"),
        new("028 CONSUMER.CREATE.P14.Q12", "$JS.API.CONSUMER.CREATE.P14.Q12", "{\"stream_name\":\"P14\",\"config\":{\"durable_name\":\"Q12\",\"ack_policy\":\"explicit\"},\"pedantic\":true}"),
        new("029 CONSUMER.CREATE.P14.Q13", "$JS.API.CONSUMER.CREATE.P14.Q13", "{\"stream_name\":\"P14\",\"config\":{\"durable_name\":\"Q13\",\"ack_policy\":\"explicit\",\"max_ack_pending\":5},\"pedantic\":true}"),
        new("030 CONSUMER.CREATE.P14.Q14", "$JS.API.CONSUMER.CREATE.P14.Q14", "{\"stream_name\":\"P14\",\"config\":{\"durable_name\":\"Q14\",\"ack_policy\":\"explicit\",\"max_ack_pending\":5,\"inactive_threshold\":1000000000},\"pedantic\":true}"),
        new("031 CONSUMER.CREATE.O.Q15", "$JS.API.CONSUMER.CREATE.O.Q15", "{\"stream_name\":\"O\",\"config\":{\"durable_name\":\"Q15\",\"deliver_subject\":\"dq15\",\"ack_policy\":\"flow_control\"},\"pedantic\":true}"),
        new("032 CONSUMER.CREATE.O.Q17", "$JS.API.CONSUMER.CREATE.O.Q17", "{\"stream_name\":\"O\",\"config\":{\"durable_name\":\"Q17\",\"max_deliver\":-2},\"pedantic\":false}"),
        new("033 CONSUMER.CREATE.O.Q18", "$JS.API.CONSUMER.CREATE.O.Q18", "{\"stream_name\":\"O\",\"config\":{\"durable_name\":\"Q18\",\"ack_policy\":\"explicit\"},\"pedantic\":true}"),
    ];

    [SkippableFact]
    public Task Mirror_and_source_answers_match_nats_server_2_14() => MatchAsync(MirrorScript);

    [SkippableFact]
    public Task Pedantic_mode_refuses_changed_defaults_as_nats_server_2_14() => MatchAsync(PedanticScript);

    private async Task MatchAsync(JsExchange[] script)
    {
        JsApiScript.Require("2.14.5", output);
        var ours = await JsApiScript.RunAsync("ours", script, output);
        var reference = await JsApiScript.RunAsync("2.14.5", script, output);
        var problems = JsApiScript.Compare("2.14.5", script, ours, reference, output);
        Assert.True(problems.Count == 0, string.Join("\n", problems));
    }
}
