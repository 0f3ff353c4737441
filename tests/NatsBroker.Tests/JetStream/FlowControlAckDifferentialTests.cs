using System.Text;
using NATS.Client.Core;
using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;

namespace NatsBroker.Tests.JetStream;

/// <summary>
/// The 2.14 flow_control ack policy as nats-server 2.14.5 serves it (consumer.go setConsumerConfigDefaults /
/// checkConsumerCfg, needFlowControl, processFlowControl): a valid config is created (not refused 10181), each
/// refusal has its code, and at run time the consumer sends a flow-control request once max_ack_pending is
/// reached, the answer's Nats-Last-Stream / Nats-Last-Consumer ack "all" up to them, nothing is redelivered, the
/// idle heartbeat is followed by a flow-control request while something is pending, and $JS.ACK has no responder.
/// </summary>
public sealed class FlowControlAckDifferentialTests(ITestOutputHelper output)
{
    private static readonly JsExchange[] ConfigScript =
    [
        new("001 STREAM.CREATE.S", "$JS.API.STREAM.CREATE.S", "{\"name\":\"S\",\"subjects\":[\"s.>\"]}"),
        new("002 STREAM.CREATE.WQ", "$JS.API.STREAM.CREATE.WQ", "{\"name\":\"WQ\",\"subjects\":[\"wq.>\"],\"retention\":\"workqueue\"}"),
        new("003 CONSUMER.CREATE.S.F1", "$JS.API.CONSUMER.CREATE.S.F1", "{\"stream_name\":\"S\",\"config\":{\"durable_name\":\"F1\",\"ack_policy\":\"flow_control\",\"deliver_subject\":\"f1\"}}"),
        new("004 CONSUMER.CREATE.S.F2", "$JS.API.CONSUMER.CREATE.S.F2", "{\"stream_name\":\"S\",\"config\":{\"durable_name\":\"F2\",\"ack_policy\":\"flow_control\",\"deliver_subject\":\"f2\",\"max_ack_pending\":5,\"flow_control\":true,\"idle_heartbeat\":1000000000}}"),
        new("005 CONSUMER.CREATE.S.F3", "$JS.API.CONSUMER.CREATE.S.F3", "{\"stream_name\":\"S\",\"config\":{\"durable_name\":\"F3\",\"ack_policy\":\"flow_control\",\"deliver_subject\":\"f3\",\"ack_wait\":5000000000}}"),
        new("006 CONSUMER.CREATE.S.F4", "$JS.API.CONSUMER.CREATE.S.F4", "{\"stream_name\":\"S\",\"config\":{\"durable_name\":\"F4\",\"ack_policy\":\"flow_control\",\"deliver_subject\":\"f4\",\"max_deliver\":3}}"),
        new("007 CONSUMER.CREATE.S.F5", "$JS.API.CONSUMER.CREATE.S.F5", "{\"stream_name\":\"S\",\"config\":{\"durable_name\":\"F5\",\"ack_policy\":\"flow_control\",\"deliver_subject\":\"f5\",\"max_ack_pending\":-1}}"),
        new("008 CONSUMER.CREATE.S.F6", "$JS.API.CONSUMER.CREATE.S.F6", "{\"stream_name\":\"S\",\"config\":{\"durable_name\":\"F6\",\"ack_policy\":\"flow_control\",\"deliver_subject\":\"f6\",\"backoff\":[1000000000]}}"),
        new("009 CONSUMER.CREATE.S.F7", "$JS.API.CONSUMER.CREATE.S.F7", "{\"stream_name\":\"S\",\"config\":{\"durable_name\":\"F7\",\"ack_policy\":\"flow_control\",\"deliver_subject\":\"f7\"},\"pedantic\":true}"),
        new("010 CONSUMER.CREATE.S.F8", "$JS.API.CONSUMER.CREATE.S.F8", "{\"stream_name\":\"S\",\"config\":{\"durable_name\":\"F8\",\"ack_policy\":\"flow_control\",\"deliver_subject\":\"f8\",\"flow_control\":true,\"idle_heartbeat\":2000000000},\"pedantic\":true}"),
        new("011 CONSUMER.CREATE.S.F9", "$JS.API.CONSUMER.CREATE.S.F9", "{\"stream_name\":\"S\",\"config\":{\"durable_name\":\"F9\",\"ack_policy\":\"flow_control\"}}"),
        new("012 CONSUMER.CREATE.WQ.W", "$JS.API.CONSUMER.CREATE.WQ.W", "{\"stream_name\":\"WQ\",\"config\":{\"durable_name\":\"W\",\"ack_policy\":\"flow_control\",\"deliver_subject\":\"w\"}}"),
        new("013 CONSUMER.CREATE.S.F1", "$JS.API.CONSUMER.CREATE.S.F1", "{\"stream_name\":\"S\",\"config\":{\"durable_name\":\"F1\",\"ack_policy\":\"explicit\",\"deliver_subject\":\"f1\",\"flow_control\":true,\"idle_heartbeat\":1000000000}}"),
        new("014 CONSUMER.INFO.S.F1", "$JS.API.CONSUMER.INFO.S.F1", ""),
    ];

