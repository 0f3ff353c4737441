using System.Text;
using System.Text.Json;
using NatsBroker.JetStream.Scheduling;
using static NatsBroker.Tests.JetStream.BatchTestKit;

namespace NatsBroker.Tests.JetStream;

/// <summary>
/// Message schedules (ADR-51, nats-server 2.12–2.14): allow_msg_schedules, Nats-Schedule (@at, @every, cron and the
/// predefined ones, Nats-Schedule-Time-Zone), -Target, -Source, -TTL, -Rollup, the produced message's headers
/// (Nats-Scheduler, Nats-Schedule-Next), the purge of a fired @at schedule and nats-server's error codes.
/// </summary>
public sealed class MessageScheduleTests(AtomicBatchServer fixture) : IClassFixture<AtomicBatchServer>
{
    private JsTestServer T => fixture.T;

    [Fact]
    public async Task Config_rules_as_nats_server()
    {
        var r = await ApiAsync(T, "$JS.API.STREAM.CREATE.SC1", """{"name":"SC1","subjects":["sc1.>"],"allow_msg_schedules":true}""");
        var cfg = JsonDocument.Parse(r).RootElement.GetProperty("config");
        Assert.True(cfg.GetProperty("allow_msg_schedules").GetBoolean());
        Assert.True(cfg.GetProperty("allow_rollup_hdrs").GetBoolean()); // turned on, as nats-server does
        r = await ApiAsync(T, "$JS.API.STREAM.CREATE.SC2", """{"name":"SC2","subjects":["sc2.>"],"allow_msg_schedules":true,"discard":"new"}""");
        Assert.Contains("\"err_code\":10052,\"description\":\"message scheduling cannot use discard new\"", r, StringComparison.Ordinal);
        r = await ApiAsync(T, "$JS.API.STREAM.CREATE.SC2", """{"name":"SC2","subjects":["sc2.>"],"allow_msg_schedules":true,"allow_msg_counter":true}""");
        Assert.Contains("\"err_code\":10052,\"description\":\"counter stream cannot use message schedules\"", r, StringComparison.Ordinal);
        r = await ApiAsync(T, "$JS.API.STREAM.CREATE.SC2", """{"name":"SC2","mirror":{"name":"SC1"},"allow_msg_schedules":true}""");
        Assert.Contains("\"code\":400,\"err_code\":10186,\"description\":\"stream mirrors can not also schedule messages\"", r, StringComparison.Ordinal);
        r = await ApiAsync(T, "$JS.API.STREAM.CREATE.SC2", """{"name":"SC2","sources":[{"name":"SC1"}],"allow_msg_schedules":true}""");
        Assert.Contains("\"code\":400,\"err_code\":10187,\"description\":\"stream source can not also schedule messages\"", r, StringComparison.Ordinal);
        r = await ApiAsync(T, "$JS.API.STREAM.UPDATE.SC1", """{"name":"SC1","subjects":["sc1.>"],"allow_rollup_hdrs":true}""");
        Assert.Contains("\"err_code\":10052,\"description\":\"message schedules can not be disabled\"", r, StringComparison.Ordinal);
        // Without the flag the field is omitted, as Go's omitempty.
        r = await ApiAsync(T, "$JS.API.STREAM.CREATE.SC3", """{"name":"SC3","subjects":["sc3.>"]}""");
        Assert.DoesNotContain("allow_msg_schedules", r, StringComparison.Ordinal);
    }

