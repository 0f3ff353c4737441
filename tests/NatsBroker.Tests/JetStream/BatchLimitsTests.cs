using NatsBroker.Configuration;
using static NatsBroker.Tests.JetStream.BatchTestKit;

namespace NatsBroker.Tests.JetStream;

/// <summary>
/// <c>jetstream { limits { batch { max_inflight_per_stream, max_inflight_total, max_msgs, timeout } } }</c>
/// (nats-server 2.12+ opts.go parseJetStreamLimitsBatch): lowered limits, set through the config file parser, are
/// enforced with nats-server's error codes (stream.go processJetStreamAtomicBatchMsg / processJetStreamFastBatchMsg).
/// </summary>
public sealed class BatchLimitsTests
{
    private const string Config = """
        jetstream {
          limits {
            batch {
              max_inflight_per_stream: 2
              max_inflight_total: 3
              max_msgs: 5
              timeout: "30s"
            }
          }
        }
        """;

    private static Task<JsTestServer> StartAsync() =>
        JsTestServer.StartAsync(configure: o => ConfigLoader.Apply(ConfigParser.Parse(Config, "t.conf"), o));

    /// <summary>
    /// nats-server refuses a reload that changes <c>jetstream { limits {} }</c> ("config reload not supported for
    /// JetStreamLimits", reload.go) and applies none of it; so does ours, and the old limits stay in force.
    /// </summary>
    [Fact]
    public async Task A_reload_that_changes_the_batch_limits_is_refused_as_a_whole()
    {
        await using var t = await StartAsync();
        var next = new ServerOptions();
        ConfigLoader.Apply(ConfigParser.Parse(Config.Replace("max_msgs: 5", "max_msgs: 7", StringComparison.Ordinal) + "\nmax_payload: 2048\n", "t.conf"), next);
        var refused = Assert.Throws<InvalidOperationException>(() => t.Server.Server.Reload(next));
        Assert.StartsWith("config reload not supported for JetStreamLimits: old={", refused.Message, StringComparison.Ordinal);
        Assert.Contains("max_batch_size: 5", refused.Message, StringComparison.Ordinal);
        Assert.Contains("max_batch_size: 7", refused.Message, StringComparison.Ordinal);
        Assert.NotEqual(2048, t.Server.Server.Options.MaxPayload); // nothing of that reload applied

        // The same file with only max_payload changed reloads.
        var same = new ServerOptions();
        ConfigLoader.Apply(ConfigParser.Parse(Config + "\nmax_payload: 2048\n", "t.conf"), same);
        t.Server.Server.Reload(same);
        Assert.Equal(2048, t.Server.Server.Options.MaxPayload);
    }