    [SkippableFact]
    public async Task Flow_control_ack_configs_match_nats_server()
    {
        JsApiScript.Require("2.14.5", output);
        var ours = await JsApiScript.RunAsync("ours", ConfigScript, output);
        var reference = await JsApiScript.RunAsync("2.14.5", ConfigScript, output);
        var problems = JsApiScript.Compare("2.14.5", ConfigScript, ours, reference, output);
        Assert.True(problems.Count == 0, string.Join("\n", problems));
    }

    [SkippableFact]
    public async Task Flow_control_answers_ack_as_nats_server_does()
    {
        JsApiScript.Require("2.14.5", output);
        var ours = await RunAsync("ours");
        var reference = await RunAsync("2.14.5");
        Assert.Equal(reference.Select(x => x.Name), ours.Select(x => x.Name));
        var script = ours.Select(x => new JsExchange(x.Name, "", "")).ToArray();
        var problems = JsApiScript.Compare("2.14.5", script, [.. ours.Select(x => x.Answer)], [.. reference.Select(x => x.Answer)], output);
        Assert.True(problems.Count == 0, string.Join("\n", problems));
    }

    private async Task<List<(string Name, string Answer)>> RunAsync(string version)
    {
        await using var server = await JsApiScript.StartAsync(version, output);
        await using var nats = new NatsConnection(new NatsOpts { Url = server.Url });
        await nats.ConnectAsync();
        var log = new List<(string, string)>();
        async Task Api(string name, string subject, string body) => log.Add((name, await JsApiScript.RequestAsync(nats, subject, body)));

        await Api("01 stream", "$JS.API.STREAM.CREATE.S", "{\"name\":\"S\",\"subjects\":[\"s.>\"]}");
        for (int i = 1; i <= 3; i++) await Api($"02 s.{i}", $"s.{i}", $"m{i}");
        await using var sub = await nats.SubscribeCoreAsync<byte[]>("fc");
        await nats.PingAsync();
        await Api("03 create", "$JS.API.CONSUMER.CREATE.S.F", "{\"stream_name\":\"S\",\"config\":{\"durable_name\":\"F\",\"ack_policy\":\"flow_control\",\"deliver_subject\":\"fc\",\"max_ack_pending\":2}}");
        string? fcReply = null, lastAck = null;
        async Task Next(string name, int waitMs = 3000)
        {
            using var cts = new CancellationTokenSource(waitMs);
            try
            {
                var m = await sub.Msgs.ReadAsync(cts.Token);
                if (m.Headers?.Code is 100) fcReply = m.ReplyTo ?? fcReply;
                else lastAck = m.ReplyTo;
                var headers = m.Headers is null ? "" : string.Join(",", m.Headers.Select(h => $"{h.Key}={Mask(h.Value.ToString())}"));
                var ack = m.ReplyTo?.Split('.') is { Length: >= 9 } t && t[1] == "ACK" ? $"{t[4]}.{t[5]}.{t[6]}.{t[8]}" : Mask(m.ReplyTo ?? "");
                log.Add((name, $"\"{m.Subject} {Encoding.UTF8.GetString(m.Data ?? [])} {m.Headers?.Code} {m.Headers?.MessageText} [{headers}] {ack}\""));
            }
            catch (OperationCanceledException)
            {
                log.Add((name, "\"none\""));
            }
        }
        await Next("04 first");
        await Next("05 second");
        await Next("06 flow control at max_ack_pending");
        await Next("07 held back by max_ack_pending", 500);
        await Api("08 info before the answer", "$JS.API.CONSUMER.INFO.S.F", "");
        var answer = new NatsHeaders { ["Nats-Last-Consumer"] = "1", ["Nats-Last-Stream"] = "1" };
        await nats.PublishAsync(fcReply ?? "none", Array.Empty<byte>(), headers: answer);
        await Next("09 third after the answer");
        await Api("10 info after the answer", "$JS.API.CONSUMER.INFO.S.F", "");
        log.Add(("11 ack subject", await JsApiScript.RequestAsync(nats, lastAck ?? "none", "+ACK")));
        // Two pending again: another flow-control request, then the heartbeat names it as the one stalled on.
        await Next("12 flow control at max_ack_pending again", 2500);
        await Next("13 heartbeat stalled on it", 2500);
        await nats.PublishAsync(fcReply ?? "none", Array.Empty<byte>(), headers: new NatsHeaders { ["Nats-Last-Consumer"] = "3", ["Nats-Last-Stream"] = "3" });
        await nats.PingAsync();
        await Task.Delay(300);
        await Api("14 info after acking all", "$JS.API.CONSUMER.INFO.S.F", "");
        return log;
    }

    /// <summary>Flow-control subjects end in a random token.</summary>
    private static string Mask(string value) => value.StartsWith("$JS.FC.", StringComparison.Ordinal) ? value[..value.LastIndexOf('.')] + ".*" : value;
}