    [Fact]
    public async Task Invalid_schedules_are_refused_with_nats_server_err_codes()
    {
        await CreateStreamAsync(T, """{"name":"SE1","subjects":["se1.>"],"allow_msg_schedules":true}""");
        await CreateStreamAsync(T, """{"name":"SE2","subjects":["se2.>"]}""");
        await using var c = await ConnectAsync(T);
        async Task Expect(string subject, string headers, int errCode, string description, string stream = "SE1")
        {
            await HPubAsync(c, subject, "_R.x", headers, "body");
            Assert.Equal(Error(400, errCode, description, stream), await ReplyAsync(c, "_R.x"));
        }
        const string target = "Nats-Schedule-Target: se1.out\r\n";
        await Expect("se2.s", "Nats-Schedule: @every 1s\r\nNats-Schedule-Target: se2.out\r\n", 10188, "message schedules is disabled", "SE2");
        await Expect("se2.s", "Nats-Schedule: @every nonsense\r\n", 10188, "message schedules is disabled", "SE2");
        await Expect("se1.s", "Nats-Schedule: @every 500ms\r\n" + target, 10189, "message schedules pattern is invalid");
        await Expect("se1.s", "Nats-Schedule: @at tomorrow\r\n" + target, 10189, "message schedules pattern is invalid");
        await Expect("se1.s", "Nats-Schedule: * * * * *\r\n" + target, 10189, "message schedules pattern is invalid");
        await Expect("se1.s", "Nats-Schedule: 0 0 0 30 2 *\r\n" + target, 10189, "message schedules pattern is invalid");
        await Expect("se1.s", "Nats-Schedule: 0 0 0 * * 7\r\n" + target, 10189, "message schedules pattern is invalid");
        await Expect("se1.s", "Nats-Schedule: @every 1m\r\nNats-Schedule-Time-Zone: Europe/Amsterdam\r\n" + target, 10189, "message schedules pattern is invalid");
        await Expect("se1.s", "Nats-Schedule: @daily\r\nNats-Schedule-Time-Zone: Mars/Olympus\r\n" + target, 10223, "message schedules time zone is invalid");
        await Expect("se1.s", "Nats-Schedule: @daily\r\nNats-Schedule-Time-Zone: \r\n" + target, 10223, "message schedules time zone is invalid");
        await Expect("se1.s", "Nats-Schedule: @every 1s\r\n", 10190, "message schedules target is invalid");
        await Expect("se1.s", "Nats-Schedule: @every 1s\r\nNats-Schedule-Target: se1.s\r\n", 10190, "message schedules target is invalid");
        await Expect("se1.s", "Nats-Schedule: @every 1s\r\nNats-Schedule-Target: se1.*\r\n", 10190, "message schedules target is invalid");
        await Expect("se1.s", "Nats-Schedule: @every 1s\r\nNats-Schedule-Target: elsewhere\r\n", 10190, "message schedules target is invalid");
        await Expect("se1.s", "Nats-Schedule: @every 1s\r\nNats-Schedule-TTL: 100ms\r\n" + target, 10191, "message schedules invalid per-message TTL");
        await Expect("se1.s", "Nats-Schedule: @every 1s\r\nNats-Schedule-TTL: 5m\r\n" + target, 10166, "per-message TTL is disabled");
        await Expect("se1.s", "Nats-Schedule: @every 1s\r\nNats-Schedule-Rollup: all\r\n" + target, 10192, "message schedules invalid rollup");
        await Expect("se1.s", "Nats-Schedule: @every 1s\r\nNats-Rollup: all\r\n" + target, 10192, "message schedules invalid rollup");
        await Expect("se1.s", "Nats-Schedule: @every 1s\r\nNats-Schedule-Source: se1.out\r\n" + target, 10203, "message schedules source is invalid");
        await Expect("se1.s", "Nats-Schedule: @every 1s\r\nNats-Schedule-Source: other.subject\r\n" + target, 10203, "message schedules source is invalid");
        await Expect("se1.s", "Nats-Scheduler: se1.t\r\n", 10212, "message schedules invalid scheduler");
        await Expect("se1.s", "Nats-Schedule-Next: 2030-01-01T00:00:00Z\r\nNats-Scheduler: se1.t\r\n", 10212, "message schedules invalid scheduler");
        await Expect("se1.s", "Nats-Schedule-Next: purge\r\n", 10212, "message schedules invalid scheduler");
        await Expect("se1.s", "Nats-Schedule-Next: purge\r\nNats-Scheduler: se1.s\r\n", 10212, "message schedules invalid scheduler");
        await Expect("se2.s", "Nats-Schedule-Next: purge\r\nNats-Scheduler: se2.t\r\n", 10188, "message schedules is disabled", "SE2");
        // A purge must name a subject whose last message is a schedule.
        await PubAsync(c, "se1.plain", "_R.p");
        Assert.Contains("\"seq\":1", await ReplyAsync(c, "_R.p"), StringComparison.Ordinal);
        await Expect("se1.s", "Nats-Schedule-Next: purge\r\nNats-Scheduler: se1.plain\r\n", 10212, "message schedules invalid scheduler");
        Assert.Equal(1, await MessagesAsync(T, "SE1"));
    }

