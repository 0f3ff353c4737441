using System.Text;
using NATS.Client.Core;
using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;

namespace NatsBroker.Tests.JetStream;

/// <summary>
/// Consumer updates as nats-server 2.14.5 makes them (consumer.go checkNewConsumerConfig / updateConfig), the same
/// raw $JS.API requests against ours and 2.14.5 with every answer compared field by field (JsApiScript): what may
/// not change (each with its 10012 text), what may (filter_subject / filter_subjects, deliver_subject of a push
/// consumer nobody listens to, deliver_group, headers_only, rate_limit_bps, ack_wait, max_deliver, backoff, ...),
/// and that the change takes effect: a new filter selects the next messages and num_pending is recounted, a new
/// deliver subject receives the deliveries, and the old one, while listened to, keeps the consumer (10013).
/// </summary>
public sealed class ConsumerUpdateDifferentialTests(ITestOutputHelper output)
{
    private const string Stream = "{\"name\":\"S\",\"subjects\":[\"s.>\"]}";
    private const string NoWait = "{\"batch\":1,\"no_wait\":true}";

    /// <summary>A pull consumer's filters changed back and forth, with deliveries and info after each change.</summary>
    private static readonly JsExchange[] PullFilterScript =
    [
        new("001 STREAM.CREATE.S", "$JS.API.STREAM.CREATE.S", Stream),
        new("002 s.a", "s.a", "a1") { Publish = true },
        new("003 s.b", "s.b", "b1") { Publish = true },
        new("004 s.c", "s.c", "c1") { Publish = true },
        new("005 CONSUMER.CREATE.S.P", "$JS.API.CONSUMER.CREATE.S.P", "{\"stream_name\":\"S\",\"config\":{\"durable_name\":\"P\",\"filter_subject\":\"s.a\"}}"),
        new("006 MSG.NEXT.S.P", "$JS.API.CONSUMER.MSG.NEXT.S.P", NoWait),
        new("007 MSG.NEXT.S.P", "$JS.API.CONSUMER.MSG.NEXT.S.P", NoWait),
        new("008 CONSUMER.CREATE.S.P", "$JS.API.CONSUMER.CREATE.S.P", "{\"stream_name\":\"S\",\"config\":{\"durable_name\":\"P\",\"filter_subject\":\"s.b\"}}"),
        new("009 s.a", "s.a", "a2") { Publish = true },
        new("010 s.b", "s.b", "b2") { Publish = true },
        new("011 CONSUMER.INFO.S.P", "$JS.API.CONSUMER.INFO.S.P", ""),
        new("012 MSG.NEXT.S.P", "$JS.API.CONSUMER.MSG.NEXT.S.P", NoWait),
        new("013 MSG.NEXT.S.P", "$JS.API.CONSUMER.MSG.NEXT.S.P", NoWait),
        new("014 CONSUMER.CREATE.S.P", "$JS.API.CONSUMER.CREATE.S.P", "{\"stream_name\":\"S\",\"config\":{\"durable_name\":\"P\",\"filter_subjects\":[\"s.a\",\"s.c\"]}}"),
        new("015 s.c", "s.c", "c2") { Publish = true },
        new("016 s.b", "s.b", "b3") { Publish = true },
        new("017 s.a", "s.a", "a3") { Publish = true },
        new("018 CONSUMER.INFO.S.P", "$JS.API.CONSUMER.INFO.S.P", ""),
        new("019 MSG.NEXT.S.P", "$JS.API.CONSUMER.MSG.NEXT.S.P", NoWait),
        new("020 MSG.NEXT.S.P", "$JS.API.CONSUMER.MSG.NEXT.S.P", NoWait),
        new("021 MSG.NEXT.S.P", "$JS.API.CONSUMER.MSG.NEXT.S.P", NoWait),
        new("022 CONSUMER.CREATE.S.P", "$JS.API.CONSUMER.CREATE.S.P", "{\"stream_name\":\"S\",\"config\":{\"durable_name\":\"P\"}}"),
        new("023 CONSUMER.INFO.S.P", "$JS.API.CONSUMER.INFO.S.P", ""),
        new("024 MSG.NEXT.S.P", "$JS.API.CONSUMER.MSG.NEXT.S.P", NoWait),
        new("025 CONSUMER.CREATE.S.P", "$JS.API.CONSUMER.CREATE.S.P", "{\"stream_name\":\"S\",\"config\":{\"durable_name\":\"P\",\"filter_subject\":\"s.*\"},\"action\":\"update\"}"),
        new("026 CONSUMER.CREATE.S.P", "$JS.API.CONSUMER.CREATE.S.P", "{\"stream_name\":\"S\",\"config\":{\"durable_name\":\"P\",\"filter_subject\":\"s.a\"},\"action\":\"create\"}"),
        new("027 CONSUMER.CREATE.S.P", "$JS.API.CONSUMER.CREATE.S.P", "{\"stream_name\":\"S\",\"config\":{\"durable_name\":\"P\",\"filter_subjects\":[\"s.a\",\"s.*\"]}}"),
        new("028 CONSUMER.INFO.S.P", "$JS.API.CONSUMER.INFO.S.P", ""),
    ];

