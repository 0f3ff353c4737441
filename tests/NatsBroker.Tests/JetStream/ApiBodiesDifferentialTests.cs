using System.Text;
using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;

namespace NatsBroker.Tests.JetStream;

/// <summary>
/// Request bodies of the endpoints outside stream/consumer create (nats-server 2.14.5 jetstream_api.go, consumer.go
/// processResetReq, stream.go processDirectGetRequest), compared field by field with 2.14.5 (JsApiScript): strict
/// decoding (unmarshalRequest) for CONSUMER.PAUSE, STREAM.SNAPSHOT / RESTORE / PURGE / MSG.*, NAMES / LIST / INFO;
/// Go's plain json.Unmarshal (unknown fields pass, no offsets, "unexpected end of JSON input") for CONSUMER.UNPIN,
/// CONSUMER.RESET and DIRECT.GET; empty and non-object bodies; unknown streams and consumers (CONSUMER.RESET of a
/// missing consumer: no answer); paging of STREAM.INFO subject details and of names; successful answers' shapes; and
/// $JS.API.INFO's API totals, which count only JSON API answers. Also the no-responders status of MSG.NEXT /
/// DIRECT.GET, compared on the wire for clients with and without no_responders.
/// </summary>
public sealed class ApiBodiesDifferentialTests(ITestOutputHelper output)
{
    private static readonly JsExchange[] BodiesScript =
    [
        new("001 STREAM.CREATE.S", "$JS.API.STREAM.CREATE.S", "{\"name\":\"S\",\"subjects\":[\"s.>\"],\"allow_direct\":true}"),
        new("002 s.a", "s.a", "one") { Publish = true },
        new("003 s.b", "s.b", "two") { Publish = true },
        new("004 s.a", "s.a", "three") { Publish = true },
        new("005 CONSUMER.CREATE.S.C", "$JS.API.CONSUMER.CREATE.S.C", "{\"stream_name\":\"S\",\"config\":{\"durable_name\":\"C\",\"ack_policy\":\"explicit\",\"priority_policy\":\"pinned_client\",\"priority_groups\":[\"g\"],\"priority_timeout\":60000000000}}"),
        new("006 CONSUMER.CREATE.S.D", "$JS.API.CONSUMER.CREATE.S.D", "{\"stream_name\":\"S\",\"config\":{\"durable_name\":\"D\",\"ack_policy\":\"explicit\"}}"),
        new("007 CONSUMER.PAUSE.S.D", "$JS.API.CONSUMER.PAUSE.S.D", "x"),
        new("008 CONSUMER.PAUSE.S.D", "$JS.API.CONSUMER.PAUSE.S.D", "{\"foo\":1}"),
        new("009 CONSUMER.PAUSE.S.D", "$JS.API.CONSUMER.PAUSE.S.D", "{\"pause_until\":5}"),
        new("010 CONSUMER.PAUSE.S.D", "$JS.API.CONSUMER.PAUSE.S.D", "{\"pause_until\":\"x\"}"),
        new("011 CONSUMER.PAUSE.S.D", "$JS.API.CONSUMER.PAUSE.S.D", "{\"pause_until\":\"2020-01-01T00:00:00Z\"}"),
        new("012 CONSUMER.PAUSE.S.D", "$JS.API.CONSUMER.PAUSE.S.D", "{\"pause_until\":null}"),
        new("013 CONSUMER.PAUSE.S.D", "$JS.API.CONSUMER.PAUSE.S.D", "{}"),
        new("014 CONSUMER.PAUSE.S.D", "$JS.API.CONSUMER.PAUSE.S.D", "[1]"),
        new("015 CONSUMER.PAUSE.S.D", "$JS.API.CONSUMER.PAUSE.S.D", "{\"pause_until\":\"2020-01-01T00:00:00Z\""),
        new("016 CONSUMER.PAUSE.S.D", "$JS.API.CONSUMER.PAUSE.S.D", "{} {\"pause_until\":\"2020-01-01T00:00:00Z\"}"),
        new("017 CONSUMER.PAUSE.S.D", "$JS.API.CONSUMER.PAUSE.S.D", "   "),
        new("018 CONSUMER.PAUSE.S.NOPE", "$JS.API.CONSUMER.PAUSE.S.NOPE", "{}"),
        new("019 CONSUMER.PAUSE.NOPE.D", "$JS.API.CONSUMER.PAUSE.NOPE.D", "{\"foo\":1}"),
        new("020 CONSUMER.UNPIN.S.C", "$JS.API.CONSUMER.UNPIN.S.C", ""),
        new("021 CONSUMER.UNPIN.S.C", "$JS.API.CONSUMER.UNPIN.S.C", "x"),
        new("022 CONSUMER.UNPIN.S.C", "$JS.API.CONSUMER.UNPIN.S.C", "{}"),
        new("023 CONSUMER.UNPIN.S.C", "$JS.API.CONSUMER.UNPIN.S.C", "{\"group\":\"g\",\"foo\":1}"),
        new("024 CONSUMER.UNPIN.S.C", "$JS.API.CONSUMER.UNPIN.S.C", "{\"group\":1}"),
        new("025 CONSUMER.UNPIN.S.C", "$JS.API.CONSUMER.UNPIN.S.C", "{\"group\":\"g\"} x"),
        new("026 CONSUMER.UNPIN.S.C", "$JS.API.CONSUMER.UNPIN.S.C", "{\"group\":\"g\""),
        new("027 CONSUMER.UNPIN.S.C", "$JS.API.CONSUMER.UNPIN.S.C", "[1]"),
        new("028 CONSUMER.UNPIN.S.C", "$JS.API.CONSUMER.UNPIN.S.C", "{\"group\":\"h\"}"),
        new("029 CONSUMER.UNPIN.S.C", "$JS.API.CONSUMER.UNPIN.S.C", "{\"group\":\"bad group\"}"),
        new("030 CONSUMER.UNPIN.S.C", "$JS.API.CONSUMER.UNPIN.S.C", "{\"group\":\"g\"}"),
        new("031 CONSUMER.UNPIN.S.C", "$JS.API.CONSUMER.UNPIN.S.C", "\"x\""),
        new("032 CONSUMER.UNPIN.S.C", "$JS.API.CONSUMER.UNPIN.S.C", "null"),
        new("033 CONSUMER.UNPIN.S.D", "$JS.API.CONSUMER.UNPIN.S.D", "{\"group\":\"g\"}"),
        new("034 CONSUMER.UNPIN.S.NOPE", "$JS.API.CONSUMER.UNPIN.S.NOPE", "{\"group\":\"g\"}"),
        new("035 CONSUMER.RESET.S.D", "$JS.API.CONSUMER.RESET.S.D", "x"),
        new("036 CONSUMER.RESET.S.D", "$JS.API.CONSUMER.RESET.S.D", "{\"foo\":1}"),
        new("037 CONSUMER.RESET.S.D", "$JS.API.CONSUMER.RESET.S.D", "{\"seq\":\"x\"}"),
        new("038 CONSUMER.RESET.S.D", "$JS.API.CONSUMER.RESET.S.D", "{\"seq\":-1}"),
        new("039 CONSUMER.RESET.S.D", "$JS.API.CONSUMER.RESET.S.D", "{\"seq\":2} x"),
        new("040 CONSUMER.RESET.S.D", "$JS.API.CONSUMER.RESET.S.D", "{\"seq\":2"),
        new("041 CONSUMER.RESET.S.D", "$JS.API.CONSUMER.RESET.S.D", "{}"),
        new("042 CONSUMER.RESET.S.D", "$JS.API.CONSUMER.RESET.S.D", "{\"seq\":2}"),
        new("043 CONSUMER.RESET.S.D", "$JS.API.CONSUMER.RESET.S.D", "{\"seq\":99}"),
        new("044 CONSUMER.RESET.S.D", "$JS.API.CONSUMER.RESET.S.D", " "),
        new("045 CONSUMER.RESET.S.D", "$JS.API.CONSUMER.RESET.S.D", "null"),
        new("046 CONSUMER.RESET.S.D", "$JS.API.CONSUMER.RESET.S.D", "[1]"),
        new("047 CONSUMER.RESET.S.NOPE", "$JS.API.CONSUMER.RESET.S.NOPE", "{}"),
        new("048 STREAM.SNAPSHOT.S", "$JS.API.STREAM.SNAPSHOT.S", ""),
        new("049 STREAM.SNAPSHOT.S", "$JS.API.STREAM.SNAPSHOT.S", "{}"),
        new("050 STREAM.SNAPSHOT.S", "$JS.API.STREAM.SNAPSHOT.S", "x"),
        new("051 STREAM.SNAPSHOT.S", "$JS.API.STREAM.SNAPSHOT.S", "{\"foo\":1}"),
        new("052 STREAM.SNAPSHOT.S", "$JS.API.STREAM.SNAPSHOT.S", "{\"deliver_subject\":1}"),
        new("053 STREAM.SNAPSHOT.S", "$JS.API.STREAM.SNAPSHOT.S", "{\"deliver_subject\":\"\"}"),
        new("054 STREAM.SNAPSHOT.S", "$JS.API.STREAM.SNAPSHOT.S", "{\"deliver_subject\":\"a.*\"}"),
        new("055 STREAM.SNAPSHOT.S", "$JS.API.STREAM.SNAPSHOT.S", "{\"deliver_subject\":\"a\",\"chunk_size\":\"x\"}"),
        new("056 STREAM.SNAPSHOT.S", "$JS.API.STREAM.SNAPSHOT.S", "{\"deliver_subject\":\"a\""),
        new("057 STREAM.SNAPSHOT.S", "$JS.API.STREAM.SNAPSHOT.S", "{\"chunk_size\":5}"),
        new("058 STREAM.SNAPSHOT.S", "$JS.API.STREAM.SNAPSHOT.S", "[1]"),
        new("059 STREAM.SNAPSHOT.S", "$JS.API.STREAM.SNAPSHOT.S", " { } "),
        new("060 STREAM.SNAPSHOT.NOPE", "$JS.API.STREAM.SNAPSHOT.NOPE", "x"),
        new("061 STREAM.RESTORE.R", "$JS.API.STREAM.RESTORE.R", ""),
        new("062 STREAM.RESTORE.R", "$JS.API.STREAM.RESTORE.R", "x"),
        new("063 STREAM.RESTORE.R", "$JS.API.STREAM.RESTORE.R", "{\"foo\":1}"),
        new("064 STREAM.RESTORE.R", "$JS.API.STREAM.RESTORE.R", "{\"config\":{\"name\":\"X\"}}"),
        new("065 STREAM.RESTORE.R", "$JS.API.STREAM.RESTORE.R", "{\"config\":{\"name\":\"R\",\"foo\":1}}"),
        new("066 STREAM.RESTORE.R", "$JS.API.STREAM.RESTORE.R", "{\"config\":{\"name\":\"R\"},\"state\":{\"messages\":\"x\"}}"),
        new("067 STREAM.RESTORE.R", "$JS.API.STREAM.RESTORE.R", "{\"config\":{\"name\":\"R\"},\"state\":{\"foo\":1}}"),
        new("068 STREAM.RESTORE.R", "$JS.API.STREAM.RESTORE.R", "{\"config\":{\"name\":\"R\",\"max_age\":-5}}"),
        new("069 STREAM.RESTORE.R", "$JS.API.STREAM.RESTORE.R", "{\"config\":{\"name\":\"R\",\"retention\":\"x\"}}"),
        new("070 STREAM.RESTORE.R", "$JS.API.STREAM.RESTORE.R", "{\"config\":{\"name\":\"R\",\"pedantic\":true}}"),
        new("071 STREAM.RESTORE.S", "$JS.API.STREAM.RESTORE.S", "{\"config\":{\"name\":\"S\"}}"),
        new("072 STREAM.RESTORE.R", "$JS.API.STREAM.RESTORE.R", "{\"config\":{\"name\":\"R\",\"subjects\":[\"s.a\"]}}") { RandomName = true },
        new("074 STREAM.PURGE.S", "$JS.API.STREAM.PURGE.S", "{\"filter\":\"s..a\"}"),
        new("075 STREAM.PURGE.S", "$JS.API.STREAM.PURGE.S", "{\"filter\":\"x.>\"}"),
        new("076 STREAM.PURGE.S", "$JS.API.STREAM.PURGE.S", "[1]"),
        new("077 STREAM.PURGE.S", "$JS.API.STREAM.PURGE.S", "{\"seq\":1,\"filter\":\"s.b\"}"),
        new("078 STREAM.MSG.GET.S", "$JS.API.STREAM.MSG.GET.S", "{\"seq\":2,\"batch\":-1}"),
        new("079 STREAM.MSG.GET.S", "$JS.API.STREAM.MSG.GET.S", "{\"next_by_subj\":\"s.*\",\"seq\":2}"),
        new("080 STREAM.MSG.GET.S", "$JS.API.STREAM.MSG.GET.S", "{\"start_time\":\"2020-01-01T00:00:00Z\"}"),
        new("081 STREAM.MSG.GET.S", "$JS.API.STREAM.MSG.GET.S", "{\"start_time\":\"2999-01-01T00:00:00Z\"}"),
        new("082 STREAM.MSG.GET.S", "$JS.API.STREAM.MSG.GET.S", "{\"seq\":2,\"no_hdr\":true}"),
        new("083 STREAM.MSG.GET.S", "$JS.API.STREAM.MSG.GET.S", "{\"last_by_subj\":\"s.*\"}"),
        new("084 STREAM.MSG.GET.S", "$JS.API.STREAM.MSG.GET.S", "{\"seq\":1} {\"seq\":2}"),
        new("085 STREAM.MSG.GET.S", "$JS.API.STREAM.MSG.GET.S", "{\"multi_last\":[\"s.a\"]}"),
        new("086 STREAM.MSG.GET.S", "$JS.API.STREAM.MSG.GET.S", "{\"max_bytes\":5,\"seq\":2}"),
        new("087 STREAM.MSG.DELETE.S", "$JS.API.STREAM.MSG.DELETE.S", "{\"seq\":3} {\"seq\":1}"),
        new("088 STREAM.MSG.DELETE.S", "$JS.API.STREAM.MSG.DELETE.S", "{\"seq\":\"1\"}"),
        new("089 STREAM.CREATE.A", "$JS.API.STREAM.CREATE.A", "{\"name\":\"A\",\"subjects\":[\"a.>\"]}"),
        new("090 STREAM.NAMES", "$JS.API.STREAM.NAMES", "{\"offset\":1}"),
        new("091 STREAM.NAMES", "$JS.API.STREAM.NAMES", "{\"offset\":5}"),
        new("092 STREAM.NAMES", "$JS.API.STREAM.NAMES", "{\"subject\":\"x\"}"),
        new("093 STREAM.NAMES", "$JS.API.STREAM.NAMES", "{\"subject\":\"s.a\"}"),
        new("094 STREAM.NAMES", "$JS.API.STREAM.NAMES", ""),
        new("095 STREAM.LIST", "$JS.API.STREAM.LIST", "{\"offset\":5}"),
        new("096 STREAM.LIST", "$JS.API.STREAM.LIST", ""),
        new("097 STREAM.INFO.S", "$JS.API.STREAM.INFO.S", "{\"subjects_filter\":\"s.a\",\"offset\":1}"),
        new("098 STREAM.INFO.S", "$JS.API.STREAM.INFO.S", "{\"subjects_filter\":\">\",\"offset\":-3}"),
        new("099 STREAM.INFO.S", "$JS.API.STREAM.INFO.S", "{\"subjects_filter\":\"zz\"}"),
        new("100 STREAM.INFO.S", "$JS.API.STREAM.INFO.S", "{\"subjects_filter\":\">\",\"offset\":9}"),
        new("101 DIRECT.GET.S", "$JS.API.DIRECT.GET.S", "{\"seq\":2,\"foo\":1}"),
        new("102 DIRECT.GET.S", "$JS.API.DIRECT.GET.S", "{\"seq\":\"x\"}"),
        new("103 DIRECT.GET.S", "$JS.API.DIRECT.GET.S", "{\"seq\":2} x"),
        new("104 DIRECT.GET.S", "$JS.API.DIRECT.GET.S", "{\"seq\":2} {\"seq\":3}"),
        new("105 DIRECT.GET.S", "$JS.API.DIRECT.GET.S", "{}"),
        new("106 DIRECT.GET.S.s.a", "$JS.API.DIRECT.GET.S.s.a", "{\"foo\":1}"),
        new("107 DIRECT.GET.S.s.a", "$JS.API.DIRECT.GET.S.s.a", "x"),
        new("108 INFO", "$JS.API.INFO", ""),
    ];