    [Fact]
    public async Task An_at_schedule_fires_once_with_nats_server_headers_and_is_purged()
    {
        await CreateStreamAsync(T, """{"name":"SA1","subjects":["sa1.>"],"allow_msg_schedules":true,"allow_msg_ttl":true}""");
        await T.Js.CreateOrUpdateConsumerAsync("SA1", new NATS.Client.JetStream.Models.ConsumerConfig("watch"), Timeout());
        await using var c = await ConnectAsync(T);
        await HPubAsync(c, "sa1.sched.one", "_R.1",
            "Foo: bar\r\nNats-Msg-Id: m1\r\nNats-Schedule: @at 2009-11-10T23:00:00Z\r\nNats-Schedule-Target: sa1.orders\r\nNats-Schedule-TTL: 5m\r\nNats-Expected-Stream: SA1\r\n",
            "order body");
        Assert.Equal("{\"stream\":\"SA1\",\"seq\":1}", await ReplyAsync(c, "_R.1"));
        var produced = await WaitLastAsync("SA1", "sa1.orders");
        Assert.Equal("order body", produced.Data);
        // The schedule's own headers, minus Nats-Schedule*, Nats-Expected-*, Nats-Msg-Id, then the scheduler's.
        Assert.Equal("NATS/1.0\r\nFoo: bar\r\nNats-Scheduler: sa1.sched.one\r\nNats-Schedule-Next: purge\r\nNats-TTL: 5m\r\n\r\n", produced.Headers);
        // "Nats-Schedule-Next: purge" removed the schedule itself: the target message is all that is left.
        await WaitAsync(async () => await MessagesAsync(T, "SA1") == 1);
        Assert.Null(await LastAsync("SA1", "sa1.sched.one"));
        Assert.Equal(2ul, (await T.Js.GetStreamAsync("SA1", cancellationToken: Timeout())).Info.State.LastSeq);
        // A consumer counts what is left: the purged schedule is no longer pending.
        Assert.Equal(1ul, (await T.Js.GetConsumerAsync("SA1", "watch", Timeout())).Info.NumPending);
    }