    /// <summary>Each field checkNewConsumerConfig refuses, in its order, and the ones it lets through.</summary>
    private static readonly JsExchange[] FieldsScript =
    [
        new("001 STREAM.CREATE.S", "$JS.API.STREAM.CREATE.S", Stream),
        new("002 CONSUMER.CREATE.S.E", "$JS.API.CONSUMER.CREATE.S.E", "{\"stream_name\":\"S\",\"config\":{\"durable_name\":\"E\",\"ack_policy\":\"explicit\",\"max_deliver\":5}}"),
        new("003 CONSUMER.CREATE.S.E", "$JS.API.CONSUMER.CREATE.S.E", "{\"stream_name\":\"S\",\"config\":{\"durable_name\":\"E\",\"ack_policy\":\"explicit\",\"deliver_policy\":\"new\"}}"),
        new("004 CONSUMER.CREATE.S.E", "$JS.API.CONSUMER.CREATE.S.E", "{\"stream_name\":\"S\",\"config\":{\"durable_name\":\"E\",\"ack_policy\":\"all\",\"max_deliver\":5}}"),
        new("005 CONSUMER.CREATE.S.E", "$JS.API.CONSUMER.CREATE.S.E", "{\"stream_name\":\"S\",\"config\":{\"durable_name\":\"E\",\"ack_policy\":\"explicit\",\"max_deliver\":5,\"replay_policy\":\"original\"}}"),
        new("006 CONSUMER.CREATE.S.E", "$JS.API.CONSUMER.CREATE.S.E", "{\"stream_name\":\"S\",\"config\":{\"durable_name\":\"E\",\"ack_policy\":\"explicit\",\"max_deliver\":5,\"max_waiting\":7}}"),
        new("007 CONSUMER.CREATE.S.E", "$JS.API.CONSUMER.CREATE.S.E", "{\"stream_name\":\"S\",\"config\":{\"durable_name\":\"E\",\"ack_policy\":\"explicit\",\"max_deliver\":5,\"mem_storage\":true}}"),
        new("008 CONSUMER.CREATE.S.E", "$JS.API.CONSUMER.CREATE.S.E", "{\"stream_name\":\"S\",\"config\":{\"durable_name\":\"E\",\"ack_policy\":\"explicit\",\"max_deliver\":1,\"backoff\":[1000000000,2000000000]}}"),
        new("009 CONSUMER.CREATE.S.E", "$JS.API.CONSUMER.CREATE.S.E", "{\"stream_name\":\"S\",\"config\":{\"durable_name\":\"E\",\"ack_policy\":\"explicit\",\"max_deliver\":5,\"backoff\":[1000000000,2000000000],\"max_ack_pending\":9,\"description\":\"d\",\"metadata\":{\"k\":\"v\"},\"sample_freq\":\"50%\",\"max_batch\":3,\"max_expires\":2000000000,\"inactive_threshold\":9000000000}}"),
        new("010 CONSUMER.CREATE.S.E", "$JS.API.CONSUMER.CREATE.S.E", "{\"stream_name\":\"S\",\"config\":{\"durable_name\":\"E\",\"ack_policy\":\"explicit\",\"ack_wait\":4000000000}}"),
        new("011 CONSUMER.CREATE.S.E", "$JS.API.CONSUMER.CREATE.S.E", "{\"stream_name\":\"S\",\"config\":{\"durable_name\":\"E\",\"ack_policy\":\"explicit\",\"deliver_subject\":\"de\"}}"),
        new("012 CONSUMER.CREATE.S.H", "$JS.API.CONSUMER.CREATE.S.H", "{\"stream_name\":\"S\",\"config\":{\"durable_name\":\"H\",\"deliver_subject\":\"dh\",\"ack_policy\":\"explicit\",\"idle_heartbeat\":2000000000,\"flow_control\":true}}"),
        new("013 CONSUMER.CREATE.S.H", "$JS.API.CONSUMER.CREATE.S.H", "{\"stream_name\":\"S\",\"config\":{\"durable_name\":\"H\",\"deliver_subject\":\"dh\",\"ack_policy\":\"explicit\",\"idle_heartbeat\":3000000000,\"flow_control\":true}}"),
        new("014 CONSUMER.CREATE.S.H", "$JS.API.CONSUMER.CREATE.S.H", "{\"stream_name\":\"S\",\"config\":{\"durable_name\":\"H\",\"deliver_subject\":\"dh\",\"ack_policy\":\"explicit\",\"idle_heartbeat\":2000000000}}"),
        new("015 CONSUMER.CREATE.S.H", "$JS.API.CONSUMER.CREATE.S.H", "{\"stream_name\":\"S\",\"config\":{\"durable_name\":\"H\",\"ack_policy\":\"explicit\",\"idle_heartbeat\":2000000000,\"flow_control\":true}}"),
        new("016 CONSUMER.CREATE.S.H", "$JS.API.CONSUMER.CREATE.S.H", "{\"stream_name\":\"S\",\"config\":{\"durable_name\":\"H\",\"deliver_subject\":\"dh2\",\"deliver_group\":\"q\",\"headers_only\":true,\"rate_limit_bps\":80000,\"ack_policy\":\"explicit\",\"idle_heartbeat\":2000000000,\"flow_control\":true,\"filter_subject\":\"s.x\"}}"),
        new("017 CONSUMER.INFO.S.H", "$JS.API.CONSUMER.INFO.S.H", ""),
        new("018 CONSUMER.CREATE.S.H", "$JS.API.CONSUMER.CREATE.S.H", "{\"stream_name\":\"S\",\"config\":{\"durable_name\":\"H\",\"deliver_subject\":\"dh2\",\"ack_policy\":\"explicit\",\"idle_heartbeat\":2000000000,\"flow_control\":true,\"filter_subject\":\"s.x\",\"deliver_policy\":\"last\"}}"),
        new("019 CONSUMER.CREATE.S.H", "$JS.API.CONSUMER.CREATE.S.H", "{\"stream_name\":\"S\",\"config\":{\"durable_name\":\"H\",\"deliver_subject\":\"s.loop\",\"ack_policy\":\"explicit\",\"idle_heartbeat\":2000000000,\"flow_control\":true}}"),
        new("020 CONSUMER.CREATE.S.T", "$JS.API.CONSUMER.CREATE.S.T", "{\"stream_name\":\"S\",\"config\":{\"durable_name\":\"T\",\"deliver_policy\":\"by_start_time\",\"opt_start_time\":\"2020-01-01T00:00:00Z\"}}"),
        new("021 CONSUMER.CREATE.S.T", "$JS.API.CONSUMER.CREATE.S.T", "{\"stream_name\":\"S\",\"config\":{\"durable_name\":\"T\",\"deliver_policy\":\"by_start_time\",\"opt_start_time\":\"2020-01-01T00:00:01Z\"}}"),
        new("022 CONSUMER.CREATE.S.T", "$JS.API.CONSUMER.CREATE.S.T", "{\"stream_name\":\"S\",\"config\":{\"durable_name\":\"T\",\"deliver_policy\":\"by_start_sequence\",\"opt_start_seq\":1}}"),
        new("023 CONSUMER.CREATE.S.Q", "$JS.API.CONSUMER.CREATE.S.Q", "{\"stream_name\":\"S\",\"config\":{\"durable_name\":\"Q\",\"deliver_policy\":\"by_start_sequence\",\"opt_start_seq\":1}}"),
        new("024 CONSUMER.CREATE.S.Q", "$JS.API.CONSUMER.CREATE.S.Q", "{\"stream_name\":\"S\",\"config\":{\"durable_name\":\"Q\",\"deliver_policy\":\"by_start_sequence\",\"opt_start_seq\":2}}"),
    ];