    /// <summary>What 2.9.10 already answered the same way: stream name paging and ordering, subject detail paging, API totals.</summary>
    private static readonly JsExchange[] PagingScript =
    [
        new("001 STREAM.CREATE.S", "$JS.API.STREAM.CREATE.S", "{\"name\":\"S\",\"subjects\":[\"s.>\"]}"),
        new("002 STREAM.CREATE.A", "$JS.API.STREAM.CREATE.A", "{\"name\":\"A\",\"subjects\":[\"a.>\"]}"),
        new("003 s.a", "s.a", "one") { Publish = true },
        new("004 s.b", "s.b", "two") { Publish = true },
        new("005 STREAM.NAMES", "$JS.API.STREAM.NAMES", ""),
        new("006 STREAM.NAMES", "$JS.API.STREAM.NAMES", "{\"offset\":1}"),
        new("007 STREAM.NAMES", "$JS.API.STREAM.NAMES", "{\"offset\":5}"),
        new("008 STREAM.NAMES", "$JS.API.STREAM.NAMES", "{\"subject\":\"x\"}"),
        new("009 STREAM.INFO.S", "$JS.API.STREAM.INFO.S", "{\"subjects_filter\":\">\",\"offset\":1}"),
        new("010 STREAM.INFO.S", "$JS.API.STREAM.INFO.S", "{\"subjects_filter\":\"zz\"}"),
        new("011 STREAM.MSG.GET.S", "$JS.API.STREAM.MSG.GET.S", "{\"seq\":1}"),
        new("012 STREAM.MSG.GET.S", "$JS.API.STREAM.MSG.GET.S", "{\"seq\":1}"),
        new("013 STREAM.INFO.NOPE", "$JS.API.STREAM.INFO.NOPE", ""),
        new("014 INFO", "$JS.API.INFO", ""),
    ];

