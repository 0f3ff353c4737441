using System.Text;
using System.Text.Json;
using NatsBroker.Client.Batch;
using static NatsBroker.Tests.JetStream.BatchTestKit;

namespace NatsBroker.Tests.JetStream;

/// <summary>One broker for the atomic batch tests (each test uses its own streams).</summary>
public sealed class AtomicBatchServer : IAsyncLifetime
{
    internal JsTestServer T { get; private set; } = null!;
    public async Task InitializeAsync() => T = await JsTestServer.StartAsync();
    public async Task DisposeAsync() => await T.DisposeAsync();
}

/// <summary>
/// Atomic batch publish (ADR-50, nats-server 2.12–2.14) over raw protocol and through NatsBroker.Client.Batch:
/// staging replies, commit, eob, errors with nats-server's codes and texts, checks at commit, limits.
/// </summary>
public sealed class AtomicBatchTests(AtomicBatchServer fixture) : IClassFixture<AtomicBatchServer>
{
    private JsTestServer T => fixture.T;

    [Fact]
    public async Task Commit_stores_the_whole_batch_and_answers_with_batch_and_count()
    {
        await CreateStreamAsync(T, """{"name":"AB1","subjects":["ab1.>"],"allow_atomic":true}""");
        await using var c = await ConnectAsync(T);
        await HPubAsync(c, "ab1.a", "_R.1", Batch("b1", 1), "one");
        Assert.Equal("", await ReplyAsync(c, "_R.1"));
        await HPubAsync(c, "ab1.b", null, Batch("b1", 2), "two");
        // Staged, not stored yet.
        Assert.Equal(0, await MessagesAsync(T, "AB1"));
        await HPubAsync(c, "ab1.c", "_R.3", Batch("b1", 3, "1"), "three");
        Assert.Equal("{\"stream\":\"AB1\",\"seq\":3,\"batch\":\"b1\",\"count\":3}", await ReplyAsync(c, "_R.3"));
        Assert.Equal(3, await MessagesAsync(T, "AB1"));
        // Stored with their headers, the commit message included.
        var get = await ApiAsync(T, "$JS.API.STREAM.MSG.GET.AB1", """{"seq":3}""");
        var hdrs = Encoding.UTF8.GetString(Convert.FromBase64String(JsonDocument.Parse(get).RootElement.GetProperty("message").GetProperty("hdrs").GetString()!));
        Assert.Contains("Nats-Batch-Commit: 1", hdrs, StringComparison.Ordinal);
    }

    [Fact]
    public async Task End_of_batch_commit_stores_no_message_and_marks_the_last_one()
    {
        await CreateStreamAsync(T, """{"name":"AB2","subjects":["ab2.>"],"allow_atomic":true}""");
        await using var c = await ConnectAsync(T);
        await HPubAsync(c, "ab2.a", "_R.1", Batch("e", 1), "one");
        Assert.Equal("", await ReplyAsync(c, "_R.1"));
        await HPubAsync(c, "ab2.a", "_R.2", Batch("e", 2), "two");
        Assert.Equal("", await ReplyAsync(c, "_R.2"));
        await HPubAsync(c, "ab2.a", "_R.3", Batch("e", 3, "eob"), "");
        Assert.Equal("{\"stream\":\"AB2\",\"seq\":2,\"batch\":\"e\",\"count\":2}", await ReplyAsync(c, "_R.3"));
        Assert.Equal(2, await MessagesAsync(T, "AB2"));
        var get = await ApiAsync(T, "$JS.API.STREAM.MSG.GET.AB2", """{"seq":2}""");
        var hdrs = Encoding.UTF8.GetString(Convert.FromBase64String(JsonDocument.Parse(get).RootElement.GetProperty("message").GetProperty("hdrs").GetString()!));
        Assert.Contains("Nats-Batch-Commit: 1", hdrs, StringComparison.Ordinal);
        // eob as the first message is an incomplete batch.
        await HPubAsync(c, "ab2.a", "_R.4", Batch("e2", 1, "eob"), "");
        Assert.Equal(Error(400, 10176, "atomic publish batch is incomplete", "AB2"), await ReplyAsync(c, "_R.4"));
    }