    [SkippableFact]
    public Task Filter_updates_select_the_next_messages_as_nats_server_does() => MatchAsync(PullFilterScript);

    [SkippableFact]
    public Task Updatable_and_fixed_fields_match_nats_server() => MatchAsync(FieldsScript);

    /// <summary>
    /// A push consumer moved to a new deliver subject while nobody listens to the old one; the new one receives
    /// (with the updated headers_only); while it is listened to, another move is refused (10013); a filter change
    /// on the bound consumer selects the next message.
    /// </summary>
    [SkippableFact]
    public async Task A_push_consumer_moves_to_a_new_deliver_subject_as_nats_server_does()
    {
        JsApiScript.Require("2.14.5", output);
        var ours = await RunPushAsync("ours");
        var reference = await RunPushAsync("2.14.5");
        var script = ours.Select(x => new JsExchange(x.Name, "", "")).ToArray();
        Assert.Equal(reference.Select(x => x.Name), ours.Select(x => x.Name));
        var problems = JsApiScript.Compare("2.14.5", script, [.. ours.Select(x => x.Answer)], [.. reference.Select(x => x.Answer)], output);
        Assert.True(problems.Count == 0, string.Join("\n", problems));
    }

    private async Task<List<(string Name, string Answer)>> RunPushAsync(string version)
    {
        await using var server = await JsApiScript.StartAsync(version, output);
        await using var nats = new NatsConnection(new NatsOpts { Url = server.Url });
        await nats.ConnectAsync();
        var log = new List<(string, string)>();
        async Task Api(string name, string subject, string body) => log.Add((name, await JsApiScript.RequestAsync(nats, subject, body)));
        const string push = "\"durable_name\":\"H\",\"ack_policy\":\"explicit\",\"ack_wait\":30000000000";

        await Api("01 stream", "$JS.API.STREAM.CREATE.S", Stream);
        await Api("01 s.a", "s.a", "x1");
        await Api("02 create on d1", "$JS.API.CONSUMER.CREATE.S.H", $"{{\"stream_name\":\"S\",\"config\":{{{push},\"deliver_subject\":\"d1\",\"filter_subject\":\"s.a\"}}}}");
        await Api("03 move to d2", "$JS.API.CONSUMER.CREATE.S.H", $"{{\"stream_name\":\"S\",\"config\":{{{push},\"deliver_subject\":\"d2\",\"filter_subject\":\"s.a\",\"headers_only\":true}}}}");
        await using (var d2 = await nats.SubscribeCoreAsync<byte[]>("d2"))
        {
            log.Add(("04 delivery on d2", await NextAsync(d2)));
            await Api("05 info bound", "$JS.API.CONSUMER.INFO.S.H", "");
            await using (var d1 = await nats.SubscribeCoreAsync<byte[]>("d1"))
            {
                await nats.PingAsync();
                await Api("06 move to d3 (d2 listened to)", "$JS.API.CONSUMER.CREATE.S.H", $"{{\"stream_name\":\"S\",\"config\":{{{push},\"deliver_subject\":\"d3\",\"filter_subject\":\"s.a\",\"headers_only\":true}}}}");
                await Api("07 filter s.b, headers", "$JS.API.CONSUMER.CREATE.S.H", $"{{\"stream_name\":\"S\",\"config\":{{{push},\"deliver_subject\":\"d2\",\"filter_subject\":\"s.b\"}}}}");
                await Api("07 s.a", "s.a", "x2");
                await Api("07 s.b", "s.b", "y1");
                log.Add(("08 delivery on d2", await NextAsync(d2)));
                log.Add(("09 nothing more on d2", await NextAsync(d2, 500)));
                log.Add(("10 nothing on d1", await NextAsync(d1, 200)));
                await Api("11 info", "$JS.API.CONSUMER.INFO.S.H", "");
            }
        }
        await nats.PingAsync();
        await Api("12 move to d3 (nobody listens)", "$JS.API.CONSUMER.CREATE.S.H", $"{{\"stream_name\":\"S\",\"config\":{{{push},\"deliver_subject\":\"d3\",\"filter_subject\":\"s.b\"}}}}");
        await using (var d3 = await nats.SubscribeCoreAsync<byte[]>("d3"))
        {
            // The two deliveries on d2 were not acked: a new deliver subject gets them again (forceExpirePending).
            log.Add(("13 redelivery on d3", await NextAsync(d3)));
            log.Add(("14 nothing more on d3", await NextAsync(d3, 500)));
        }
        return log;
    }