    [Fact]
    public async Task The_schedule_message_gets_a_subject_rollup_so_a_new_one_replaces_the_old()
    {
        await CreateStreamAsync(T, """{"name":"SR1","subjects":["sr1.>"],"allow_msg_schedules":true}""");
        await using var c = await ConnectAsync(T);
        await HPubAsync(c, "sr1.s", "_R.1", "Nats-Schedule: @at 2099-01-01T00:00:00Z\r\nNats-Schedule-Target: sr1.out\r\n");
        Assert.Equal("{\"stream\":\"SR1\",\"seq\":1}", await ReplyAsync(c, "_R.1"));
        await HPubAsync(c, "sr1.s", "_R.2", "Nats-Schedule: @at 2098-01-01T00:00:00+02:00\r\nNats-Schedule-Target: sr1.out\r\n");
        Assert.Equal("{\"stream\":\"SR1\",\"seq\":2}", await ReplyAsync(c, "_R.2"));
        Assert.Equal(1, await MessagesAsync(T, "SR1"));
        var last = await LastAsync("SR1", "sr1.s");
        Assert.Equal("NATS/1.0\r\nNats-Schedule: @at 2098-01-01T00:00:00+02:00\r\nNats-Schedule-Target: sr1.out\r\nNats-Rollup: sub\r\n\r\n", last!.Value.Headers);
        // A client may stop a schedule by purging it through Nats-Schedule-Next: purge.
        await HPubAsync(c, "sr1.stop", "_R.3", "Nats-Schedule-Next: purge\r\nNats-Scheduler: sr1.s\r\n", "");
        Assert.Equal("{\"stream\":\"SR1\",\"seq\":3}", await ReplyAsync(c, "_R.3"));
        Assert.Null(await LastAsync("SR1", "sr1.s"));
    }

    [Fact]
    public async Task Every_repeats_with_the_next_time_and_a_plain_message_on_the_subject_ends_it()
    {
        await CreateStreamAsync(T, """{"name":"SV1","subjects":["sv1.>"],"allow_msg_schedules":true}""");
        await using var c = await ConnectAsync(T);
        await HPubAsync(c, "sv1.tick", "_R.1", "Nats-Schedule: @every 1s\r\nNats-Schedule-Target: sv1.out\r\n", "tick");
        await ReplyAsync(c, "_R.1");
        await WaitAsync(async () => await CountAsync("SV1", "sv1.out") >= 2);
        var produced = (await LastAsync("SV1", "sv1.out"))!.Value;
        Assert.Equal("tick", produced.Data);
        var lines = produced.Headers.Split("\r\n");
        Assert.Equal("Nats-Scheduler: sv1.tick", lines[1]);
        Assert.StartsWith("Nats-Schedule-Next: ", lines[2], StringComparison.Ordinal);
        Assert.True(MsgSchedulePattern.TryParseRfc3339(lines[2]["Nats-Schedule-Next: ".Length..], out long next));
        Assert.EndsWith("Z", lines[2], StringComparison.Ordinal);
        Assert.InRange(next - NatsBroker.JetStream.GoTime.NowNanos(), -1_000_000_000L, 2_000_000_000L);
        Assert.NotNull(await LastAsync("SV1", "sv1.tick")); // a repeating schedule stays

        await PubAsync(c, "sv1.tick", "_R.2", "not a schedule");
        await ReplyAsync(c, "_R.2");
        long stopped = await CountAsync("SV1", "sv1.out");
        await Task.Delay(2500);
        Assert.Equal(stopped, await CountAsync("SV1", "sv1.out"));
    }

    [Fact]
    public async Task A_source_schedule_samples_the_last_message_of_the_source_subject()
    {
        await CreateStreamAsync(T, """{"name":"SS1","subjects":["ss1.>"],"allow_msg_schedules":true}""");
        await using var c = await ConnectAsync(T);
        await HPubAsync(c, "ss1.temp", "_R.1", "Unit: C\r\n", "21.5");
        await ReplyAsync(c, "_R.1");
        await HPubAsync(c, "ss1.sample", "_R.2",
            "Nats-Schedule: @every 1s\r\nNats-Schedule-Source: ss1.temp\r\nNats-Schedule-Target: ss1.sampled\r\nNats-Schedule-Rollup: sub\r\n", "");
        await ReplyAsync(c, "_R.2");
        var produced = await WaitLastAsync("SS1", "ss1.sampled");
        Assert.Equal("21.5", produced.Data);
        Assert.StartsWith("NATS/1.0\r\nUnit: C\r\nNats-Scheduler: ss1.sample\r\nNats-Schedule-Next: ", produced.Headers, StringComparison.Ordinal);
        Assert.EndsWith("\r\nNats-Rollup: sub\r\n\r\n", produced.Headers, StringComparison.Ordinal);
        await HPubAsync(c, "ss1.temp", "_R.3", "Unit: C\r\n", "22.0");
        await ReplyAsync(c, "_R.3");
        await WaitAsync(async () => (await LastAsync("SS1", "ss1.sampled"))?.Data == "22.0");
        // Nats-Schedule-Rollup: sub keeps one sample.
        Assert.Equal(1, await CountAsync("SS1", "ss1.sampled"));
    }