    [Fact]
    public async Task Errors_as_nats_server_answers_them()
    {
        await CreateStreamAsync(T, """{"name":"AB3","subjects":["ab3.>"]}""");
        await CreateStreamAsync(T, """{"name":"AB4","subjects":["ab4.>"],"allow_atomic":true}""");
        await using var c = await ConnectAsync(T);
        await HPubAsync(c, "ab3.a", "_R.1", Batch("x", 1));
        Assert.Equal(Error(400, 10174, "atomic publish is disabled", "AB3"), await ReplyAsync(c, "_R.1"));
        await HPubAsync(c, "ab4.a", "_R.2", Batch(new string('i', 65), 1));
        Assert.Equal(Error(400, 10179, "atomic publish batch ID is invalid", "AB4"), await ReplyAsync(c, "_R.2"));
        await HPubAsync(c, "ab4.a", "_R.3", "Nats-Batch-Id: y\r\n");
        Assert.Equal(Error(400, 10175, "atomic publish sequence is missing", "AB4"), await ReplyAsync(c, "_R.3"));
        await HPubAsync(c, "ab4.a", "_R.4", Batch("z", 1, "yes"));
        Assert.Equal(Error(400, 10200, "atomic publish batch commit is invalid", "AB4"), await ReplyAsync(c, "_R.4"));
        await HPubAsync(c, "ab4.a", "_R.5", Batch("unknown", 5));
        Assert.Equal(Error(400, 10176, "atomic publish batch is incomplete", "AB4"), await ReplyAsync(c, "_R.5"));
        await HPubAsync(c, "ab4.a", "_R.6", Batch("unknown", 1001));
        Assert.Equal(Error(400, 10199, "atomic publish batch is too large: 1000", "AB4"), await ReplyAsync(c, "_R.6"));
        // A gap abandons the batch; what follows it is incomplete too.
        await HPubAsync(c, "ab4.a", "_R.7", Batch("g", 1));
        Assert.Equal("", await ReplyAsync(c, "_R.7"));
        await HPubAsync(c, "ab4.a", "_R.8", Batch("g", 3));
        Assert.Equal(Error(400, 10176, "atomic publish batch is incomplete", "AB4"), await ReplyAsync(c, "_R.8"));
        await HPubAsync(c, "ab4.a", "_R.9", Batch("g", 2, "1"));
        Assert.Equal(Error(400, 10176, "atomic publish batch is incomplete", "AB4"), await ReplyAsync(c, "_R.9"));
        Assert.Equal(0, await MessagesAsync(T, "AB4"));
        // persist_mode async cannot be combined with allow_atomic.
        var r = await ApiAsync(T, "$JS.API.STREAM.CREATE.AB5", """{"name":"AB5","storage":"file","persist_mode":"async","allow_atomic":true}""");
        Assert.Contains("{\"code\":500,\"err_code\":10052,\"description\":\"async persist mode is not supported with atomic batch publish\"}", r, StringComparison.Ordinal);
    }

