using NatsBroker.Client.Batch;
using static NatsBroker.Tests.JetStream.BatchTestKit;

namespace NatsBroker.Tests.JetStream;

/// <summary>
/// Fast-ingest batch publish (ADR-50, nats-server 2.14) over raw protocol and through NatsBroker.Client.Batch:
/// the $FI reply protocol, flow acknowledgements and their cadence with a second publisher, gaps in both modes,
/// errors, ping, the final PubAck.
/// </summary>
public sealed class FastBatchTests(AtomicBatchServer fixture) : IClassFixture<AtomicBatchServer>
{
    private JsTestServer T => fixture.T;

    private static string Fi(string id, int flow, string gap, ulong seq, int op) => $"_R.{id}.{flow}.{gap}.{seq}.{op}.$FI";

    [Fact]
    public async Task Flow_acks_every_n_messages_and_a_final_pub_ack()
    {
        await CreateStreamAsync(T, """{"name":"FB1","subjects":["fb1.>"],"allow_batched":true}""");
        await using var c = await ConnectAsync(T);
        await PubAsync(c, "fb1.a", Fi("f1", 10, "fail", 1, 0));
        Assert.Equal("{\"type\":\"ack\",\"seq\":0,\"msgs\":10}", await ReplyAsync(c, Fi("f1", 10, "fail", 1, 0)));
        for (ulong s = 2; s <= 20; s++) await PubAsync(c, "fb1.a", Fi("f1", 10, "fail", s, 1));
        Assert.Equal("{\"type\":\"ack\",\"seq\":10,\"msgs\":10}", await ReplyAsync(c));
        Assert.Equal("{\"type\":\"ack\",\"seq\":20,\"msgs\":10}", await ReplyAsync(c));
        await PubAsync(c, "fb1.a", Fi("f1", 10, "fail", 21, 2));
        Assert.Equal("{\"stream\":\"FB1\",\"seq\":21,\"batch\":\"f1\",\"count\":21}", await ReplyAsync(c, Fi("f1", 10, "fail", 21, 2)));
        Assert.Equal(21, await MessagesAsync(T, "FB1"));

        // commit-eob: no message stored; the count is what was stored.
        await PubAsync(c, "fb1.a", Fi("f2", 10, "fail", 1, 0));
        Assert.Equal("{\"type\":\"ack\",\"seq\":0,\"msgs\":10}", await ReplyAsync(c));
        await PubAsync(c, "fb1.a", Fi("f2", 10, "fail", 2, 3));
        Assert.Equal("{\"stream\":\"FB1\",\"seq\":22,\"batch\":\"f2\",\"count\":1}", await ReplyAsync(c));
        Assert.Equal(22, await MessagesAsync(T, "FB1"));
    }

    [Fact]
    public async Task Errors_as_nats_server_answers_them()
    {
        await CreateStreamAsync(T, """{"name":"FB2","subjects":["fb2.>"]}""");
        await CreateStreamAsync(T, """{"name":"FB3","subjects":["fb3.>"],"allow_batched":true}""");
        await using var c = await ConnectAsync(T);
        await PubAsync(c, "fb2.a", Fi("e", 10, "fail", 1, 0));
        Assert.Equal(Error(400, 10205, "batch publish is disabled", "FB2"), await ReplyAsync(c));
        foreach (var bad in new[] { Fi("e", 10, "maybe", 1, 0), Fi("e", 10, "ok", 1, 9), Fi("e", 10, "ok", 2, 0), Fi("e", 10, "ok", 1, 1), Fi("e", 10, "ok", 1, 3), "_R.$FI" })
        {
            await PubAsync(c, "fb3.a", bad);
            Assert.Equal(Error(400, 10206, "batch publish pattern is invalid", "FB3"), await ReplyAsync(c, bad));
        }
        await PubAsync(c, "fb3.a", Fi(new string('i', 65), 10, "ok", 1, 0));
        Assert.Equal(Error(400, 10207, "batch publish ID is invalid", "FB3"), await ReplyAsync(c));
        await PubAsync(c, "fb3.a", Fi("nobody", 10, "ok", 5, 1));
        Assert.Equal(Error(400, 10208, "batch publish ID unknown", "FB3"), await ReplyAsync(c));
        Assert.Equal(0, await MessagesAsync(T, "FB3"));
    }