    [Fact]
    public async Task Cron_fires_and_a_time_zone_shows_in_the_next_time()
    {
        await CreateStreamAsync(T, """{"name":"SN1","subjects":["sn1.>"],"allow_msg_schedules":true}""");
        await using var c = await ConnectAsync(T);
        await HPubAsync(c, "sn1.cron", "_R.1", "Nats-Schedule: */1 * * * * *\r\nNats-Schedule-Time-Zone: Asia/Kolkata\r\nNats-Schedule-Target: sn1.out\r\n", "c");
        await ReplyAsync(c, "_R.1");
        var produced = await WaitLastAsync("SN1", "sn1.out");
        Assert.Matches(@"\r\nNats-Schedule-Next: \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+05:30\r\n", produced.Headers);
    }

    [Fact]
    public async Task Schedules_in_an_atomic_batch_are_checked_and_fire_after_the_commit()
    {
        await CreateStreamAsync(T, """{"name":"SB1","subjects":["sb1.>"],"allow_msg_schedules":true,"allow_atomic":true}""");
        await using var c = await ConnectAsync(T);
        await HPubAsync(c, "sb1.s", "_R.1", Batch("bad", 1) + "Nats-Schedule: @at 2009-11-10T23:00:00Z\r\n");
        Assert.Equal("", await ReplyAsync(c, "_R.1"));
        await HPubAsync(c, "sb1.x", "_R.2", Batch("bad", 2, "1"));
        Assert.Equal(Error(400, 10190, "message schedules target is invalid", "SB1"), await ReplyAsync(c, "_R.2"));

        await HPubAsync(c, "sb1.data", "_R.3", Batch("good", 1), "first");
        Assert.Equal("", await ReplyAsync(c, "_R.3"));
        await HPubAsync(c, "sb1.s", "_R.4", Batch("good", 2, "1") + "Nats-Schedule: @at 2009-11-10T23:00:00Z\r\nNats-Schedule-Target: sb1.out\r\n", "later");
        Assert.Equal("{\"stream\":\"SB1\",\"seq\":2,\"batch\":\"good\",\"count\":2}", await ReplyAsync(c, "_R.4"));
        var produced = await WaitLastAsync("SB1", "sb1.out");
        Assert.Equal("later", produced.Data);
        Assert.Equal("NATS/1.0\r\nNats-Batch-Id: good\r\nNats-Batch-Sequence: 2\r\nNats-Batch-Commit: 1\r\nNats-Scheduler: sb1.s\r\nNats-Schedule-Next: purge\r\n\r\n", produced.Headers);
        await WaitAsync(async () => await LastAsync("SB1", "sb1.s") is null);
    }