    [Fact]
    public async Task Expected_headers_are_checked_at_commit_and_fail_the_whole_batch()
    {
        await CreateStreamAsync(T, """{"name":"AB6","subjects":["ab6.>"],"allow_atomic":true}""");
        await using var c = await ConnectAsync(T);
        await HPubAsync(c, "ab6.a", "_R.0", "Nats-Msg-Id: m0\r\n"); // a plain publish: last sequence 1
        Assert.Contains("\"seq\":1", await ReplyAsync(c, "_R.0"), StringComparison.Ordinal);

        await HPubAsync(c, "ab6.a", "_R.1", Batch("w", 1) + "Nats-Expected-Last-Sequence: 7\r\n");
        Assert.Equal("", await ReplyAsync(c, "_R.1")); // staged: checks run at commit
        await HPubAsync(c, "ab6.b", "_R.2", Batch("w", 2, "1"));
        Assert.Equal(Error(400, 10071, "wrong last sequence: 1", "AB6"), await ReplyAsync(c, "_R.2"));

        // Only the first message may carry Nats-Expected-Last-Sequence.
        await HPubAsync(c, "ab6.a", "_R.3", Batch("v", 1) + "Nats-Expected-Last-Sequence: 1\r\n");
        Assert.Equal("", await ReplyAsync(c, "_R.3"));
        await HPubAsync(c, "ab6.b", "_R.4", Batch("v", 2, "1") + "Nats-Expected-Last-Sequence: 2\r\n");
        Assert.Equal(Error(400, 10164, "wrong last sequence", "AB6"), await ReplyAsync(c, "_R.4"));

        // Duplicate message ids: inside the batch, and against the stream's window.
        await HPubAsync(c, "ab6.a", "_R.5", Batch("d", 1) + "Nats-Msg-Id: x\r\n");
        Assert.Equal("", await ReplyAsync(c, "_R.5"));
        await HPubAsync(c, "ab6.a", "_R.6", Batch("d", 2, "1") + "Nats-Msg-Id: x\r\n");
        Assert.Equal(Error(400, 10201, "atomic publish batch contains duplicate message id", "AB6"), await ReplyAsync(c, "_R.6"));
        await HPubAsync(c, "ab6.a", "_R.7", Batch("d2", 1, "1") + "Nats-Msg-Id: m0\r\n");
        Assert.Equal(Error(400, 10201, "atomic publish batch contains duplicate message id", "AB6"), await ReplyAsync(c, "_R.7"));
        await HPubAsync(c, "ab6.a", "_R.8", Batch("u", 1, "1") + "Nats-Expected-Last-Msg-Id: m0\r\n");
        Assert.Equal(Error(400, 10177, "atomic publish unsupported header used: Nats-Expected-Last-Msg-Id", "AB6"), await ReplyAsync(c, "_R.8"));

        // A subject already written in the batch cannot be checked with Nats-Expected-Last-Subject-Sequence.
        await HPubAsync(c, "ab6.s", "_R.9", Batch("s", 1) + "Nats-Expected-Last-Subject-Sequence: 0\r\n");
        Assert.Equal("", await ReplyAsync(c, "_R.9"));
        await HPubAsync(c, "ab6.s", "_R.10", Batch("s", 2, "1") + "Nats-Expected-Last-Subject-Sequence: 0\r\n");
        Assert.Equal(Error(400, 10164, "wrong last sequence", "AB6"), await ReplyAsync(c, "_R.10"));
        Assert.Equal(1, await MessagesAsync(T, "AB6"));

        // The same checks passing: the batch is stored.
        await HPubAsync(c, "ab6.s", "_R.11", Batch("ok", 1) + "Nats-Expected-Last-Sequence: 1\r\nNats-Expected-Last-Subject-Sequence: 0\r\n");
        Assert.Equal("", await ReplyAsync(c, "_R.11"));
        await HPubAsync(c, "ab6.t", "_R.12", Batch("ok", 2, "1") + "Nats-Msg-Id: new\r\n");
        Assert.Equal("{\"stream\":\"AB6\",\"seq\":3,\"batch\":\"ok\",\"count\":2}", await ReplyAsync(c, "_R.12"));
    }

    [Fact]
    public async Task Discard_new_limits_refuse_the_whole_batch()
    {
        await CreateStreamAsync(T, """{"name":"AB7","subjects":["ab7.>"],"allow_atomic":true,"max_msgs":3,"discard":"new"}""");
        await using var c = await ConnectAsync(T);
        for (int i = 1; i <= 3; i++) await HPubAsync(c, "ab7.a", i == 3 ? "_R.1" : null, Batch("l", (ulong)i, i == 3 ? "1" : null));
        Assert.Contains("\"count\":3", await ReplyAsync(c, "_R.1"), StringComparison.Ordinal);
        await HPubAsync(c, "ab7.a", "_R.2", Batch("m", 1, "1"));
        Assert.Equal(Error(503, 10077, "maximum messages exceeded", "AB7"), await ReplyAsync(c, "_R.2"));
        Assert.Equal(3, await MessagesAsync(T, "AB7"));
    }