    /// <summary>
    /// Runs a script as JsApiScript.RunAsync does, but publishes as requests (each stored before the next step: the
    /// PubAck is awaited) and pulls on an inbox of its own (the first answer: a message's payload or its status).
    /// </summary>
    private async Task<List<string>> RunAsync(string version, JsExchange[] script)
    {
        await using var server = await JsApiScript.StartAsync(version, output);
        await using var nats = new NatsConnection(new NatsOpts { Url = server.Url });
        await nats.ConnectAsync();
        var answers = new List<string>();
        foreach (var e in script)
        {
            if (e.Publish)
            {
                await JsApiScript.RequestAsync(nats, e.Subject, e.Body);
                answers.Add("");
            }
            else if (e.Subject.StartsWith("$JS.API.CONSUMER.MSG.NEXT.", StringComparison.Ordinal))
            {
                string inbox = nats.NewInbox();
                await using var sub = await nats.SubscribeCoreAsync<byte[]>(inbox);
                await nats.PublishAsync(e.Subject, Encoding.UTF8.GetBytes(e.Body), replyTo: inbox);
                using var cts = new CancellationTokenSource(3000);
                try
                {
                    var m = await sub.Msgs.ReadAsync(cts.Token);
                    answers.Add(m.Headers?.Code is > 0 and var code ? $"<status {code} {m.Headers.MessageText}>" : $"{m.Subject} {Encoding.UTF8.GetString(m.Data ?? [])}");
                }
                catch (OperationCanceledException)
                {
                    answers.Add(JsApiScript.NoReply);
                }
            }
            else
            {
                answers.Add(await JsApiScript.RequestAsync(nats, e.Subject, e.Body));
            }
        }
        return answers;
    }