    [Fact]
    public async Task Schedules_survive_a_restart()
    {
        string dir = Path.Combine(Path.GetTempPath(), "natsbroker-js-tests", Guid.NewGuid().ToString("N"));
        try
        {
            var first = await JsTestServer.StartAsync(dir);
            await CreateStreamAsync(first, """{"name":"SX1","subjects":["sx1.>"],"allow_msg_schedules":true}""");
            await using (var c = await ConnectAsync(first))
            {
                string at = MsgSchedulePattern.FormatRfc3339Nano(NatsBroker.JetStream.GoTime.NowNanos() / 1_000_000_000 * 1_000_000_000 + 4_000_000_000, TimeSpan.Zero);
                await HPubAsync(c, "sx1.later", "_R.1", $"Nats-Schedule: @at {at}\r\nNats-Schedule-Target: sx1.at\r\n", "later");
                Assert.Equal("{\"stream\":\"SX1\",\"seq\":1}", await ReplyAsync(c, "_R.1"));
                await HPubAsync(c, "sx1.cron", "_R.2", "Nats-Schedule: @hourly\r\nNats-Schedule-Target: sx1.hourly\r\n", "h");
                Assert.Equal("{\"stream\":\"SX1\",\"seq\":2}", await ReplyAsync(c, "_R.2"));
            }
            await first.StopKeepingStoreAsync();

            await using var second = await JsTestServer.StartAsync(dir);
            var info = await ApiAsync(second, "$JS.API.STREAM.INFO.SX1", "");
            Assert.Contains("\"allow_msg_schedules\":true", info, StringComparison.Ordinal);
            // The @at schedule was rebuilt from the stored message and fires after the restart, then is purged.
            await WaitAsync(async () => await LastAsync(second, "SX1", "sx1.at") is not null);
            var produced = (await LastAsync(second, "SX1", "sx1.at"))!.Value;
            Assert.Equal("later", produced.Data);
            Assert.Equal("NATS/1.0\r\nNats-Scheduler: sx1.later\r\nNats-Schedule-Next: purge\r\n\r\n", produced.Headers);
            await WaitAsync(async () => await LastAsync(second, "SX1", "sx1.later") is null);
            Assert.NotNull(await LastAsync(second, "SX1", "sx1.cron")); // the hourly one waits for its hour
        }
        finally
        {
            try { Directory.Delete(dir, recursive: true); }
            catch (IOException) { }
        }
    }

    [Fact]
    public void Cron_patterns_compute_nats_server_times()
    {
        long ts = At("2026-03-14T10:20:30Z");
        Assert.Equal(At("2026-03-14T11:00:00Z"), Next("@hourly", ts));
        Assert.Equal(At("2026-03-15T00:00:00Z"), Next("@daily", ts));
        Assert.Equal(At("2026-03-15T00:00:00Z"), Next("@weekly", ts)); // the 15th is a Sunday
        Assert.Equal(At("2026-04-01T00:00:00Z"), Next("@monthly", ts));
        Assert.Equal(At("2027-01-01T00:00:00Z"), Next("@yearly", ts));
        Assert.Equal(At("2026-03-14T10:20:45Z"), Next("*/15 * * * * *", ts));
        Assert.Equal(At("2026-03-16T09:30:00Z"), Next("0 30 9 * * mon-fri", ts));
        Assert.Equal(At("2026-06-01T08:00:00Z"), Next("0 0 8 1 jun,dec ?", ts));
        // Both day fields restricted: either matches (the 20th or a Monday).
        Assert.Equal(At("2026-03-16T00:00:00Z"), Next("0 0 0 20 * 1", ts));
        // In a zone: 09:00 in Amsterdam is 08:00 UTC in winter, 07:00 UTC in summer.
        Assert.True(CronSchedule.TryNext("0 0 9 * * *", TimeZoneInfo.FindSystemTimeZoneById("Europe/Amsterdam"), ts, out long ams, out var offset));
        Assert.Equal(At("2026-03-15T08:00:00Z"), ams);
        Assert.Equal(TimeSpan.FromHours(1), offset);
        Assert.True(CronSchedule.TryNext("0 0 9 * * *", TimeZoneInfo.FindSystemTimeZoneById("Europe/Amsterdam"), At("2026-07-01T12:00:00Z"), out ams, out offset));
        Assert.Equal(At("2026-07-02T07:00:00Z"), ams);
        Assert.Equal("2026-07-02T09:00:00+02:00", MsgSchedulePattern.FormatRfc3339Nano(ams, offset));
        Assert.False(CronSchedule.TryNext("0 0 0 31 2 *", TimeZoneInfo.Utc, ts, out _, out _));
        Assert.False(CronSchedule.TryNext("61 * * * * *", TimeZoneInfo.Utc, ts, out _, out _));
        Assert.False(CronSchedule.TryNext("5-1 * * * * *", TimeZoneInfo.Utc, ts, out _, out _));
        Assert.False(CronSchedule.TryNext("*/0 * * * * *", TimeZoneInfo.Utc, ts, out _, out _));

        static long Next(string pattern, long ts)
        {
            Assert.True(MsgSchedulePattern.TryNext(pattern, null, ts, ts, out var n));
            Assert.True(n.Repeat);
            return n.Nanos;
        }
    }