    [Fact]
    public async Task At_most_50_batches_in_flight_per_stream()
    {
        await CreateStreamAsync(T, """{"name":"AB8","subjects":["ab8.>"],"allow_atomic":true}""");
        await using var c = await ConnectAsync(T);
        for (int i = 0; i < 50; i++)
        {
            await HPubAsync(c, "ab8.a", $"_R.{i}", Batch($"f{i}", 1));
            Assert.Equal("", await ReplyAsync(c, $"_R.{i}"));
        }
        await HPubAsync(c, "ab8.a", "_R.x", Batch("f50", 1));
        Assert.Equal(Error(429, 10210, "atomic publish too many inflight", "AB8"), await ReplyAsync(c, "_R.x"));
        // Committing one makes room.
        await HPubAsync(c, "ab8.a", "_R.c", Batch("f0", 2, "1"));
        Assert.Contains("\"count\":2", await ReplyAsync(c, "_R.c"), StringComparison.Ordinal);
        await HPubAsync(c, "ab8.a", "_R.y", Batch("f50", 1));
        Assert.Equal("", await ReplyAsync(c, "_R.y"));
    }

    [Fact]
    public async Task Net_client_commits_1000_and_is_refused_past_the_limit()
    {
        await CreateStreamAsync(T, """{"name":"AB9","subjects":["ab9.>"],"allow_atomic":true,"storage":"memory"}""");
        var batch = new AtomicBatchPublisher(T.Nats);
        var payload = new byte[256];
        for (int i = 0; i < 999; i++) await batch.AddAsync($"ab9.{i % 10}", payload, cancellationToken: Timeout());
        var ack = await batch.CommitAsync("ab9.last", payload, cancellationToken: Timeout());
        Assert.Equal(1000UL, ack.Count);
        Assert.Equal(1000UL, ack.Sequence);
        Assert.Equal(batch.BatchId, ack.BatchId);
        Assert.Equal(1000, await MessagesAsync(T, "AB9"));

        var tooBig = new AtomicBatchPublisher(T.Nats);
        for (int i = 0; i < 1000; i++) await tooBig.AddAsync("ab9.x", payload, cancellationToken: Timeout());
        var ex = await Assert.ThrowsAsync<BatchPublishException>(async () => await tooBig.CommitAsync("ab9.x", payload, cancellationToken: Timeout()));
        Assert.Equal(10199, ex.Error.ErrCode);
        Assert.Equal(1000, await MessagesAsync(T, "AB9"));

        var eob = new AtomicBatchPublisher(T.Nats);
        await eob.AddAsync("ab9.e", payload, cancellationToken: Timeout());
        await eob.AddAsync("ab9.e", payload, cancellationToken: Timeout());
        var eobAck = await eob.CommitEndOfBatchAsync(cancellationToken: Timeout());
        Assert.Equal(2UL, eobAck.Count);
        Assert.Equal(1002, await MessagesAsync(T, "AB9"));
    }

    [Fact]
    public async Task An_idle_batch_is_abandoned_with_an_advisory()
    {
        await using var t = await JsTestServer.StartAsync(configure: o => o.JetStreamBatchTimeout = TimeSpan.FromSeconds(1));
        await CreateStreamAsync(t, """{"name":"AT","subjects":["at.>"],"allow_atomic":true}""");
        await using var advisories = await t.Nats.SubscribeCoreAsync<byte[]>("$JS.EVENT.ADVISORY.STREAM.BATCH_ABANDONED.AT", cancellationToken: Timeout());
        await t.Nats.PingAsync(Timeout());
        await using var c = await ConnectAsync(t);
        await HPubAsync(c, "at.a", "_R.1", Batch("idle", 1));
        Assert.Equal("", await ReplyAsync(c, "_R.1"));
        var adv = await advisories.Msgs.ReadAsync(Timeout(15));
        using var doc = JsonDocument.Parse(adv.Data!);
        Assert.Equal("io.nats.jetstream.advisory.v1.stream_batch_abandoned", doc.RootElement.GetProperty("type").GetString());
        Assert.Equal("AT", doc.RootElement.GetProperty("stream").GetString());
        Assert.Equal("idle", doc.RootElement.GetProperty("batch").GetString());
        Assert.Equal("timeout", doc.RootElement.GetProperty("reason").GetString());
        await HPubAsync(c, "at.a", "_R.2", Batch("idle", 2, "1"));
        Assert.Equal(Error(400, 10176, "atomic publish batch is incomplete", "AT"), await ReplyAsync(c, "_R.2"));
        Assert.Equal(0, await MessagesAsync(t, "AT"));
    }
}