    [Fact]
    public async Task Atomic_batches_are_held_to_the_configured_size_and_inflight_limits()
    {
        await using var t = await StartAsync();
        foreach (var s in new[] { "LA", "LB", "LC" })
            await CreateStreamAsync(t, $$"""{"name":"{{s}}","subjects":["{{s.ToLowerInvariant()}}.>"],"allow_atomic":true}""");
        await using var c = await ConnectAsync(t);

        // max_msgs 5: five commit, a sixth message is "too large: 5" (10199) and abandons the batch.
        for (ulong i = 1; i <= 4; i++) await HPubAsync(c, "la.a", null, Batch("five", i));
        await HPubAsync(c, "la.a", "_R.5", Batch("five", 5, "1"));
        Assert.Contains("\"count\":5", await ReplyAsync(c, "_R.5"), StringComparison.Ordinal);
        for (ulong i = 1; i <= 5; i++) await HPubAsync(c, "la.a", null, Batch("six", i));
        await HPubAsync(c, "la.a", "_R.6", Batch("six", 6, "1"));
        Assert.Equal(Error(400, 10199, "atomic publish batch is too large: 5", "LA"), await ReplyAsync(c, "_R.6"));
        await HPubAsync(c, "la.a", "_R.7", Batch("unknown", 7));
        Assert.Equal(Error(400, 10199, "atomic publish batch is too large: 5", "LA"), await ReplyAsync(c, "_R.7"));
        Assert.Equal(5, await MessagesAsync(t, "LA"));

        // max_inflight_per_stream 2: a third open batch on LA is refused with 10210.
        await HPubAsync(c, "la.a", "_R.a1", Batch("a1", 1));
        Assert.Equal("", await ReplyAsync(c, "_R.a1"));
        await HPubAsync(c, "la.a", "_R.a2", Batch("a2", 1));
        Assert.Equal("", await ReplyAsync(c, "_R.a2"));
        await HPubAsync(c, "la.a", "_R.a3", Batch("a3", 1));
        Assert.Equal(Error(429, 10210, "atomic publish too many inflight", "LA"), await ReplyAsync(c, "_R.a3"));

        // max_inflight_total 3: one more on LB fits, a fourth on the server (on LC) does not.
        await HPubAsync(c, "lb.a", "_R.b1", Batch("b1", 1));
        Assert.Equal("", await ReplyAsync(c, "_R.b1"));
        await HPubAsync(c, "lc.a", "_R.c1", Batch("c1", 1));
        Assert.Equal(Error(429, 10210, "atomic publish too many inflight", "LC"), await ReplyAsync(c, "_R.c1"));

        // Committing one frees a place on the server.
        await HPubAsync(c, "lb.a", "_R.b2", Batch("b1", 2, "1"));
        Assert.Contains("\"count\":2", await ReplyAsync(c, "_R.b2"), StringComparison.Ordinal);
        await HPubAsync(c, "lc.a", "_R.c2", Batch("c1", 1));
        Assert.Equal("", await ReplyAsync(c, "_R.c2"));
    }

    [Fact]
    public async Task Fast_batches_are_held_to_the_configured_inflight_limits()
    {
        await using var t = await StartAsync();
        foreach (var s in new[] { "FA", "FB" })
            await CreateStreamAsync(t, $$"""{"name":"{{s}}","subjects":["{{s.ToLowerInvariant()}}.>"],"allow_batched":true}""");
        await using var c = await ConnectAsync(t);
        static string Fi(string id, ulong seq, int op) => $"_R.{id}.10.fail.{seq}.{op}.$FI";

        await PubAsync(c, "fa.a", Fi("f1", 1, 0));
        Assert.Equal("{\"type\":\"ack\",\"seq\":0,\"msgs\":10}", await ReplyAsync(c, Fi("f1", 1, 0)));
        await PubAsync(c, "fa.a", Fi("f2", 1, 0));
        Assert.Equal("{\"type\":\"ack\",\"seq\":0,\"msgs\":1}", await ReplyAsync(c, Fi("f2", 1, 0)));
        // The second publisher's flow of 1 acknowledges its first message as well.
        Assert.Equal("{\"type\":\"ack\",\"seq\":1,\"msgs\":2}", await ReplyAsync(c, Fi("f2", 1, 0)));
        // max_inflight_per_stream 2 (nats-server's fast default is 1,000).
        await PubAsync(c, "fa.a", Fi("f3", 1, 0));
        Assert.Equal(Error(429, 10211, "batch publish too many inflight", "FA"), await ReplyAsync(c, Fi("f3", 1, 0)));
        // max_inflight_total 3 (default 50,000): one more on FB, then none.
        await PubAsync(c, "fb.a", Fi("g1", 1, 0));
        Assert.Equal("{\"type\":\"ack\",\"seq\":0,\"msgs\":10}", await ReplyAsync(c, Fi("g1", 1, 0)));
        await PubAsync(c, "fb.a", Fi("g2", 1, 0));
        Assert.Equal(Error(429, 10211, "batch publish too many inflight", "FB"), await ReplyAsync(c, Fi("g2", 1, 0)));
        // max_msgs is an atomic limit only: a fast batch runs past 5.
        for (ulong s = 2; s <= 8; s++) await PubAsync(c, "fb.a", Fi("g1", s, 1));
        await PubAsync(c, "fb.a", Fi("g1", 9, 2));
        Assert.Equal("{\"stream\":\"FB\",\"seq\":9,\"batch\":\"g1\",\"count\":9}", await ReplyAsync(c, Fi("g1", 9, 2)));
    }
}