    [Fact]
    public void Every_rounds_to_the_second_and_skips_ahead_when_overdue()
    {
        long ts = At("2026-03-14T10:20:30Z") + 600_000_000; // .6 rounds up
        Assert.True(MsgSchedulePattern.TryNext("@every 1m30s", null, ts, ts, out var n));
        Assert.Equal(At("2026-03-14T10:22:01Z"), n.Nanos);
        long now = At("2026-03-14T12:00:00Z") + 200_000_000;
        Assert.True(MsgSchedulePattern.TryNext("@every 1m30s", null, ts, now, out n));
        Assert.Equal(At("2026-03-14T12:01:30Z"), n.Nanos);
        Assert.True(MsgSchedulePattern.TryNext("@at 2026-03-14T11:20:30.5+01:00", null, ts, now, out n));
        Assert.False(n.Repeat);
        Assert.Equal(At("2026-03-14T10:20:30Z") + 500_000_000, n.Nanos);
        Assert.Equal("2026-03-14T10:20:30.5Z", MsgSchedulePattern.FormatRfc3339Nano(n.Nanos, TimeSpan.Zero));
    }

    private static long At(string rfc3339)
    {
        Assert.True(MsgSchedulePattern.TryParseRfc3339(rfc3339, out long nanos));
        return nanos;
    }

    private Task<(string Headers, string Data)?> LastAsync(string stream, string subject) => LastAsync(T, stream, subject);

    private static async Task<(string Headers, string Data)?> LastAsync(JsTestServer t, string stream, string subject)
    {
        var r = await ApiAsync(t, $"$JS.API.STREAM.MSG.GET.{stream}", $$"""{"last_by_subj":"{{subject}}"}""");
        var root = JsonDocument.Parse(r).RootElement;
        if (!root.TryGetProperty("message", out var m)) return null;
        string hdrs = m.TryGetProperty("hdrs", out var h) ? Encoding.UTF8.GetString(Convert.FromBase64String(h.GetString()!)) : "";
        string data = m.TryGetProperty("data", out var d) ? Encoding.UTF8.GetString(Convert.FromBase64String(d.GetString()!)) : "";
        return (hdrs, data);
    }

    private async Task<(string Headers, string Data)> WaitLastAsync(string stream, string subject)
    {
        (string, string)? found = null;
        await WaitAsync(async () => (found = await LastAsync(stream, subject)) is not null);
        return found!.Value;
    }

    private async Task<long> CountAsync(string stream, string subject)
    {
        var r = await ApiAsync(T, $"$JS.API.STREAM.INFO.{stream}", $$"""{"subjects_filter":"{{subject}}"}""");
        var state = JsonDocument.Parse(r).RootElement.GetProperty("state");
        return state.TryGetProperty("subjects", out var s) && s.TryGetProperty(subject, out var n) ? n.GetInt64() : 0;
    }

    private static async Task WaitAsync(Func<Task<bool>> condition, int seconds = 10)
    {
        var until = DateTime.UtcNow.AddSeconds(seconds);
        while (!await condition())
        {
            Assert.True(DateTime.UtcNow < until, "condition not met in time");
            await Task.Delay(100);
        }
    }
}
