using NATS.Client.Core;
using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;

namespace NatsBroker.Tests.JetStream;

/// <summary>
/// Consumer info figures — delivered and ack_floor (consumer, stream), num_pending, num_ack_pending,
/// num_redelivered, num_waiting — after the same script against our broker and nats-server 2.14.5: right after
/// create for each deliver policy on a stream that already has messages, then through deliveries, acks, naks (with
/// and without delay), +WPI, +TERM, redelivery after ack_wait and max_deliver, for ack policies explicit, all and
/// none (nats-server consumer.go selectStartingSeqNo / processAckMsg / checkPending / getNextMsg and the consumer
/// store's memstore.go UpdateDelivered / UpdateAcks, which consumer info reports).
/// </summary>
public sealed class ConsumerStateDifferentialTests(ITestOutputHelper output)
{
    // Well above the 300 ms a pull's reading waits for quiet, so no ack_wait runs out while a pull is read.
    private const int AckWaitMs = 700;

    [SkippableTheory]
    [InlineData("memory")]
    [InlineData("file")]
    public async Task Consumer_figures_match_nats_server_2_14(string storage)
    {
        Prerequisites.RequireOracle214(output);
        var go = await RunAsync(oracle: true, storage);
        var ours = await RunAsync(oracle: false, storage);
        for (int i = 0; i < Math.Max(go.Count, ours.Count); i++)
        {
            string g = i < go.Count ? go[i] : "<none>", o = i < ours.Count ? ours[i] : "<none>";
            output.WriteLine(g == o ? $"   {g}" : $"!! go:   {g}\n!! ours: {o}");
        }
        // Not vacuous: nats-server moved the floors and counted redeliveries somewhere in the script.
        Assert.Contains(go, l => l.Contains("redelivered 1", StringComparison.Ordinal));
        Assert.Contains(go, l => l.Contains("ack_floor (2,2)", StringComparison.Ordinal));
        Assert.Equal(go, ours);
    }

    private async Task<List<string>> RunAsync(bool oracle, string storage)
    {
        await using var server = await PullScript.StartAsync(oracle, output);
        await using var s = await PullScript.ConnectAsync(server, "T", storage);
        var lines = new List<string>();
        string[] subjects = ["a.1", "a.2", "b.1", "a.1", "b.2", "a.2"];
        DateTime middle = default;
        for (int i = 0; i < subjects.Length; i++)
        {
            await s.PublishAsync($"T.{subjects[i]}", $"m{i + 1}");
            if (i == 2)
            {
                await Task.Delay(50);
                middle = DateTime.UtcNow;
                await Task.Delay(50);
            }
        }
        async Task Info(string label, string name) => lines.Add($"{label}: {await s.InfoAsync(name)}");
        async Task<List<NatsMsg<byte[]>>> Pull(string name, string body)
        {
            var got = new List<NatsMsg<byte[]>>();
            lines.Add($"pull {name} {body}: " + string.Join(" / ", await s.PullAsync(name, body, 300, got)));
            return got;
        }
        async Task Ack(NatsMsg<byte[]> m, string body) => lines.Add($"  {body}: " + string.Join(" / ", await s.AckAsync(m, body)));

        // Right after create, per deliver policy.
        string startTime = middle.ToString("yyyy-MM-ddTHH:mm:ss.ffffffZ", System.Globalization.CultureInfo.InvariantCulture);
        foreach (var (name, config) in new[]
        {
            ("ALL", "\"deliver_policy\":\"all\""),
            ("LAST", "\"deliver_policy\":\"last\""),
            ("NEW", "\"deliver_policy\":\"new\""),
            ("SEQ3", "\"deliver_policy\":\"by_start_sequence\",\"opt_start_seq\":3"),
            ("SEQ99", "\"deliver_policy\":\"by_start_sequence\",\"opt_start_seq\":99"),
            ("TIME", $"\"deliver_policy\":\"by_start_time\",\"opt_start_time\":\"{startTime}\""),
            ("LASTA", "\"deliver_policy\":\"last\",\"filter_subject\":\"T.a.*\""),
            ("LASTX", "\"deliver_policy\":\"last\",\"filter_subject\":\"T.x\""),
            ("LPSB", "\"deliver_policy\":\"last_per_subject\",\"filter_subject\":\"T.b.*\""),
            ("ALLB", "\"deliver_policy\":\"all\",\"filter_subject\":\"T.b.*\""),
        })
        {
            lines.Add(await s.ConsumerAsync(name, "\"ack_policy\":\"explicit\"," + config));
            await Info("  info", name);
        }
        foreach (var name in new[] { "ALLB", "LPSB", "LAST", "SEQ3" })
        {
            await Pull(name, """{"batch":5,"no_wait":true}""");
            await Info("  after", name);
        }

        // Through acks, naks, progress, terms and redeliveries, per ack policy.
        foreach (var policy in new[] { "explicit", "all", "none" })
        {
            string name = "K" + policy;
            lines.Add(await s.ConsumerAsync(name, $"\"ack_policy\":\"{policy}\",\"ack_wait\":{AckWaitMs * 1_000_000L},\"max_deliver\":2"));
            var ms = await Pull(name, """{"batch":4,"no_wait":true}""");
            await Info("delivered 4", name);
            if (policy == "none")
            {
                await Pull(name, """{"batch":5,"no_wait":true}""");
                await Info("all delivered", name);
                continue;
            }
            await Ack(ms[1], "+ACK");
            await Info("acked 2", name);
            await Ack(ms[0], "+ACK");
            await Info("acked 1", name);
            await Ack(ms[2], "-NAK");
            await Info("nak 3", name);
            await Ack(ms[3], "+WPI");
            await Info("progress 4", name);
            var again = await Pull(name, """{"batch":1,"no_wait":true}""");
            await Info("redelivered 3", name);
            await Ack(ms[3], "+TERM");
            await Info("term 4", name);
            await Task.Delay(AckWaitMs * 2 + 100); // 3 waits out its second (last) ack_wait
            var rest = await Pull(name, """{"batch":5,"no_wait":true}""");
            await Info("3 past max_deliver, 5 and 6 delivered", name);
            await Ack(rest[1], "+ACK");
            await Info("acked 6", name);
            await Ack(rest[0], """-NAK {"delay":100000000}""");
            await Info("nak 5 with delay", name);
            await Task.Delay(AckWaitMs);
            await Pull(name, """{"batch":5,"no_wait":true}""");
            await Info("5 redelivered after the delay", name);
            if (again.Count > 0) await Ack(again[0], "+ACK");
            await Info("late ack of 3", name);
        }

        // max_deliver 1: nothing is redelivered, and none reported.
        lines.Add(await s.ConsumerAsync("M1", $"\"ack_policy\":\"explicit\",\"ack_wait\":{AckWaitMs * 1_000_000L},\"max_deliver\":1"));
        await Pull("M1", """{"batch":2,"no_wait":true}""");
        await Task.Delay(AckWaitMs * 2);
        await Info("past ack_wait", "M1");
        await Pull("M1", """{"batch":2,"no_wait":true}""");
        await Info("next two", "M1");

        // A waiting request counts in num_waiting until it expires.
        lines.Add(await s.ConsumerAsync("W", "\"ack_policy\":\"explicit\",\"deliver_policy\":\"new\""));
        var waiting = s.PullAsync("W", """{"batch":3,"expires":800000000}""", 1500);
        await Task.Delay(250);
        await Info("waiting", "W");
        lines.AddRange(await waiting);
        await Info("expired", "W");
        return lines;
    }
}