    [SkippableFact]
    public async Task Request_bodies_paging_and_api_totals_match_nats_server_2_14()
    {
        JsApiScript.Require("2.14.5", output);
        var ours = await JsApiScript.RunAsync("ours", BodiesScript, output);
        var reference = await JsApiScript.RunAsync("2.14.5", BodiesScript, output);
        var problems = JsApiScript.Compare("2.14.5", BodiesScript, ours, reference, output);
        Assert.True(problems.Count == 0, string.Join("\n", problems));
    }

    [SkippableFact]
    public async Task Paging_and_api_totals_match_nats_server_2_9()
    {
        JsApiScript.Require("2.9.10", output);
        var ours = await JsApiScript.RunAsync("ours", PagingScript, output);
        var reference = await JsApiScript.RunAsync("2.9.10", PagingScript, output);
        var problems = JsApiScript.Compare("2.9.10", PagingScript, ours, reference, output);
        // The totals as values (2.9.10 comparisons look at config values only): two creates, six pages, one error;
        // the successful MSG.GETs are not counted (jsMsgGetRequest answers outside the API layer).
        Assert.Contains("\"total\":9,\"errors\":1}", reference[^1]);
        Assert.Contains("\"total\":9,\"errors\":1}", ours[^1]);
        Assert.True(problems.Count == 0, string.Join("\n", problems));
    }

