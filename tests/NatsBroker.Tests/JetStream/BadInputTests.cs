using System.Text;
using NATS.Client.Core;
using NATS.Client.JetStream;
using NATS.Client.JetStream.Models;

namespace NatsBroker.Tests.JetStream;

/// <summary>Bad requests and limits get nats-server's errors, and nothing already stored is lost.</summary>
public sealed class BadInputTests
{
    private static CancellationToken Timeout(int seconds = 10) => new CancellationTokenSource(TimeSpan.FromSeconds(seconds)).Token;

    private static async Task<string> RequestAsync(JsTestServer t, string subject, string body)
    {
        var reply = await t.Nats.RequestAsync<byte[], byte[]>(subject, Encoding.UTF8.GetBytes(body), cancellationToken: Timeout());
        return Encoding.UTF8.GetString(reply.Data ?? []);
    }

    [Fact]
    public async Task Malformed_requests_get_errors_and_leave_streams_intact()
    {
        await using var t = await JsTestServer.StartAsync();
        await t.Js.CreateStreamAsync(new StreamConfig("KEEP", ["keep"]), Timeout());
        (await t.Js.PublishAsync("keep", "v", cancellationToken: Timeout())).EnsureSuccess();

        Assert.Contains("\"err_code\":10025", await RequestAsync(t, "$JS.API.STREAM.CREATE.KEEP", "{\"name\":"), StringComparison.Ordinal);
        Assert.Contains("\"err_code\":10025", await RequestAsync(t, "$JS.API.STREAM.UPDATE.KEEP", "[1,2"), StringComparison.Ordinal);
        Assert.Contains("\"err_code\":10025", await RequestAsync(t, "$JS.API.CONSUMER.CREATE.KEEP", "not json"), StringComparison.Ordinal);
        Assert.Contains("\"err_code\":10025", await RequestAsync(t, "$JS.API.STREAM.CREATE.X", "{\"name\":\"X\",\"retention\":\"forever\"}"), StringComparison.Ordinal);
        Assert.Contains("\"err_code\":10052", await RequestAsync(t, "$JS.API.STREAM.CREATE.Y", "{\"name\":\"Y\",\"subjects\":[\"a..b\"]}"), StringComparison.Ordinal);

        // A garbage pull request body gets a 400 status; garbage acks are ignored.
        await t.Js.CreateOrUpdateConsumerAsync("KEEP", new ConsumerConfig("c"), Timeout());
        var bad = await t.Nats.RequestAsync<byte[], byte[]>("$JS.API.CONSUMER.MSG.NEXT.KEEP.c", "{\"batch\":"u8.ToArray(), cancellationToken: Timeout());
        Assert.Equal(400, (int?)bad.Headers?.Code);
        await t.Nats.PublishAsync("$JS.ACK.KEEP.c.x.y", "+ACK", cancellationToken: Timeout());
        await t.Nats.PublishAsync("$JS.ACK.KEEP.c.1.1.1.1.1", "?!", cancellationToken: Timeout());

        var s = await t.Js.GetStreamAsync("KEEP", cancellationToken: Timeout());
        Assert.Equal(1, s.Info.State.Messages);
        var c = await t.Js.GetConsumerAsync("KEEP", "c", Timeout());
        var m = await c.NextAsync<string>(opts: new NatsJSNextOpts { Expires = TimeSpan.FromSeconds(2) }, cancellationToken: Timeout());
        Assert.Equal("v", m!.Data);
    }

    [Fact]
    public async Task Limits_refuse_with_nats_server_errors()
    {
        await using var t = await JsTestServer.StartAsync();
        await t.Js.CreateStreamAsync(new StreamConfig("L", ["l.>"]) { MaxMsgs = 2, Discard = StreamConfigDiscard.New, MaxMsgSize = 64 }, Timeout());
        (await t.Js.PublishAsync("l.1", "a", cancellationToken: Timeout())).EnsureSuccess();
        (await t.Js.PublishAsync("l.2", "b", cancellationToken: Timeout())).EnsureSuccess();
        var full = await t.Js.PublishAsync("l.3", "c", cancellationToken: Timeout());
        Assert.Equal(10077, full.Error!.ErrCode);
        Assert.Equal("maximum messages exceeded", full.Error.Description);
        var big = await t.Js.PublishAsync("l.4", new string('x', 100), cancellationToken: Timeout());
        Assert.Equal(10054, big.Error!.ErrCode);

        // Rollup without allow_rollup_hdrs is refused.
        var rollup = await t.Js.PublishAsync("l.1", "r", headers: new NatsHeaders { ["Nats-Rollup"] = "sub" }, cancellationToken: Timeout());
        Assert.Equal(10111, rollup.Error!.ErrCode);
        var s = await t.Js.GetStreamAsync("L", cancellationToken: Timeout());
        Assert.Equal(2, s.Info.State.Messages);
    }
}