    [Fact]
    public async Task Gaps_end_the_batch_in_fail_mode_and_are_reported_in_ok_mode()
    {
        await CreateStreamAsync(T, """{"name":"FB4","subjects":["fb4.>"],"allow_batched":true}""");
        await using var c = await ConnectAsync(T);
        await PubAsync(c, "fb4.a", Fi("gf", 100, "fail", 1, 0));
        Assert.Equal("{\"type\":\"ack\",\"seq\":0,\"msgs\":100}", await ReplyAsync(c));
        await PubAsync(c, "fb4.a", Fi("gf", 100, "fail", 2, 1));
        await PubAsync(c, "fb4.a", Fi("gf", 100, "fail", 4, 1));
        Assert.Equal("{\"type\":\"gap\",\"last_seq\":3,\"seq\":4}", await ReplyAsync(c));
        Assert.Equal("{\"stream\":\"FB4\",\"seq\":2,\"batch\":\"gf\",\"count\":2}", await ReplyAsync(c));
        await PubAsync(c, "fb4.a", Fi("gf", 100, "fail", 5, 1));
        Assert.Equal(Error(400, 10208, "batch publish ID unknown", "FB4"), await ReplyAsync(c));

        await PubAsync(c, "fb4.b", Fi("go", 100, "ok", 1, 0));
        Assert.Equal("{\"type\":\"ack\",\"seq\":0,\"msgs\":100}", await ReplyAsync(c));
        await PubAsync(c, "fb4.b", Fi("go", 100, "ok", 3, 1));
        Assert.Equal("{\"type\":\"gap\",\"last_seq\":2,\"seq\":3}", await ReplyAsync(c));
        // An expected-header failure is reported and the batch goes on in ok mode.
        await c.SendAsync($"HPUB fb4.b {Fi("go", 100, "ok", 4, 1)} 44 45\r\nNATS/1.0\r\nNats-Expected-Last-Sequence: 1\r\n\r\nx\r\n");
        Assert.Equal("{\"type\":\"err\",\"seq\":4,\"error\":{\"code\":400,\"err_code\":10071,\"description\":\"wrong last sequence: 4\"}}", await ReplyAsync(c));
        await PubAsync(c, "fb4.b", Fi("go", 100, "ok", 5, 2));
        Assert.Equal("{\"stream\":\"FB4\",\"seq\":5,\"batch\":\"go\",\"count\":5}", await ReplyAsync(c));
        Assert.Equal(5, await MessagesAsync(T, "FB4"));
    }

    [Fact]
    public async Task Ping_resends_the_flow_ack_and_reports_a_gap()
    {
        await CreateStreamAsync(T, """{"name":"FB5","subjects":["fb5.>"],"allow_batched":true}""");
        await using var c = await ConnectAsync(T);
        await PubAsync(c, "fb5.a", Fi("p", 10, "fail", 1, 0));
        Assert.Equal("{\"type\":\"ack\",\"seq\":0,\"msgs\":10}", await ReplyAsync(c));
        await PubAsync(c, "fb5.a", Fi("p", 10, "fail", 2, 1));
        await PubAsync(c, "fb5.a", Fi("p", 10, "fail", 2, 4));
        Assert.Equal("{\"type\":\"ack\",\"seq\":0,\"msgs\":10}", await ReplyAsync(c));
        // The client says it sent 4; the server saw 2: gap, and in fail mode the end of the batch.
        await PubAsync(c, "fb5.a", Fi("p", 10, "fail", 4, 4));
        Assert.Equal("{\"type\":\"gap\",\"last_seq\":3,\"seq\":5}", await ReplyAsync(c));
        Assert.Equal("{\"stream\":\"FB5\",\"seq\":2,\"batch\":\"p\",\"count\":2}", await ReplyAsync(c));
    }

    [Fact]
    public async Task A_second_publisher_slows_the_first_down_and_ramps_up_itself()
    {
        await CreateStreamAsync(T, """{"name":"FB6","subjects":["fb6.>"],"allow_batched":true,"storage":"memory"}""");
        await using var c = await ConnectAsync(T);
        await PubAsync(c, "fb6.a", Fi("one", 500, "fail", 1, 0));
        Assert.Equal("{\"type\":\"ack\",\"seq\":0,\"msgs\":500}", await ReplyAsync(c));
        for (ulong s = 2; s <= 500; s++) await PubAsync(c, "fb6.a", Fi("one", 500, "fail", s, 1));
        Assert.Equal("{\"type\":\"ack\",\"seq\":500,\"msgs\":500}", await ReplyAsync(c));
        // A second fast publisher starts at 1 and the budget of 500 is now shared.
        await PubAsync(c, "fb6.b", Fi("two", 500, "fail", 1, 0));
        Assert.Equal("{\"type\":\"ack\",\"seq\":0,\"msgs\":1}", await ReplyAsync(c));
        await PubAsync(c, "fb6.b", Fi("two", 500, "fail", 2, 1));
        Assert.Equal("{\"type\":\"ack\",\"seq\":1,\"msgs\":2}", await ReplyAsync(c));
        for (ulong s = 501; s <= 1000; s++) await PubAsync(c, "fb6.a", Fi("one", 500, "fail", s, 1));
        Assert.Equal("{\"type\":\"ack\",\"seq\":1000,\"msgs\":250}", await ReplyAsync(c));
    }

    [Fact]
    public async Task Net_client_publishes_10000_and_follows_the_flow()
    {
        await CreateStreamAsync(T, """{"name":"FB7","subjects":["fb7.>"],"allow_batched":true,"storage":"file"}""");
        await using var batch = new FastBatchPublisher(T.Nats, new FastBatchOptions { MaxFlow = 200 });
        var payload = new byte[256];
        FastPubAck last = default;
        for (int i = 0; i < 9_999; i++) last = await batch.AddAsync($"fb7.{i % 16}", payload, cancellationToken: Timeout(30));
        Assert.True(last.AckSequence >= 9_999 - 2 * 200, $"acknowledged up to {last.AckSequence}");
        var ack = await batch.CommitAsync("fb7.end", payload, cancellationToken: Timeout(30));
        Assert.Equal(10_000UL, ack.Count);
        Assert.Equal(10_000UL, ack.Sequence);
        Assert.Equal(10_000, await MessagesAsync(T, "FB7"));
        Assert.Empty(batch.Gaps);

        await CreateStreamAsync(T, """{"name":"FB8","subjects":["fb8.>"]}""");
        await using var refused = new FastBatchPublisher(T.Nats);
        var ex = await Assert.ThrowsAsync<BatchPublishException>(async () => await refused.AddAsync("fb8.a", payload, cancellationToken: Timeout()));
        Assert.Equal(10205, ex.Error.ErrCode);
    }
}