    /// <summary>The next delivery as "subject payload [headers]" with its ack reply's sequences, or "none".</summary>
    private static async Task<string> NextAsync(INatsSub<byte[]> sub, int waitMs = 3000)
    {
        using var cts = new CancellationTokenSource(waitMs);
        try
        {
            var m = await sub.Msgs.ReadAsync(cts.Token);
            var headers = m.Headers is null ? "" : string.Join(",", m.Headers.Where(h => h.Key != "Nats-Time-Stamp").Select(h => $"{h.Key}={h.Value}"));
            // $JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<dseq>.<ts>.<pending>: the timestamp varies.
            var ack = m.ReplyTo?.Split('.') is { Length: >= 9 } t ? $"{t[4]}.{t[5]}.{t[6]}.{t[8]}" : m.ReplyTo ?? "";
            return $"\"{m.Subject} {Encoding.UTF8.GetString(m.Data ?? [])} [{headers}] {ack}\"";
        }
        catch (OperationCanceledException)
        {
            return "\"none\"";
        }
    }

    private async Task MatchAsync(JsExchange[] script)
    {
        JsApiScript.Require("2.14.5", output);
        var ours = await RunAsync("ours", script);
        var reference = await RunAsync("2.14.5", script);
        var problems = JsApiScript.Compare("2.14.5", script, ours, reference, output);
        Assert.True(problems.Count == 0, string.Join("\n", problems));
    }
}