    /// <summary>
    /// MSG.NEXT / DIRECT.GET of a missing consumer or stream, and CONSUMER.RESET of a missing consumer, on the wire:
    /// nats-server sends the 503 status (with Nats-Subject) only to a client that asked for no_responders, nothing to
    /// others; RESET gets no answer at all.
    /// </summary>
    [SkippableFact]
    public async Task No_responders_status_only_for_clients_that_ask_for_it()
    {
        JsApiScript.Require("2.14.5", output);
        var reference = await WireAsync("2.14.5");
        var ours = await WireAsync("ours");
        for (int i = 0; i < reference.Count; i++) output.WriteLine($"2.14.5: {reference[i]}\n  ours: {(i < ours.Count ? ours[i] : "<none>")}");
        Assert.Contains(reference, l => l.Contains("NATS/1.0 503", StringComparison.Ordinal) && l.Contains("Nats-Subject: $JS.API.DIRECT.GET.NOPE", StringComparison.Ordinal));
        Assert.Contains(reference, l => l.EndsWith("<nothing>", StringComparison.Ordinal));
        Assert.Equal(reference, ours);
    }

    private async Task<List<string>> WireAsync(string version)
    {
        await using var server = await JsApiScript.StartAsync(version, output);
        var lines = new List<string>();
        string[] connects =
        [
            """{"verbose":false,"headers":true,"no_responders":true}""",
            """{"verbose":false,"headers":true}""",
            """{"verbose":false}""",
        ];
        string[] subjects = ["$JS.API.CONSUMER.MSG.NEXT.S.NOPE", "$JS.API.CONSUMER.MSG.NEXT.NOPE.C", "$JS.API.DIRECT.GET.NOPE", "$JS.API.DIRECT.GET.S", "$JS.API.CONSUMER.RESET.S.NOPE"];
        await using (var setup = await RawClient.ConnectAndHandshakeAsync(server))
        {
            await setup.SendAsync("SUB _S 1\r\n");
            var cfg = Encoding.UTF8.GetBytes("""{"name":"S","subjects":["s.>"]}""");
            await setup.SendAsync($"PUB $JS.API.STREAM.CREATE.S _S {cfg.Length}\r\n{Encoding.UTF8.GetString(cfg)}\r\n");
            await setup.ExpectMessageAsync(skipPongs: true);
        }
        foreach (var connect in connects)
        {
            await using var c = await RawClient.ConnectAndHandshakeAsync(server, connect);
            await c.SendAsync("SUB _R.> 1\r\n");
            int n = 0;
            foreach (var subject in subjects)
            {
                await c.SendAsync($"PUB {subject} _R.{++n} 2\r\n{{}}\r\n");
                NatsMessage? m;
                try
                {
                    m = await c.ReadMessageAsync(TimeSpan.FromMilliseconds(700), skipPongs: true);
                }
                catch (TimeoutException)
                {
                    m = null;
                }
                lines.Add($"{connect} {subject}: " + (m is null ? "<nothing>" : $"{m.Op} {m.Subject} [{m.HeaderText?.Replace("\r\n", "|")}] {m.PayloadText}"));
            }
        }
        return lines;
    }
}
