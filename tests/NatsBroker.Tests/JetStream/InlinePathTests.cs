using System.Text;
using System.Text.RegularExpressions;
using NATS.Client.JetStream;
using NATS.Client.JetStream.Models;
using NatsBroker.Tests.Infrastructure;

namespace NatsBroker.Tests.JetStream;

/// <summary>
/// The paths answered on the publisher's thread: memory-stream publishes stored inline
/// (core/JetStream/JsStream.InlineIngest.cs) and DIRECT.GET with the subject in the request subject
/// (core/JetStream/JetStreamService.DirectInline.cs). They must give the answers the queued paths give, in order.
/// </summary>
public sealed partial class InlinePathTests
{
    private const string HeadersConnect = """{"verbose":false,"pedantic":false,"headers":true}""";

    private static CancellationToken Timeout(int seconds = 20) => new CancellationTokenSource(TimeSpan.FromSeconds(seconds)).Token;

    /// <summary>
    /// Publishes and a direct get of their subject in one write: the get must see the last of them, whether the
    /// publishes were stored inline (memory) or are still queued for the ingest worker (file).
    /// </summary>
    [Theory]
    [InlineData(StreamConfigStorage.Memory)]
    [InlineData(StreamConfigStorage.File)]
    public async Task Direct_get_in_the_same_read_as_publishes_answers_the_last_of_them(StreamConfigStorage storage)
    {
        await using var t = await JsTestServer.StartAsync();
        await t.Js.CreateStreamAsync(new StreamConfig("DG", ["dg.>"]) { Storage = storage, AllowDirect = true }, Timeout());
        await using var c = await RawClient.ConnectAsync("127.0.0.1", t.Server.Port);
        await c.HandshakeAsync(HeadersConnect);
        await c.SendLineAsync("SUB reply.get 1");
        int value = 0;
        for (int round = 1; round <= 10; round++)
        {
            var batch = new StringBuilder();
            for (int i = 0; i < 500; i++)
            {
                string v = (++value).ToString(System.Globalization.CultureInfo.InvariantCulture);
                batch.Append("PUB dg.key ").Append(v.Length).Append("\r\n").Append(v).Append("\r\n");
            }
            batch.Append("PUB $JS.API.DIRECT.GET.DG.dg.key reply.get 0\r\n\r\n");
            await c.SendAsync(batch.ToString());
            var reply = await c.ExpectMessageAsync(TimeSpan.FromSeconds(10), skipPongs: true);
            Assert.Equal(value.ToString(System.Globalization.CultureInfo.InvariantCulture), reply.PayloadText);
            Assert.Contains($"Nats-Sequence: {value}\r\n", reply.HeaderText);
        }
    }

    /// <summary>
    /// The direct get answer byte for byte: the stored headers first, then Nats-Stream, Nats-Subject, Nats-Sequence,
    /// Nats-Time-Stamp (Go RFC 3339, nanoseconds with trailing zeros trimmed), then the empty line; a subject without
    /// messages is "404 Message Not Found". The JSON form (queued path) answers the same bytes.
    /// </summary>
    [Theory]
    [InlineData(StreamConfigStorage.Memory)]
    [InlineData(StreamConfigStorage.File)]
    public async Task Direct_get_answers_the_stored_headers_then_the_stream_headers(StreamConfigStorage storage)
    {
        await using var t = await JsTestServer.StartAsync();
        await t.Js.CreateStreamAsync(new StreamConfig("DH", ["dh.>"]) { Storage = storage, AllowDirect = true }, Timeout());
        var ack = await t.Js.PublishAsync("dh.a", "value", headers: new NATS.Client.Core.NatsHeaders { ["Foo"] = "bar" }, cancellationToken: Timeout());
        ack.EnsureSuccess();
        await using var c = await RawClient.ConnectAsync("127.0.0.1", t.Server.Port);
        await c.HandshakeAsync(HeadersConnect);
        await c.SendLineAsync("SUB reply.h 1");
        await c.SendAsync("PUB $JS.API.DIRECT.GET.DH.dh.a reply.h 0\r\n\r\n");
        var inline = await c.ExpectMessageAsync(TimeSpan.FromSeconds(10), skipPongs: true);
        Assert.Equal("value", inline.PayloadText);
        Assert.Matches(DirectHeaders(), inline.HeaderText!);
        Assert.StartsWith($"NATS/1.0\r\nFoo: bar\r\nNats-Stream: DH\r\nNats-Subject: dh.a\r\nNats-Sequence: {ack.Seq}\r\nNats-Time-Stamp: ", inline.HeaderText);

        const string body = """{"last_by_subj":"dh.a"}""";
        await c.SendAsync($"PUB $JS.API.DIRECT.GET.DH reply.h {body.Length}\r\n{body}\r\n");
        var queued = await c.ExpectMessageAsync(TimeSpan.FromSeconds(10), skipPongs: true);
        Assert.Equal(inline.HeaderText, queued.HeaderText);
        Assert.Equal(inline.PayloadText, queued.PayloadText);

        await c.SendAsync("PUB $JS.API.DIRECT.GET.DH.dh.none reply.h 0\r\n\r\n");
        var missing = await c.ExpectMessageAsync(TimeSpan.FromSeconds(10), skipPongs: true);
        Assert.Equal("NATS/1.0 404 Message Not Found\r\n\r\n", missing.HeaderText);
    }

    /// <summary>
    /// Several connections publishing to one memory stream at once, each pipelining its publishes: some are stored
    /// inline, some queued while another publisher holds the ingest gate. Every message is stored once, each
    /// connection's in its publish order, and every PubAck names a distinct sequence.
    /// </summary>
    [Fact]
    public async Task Concurrent_pipelined_publishes_to_a_memory_stream_keep_each_connections_order()
    {
        const int Connections = 4, PerConnection = 2000;
        await using var t = await JsTestServer.StartAsync();
        await t.Js.CreateStreamAsync(new StreamConfig("ORD", ["ord.>"]) { Storage = StreamConfigStorage.Memory }, Timeout());
        var clients = new RawClient[Connections];
        for (int k = 0; k < Connections; k++)
        {
            clients[k] = await RawClient.ConnectAsync("127.0.0.1", t.Server.Port);
            await clients[k].HandshakeAsync(HeadersConnect);
            await clients[k].SendLineAsync($"SUB acks.{k} 1");
        }
        try
        {
            var seqs = await Task.WhenAll(Enumerable.Range(0, Connections).Select(k => PublishAndCollectAcks(clients[k], k, PerConnection)));
            var all = seqs.SelectMany(s => s).ToList();
            Assert.Equal(Connections * PerConnection, all.Distinct().Count());

            var consumer = await t.Js.CreateOrUpdateConsumerAsync("ORD", new ConsumerConfig("check") { AckPolicy = ConsumerConfigAckPolicy.None }, Timeout());
            var next = new int[Connections];
            int received = 0;
            await foreach (var m in consumer.FetchAsync<string>(new NatsJSFetchOpts { MaxMsgs = Connections * PerConnection, Expires = TimeSpan.FromSeconds(10) }, cancellationToken: Timeout(30)))
            {
                var parts = m.Data!.Split('-');
                int k = int.Parse(parts[0], System.Globalization.CultureInfo.InvariantCulture);
                int i = int.Parse(parts[1], System.Globalization.CultureInfo.InvariantCulture);
                Assert.Equal(next[k], i);
                next[k]++;
                if (++received == Connections * PerConnection) break;
            }
            Assert.All(next, n => Assert.Equal(PerConnection, n));
        }
        finally
        {
            foreach (var c in clients) await c.DisposeAsync();
        }
    }

    private static async Task<List<ulong>> PublishAndCollectAcks(RawClient c, int k, int count)
    {
        var batch = new StringBuilder();
        for (int i = 0; i < count; i++)
        {
            string v = $"{k}-{i}";
            batch.Append("PUB ord.").Append(k).Append(" acks.").Append(k).Append(' ').Append(v.Length).Append("\r\n").Append(v).Append("\r\n");
        }
        await c.SendAsync(batch.ToString());
        var seqs = new List<ulong>(count);
        for (int i = 0; i < count; i++)
        {
            var ack = await c.ExpectMessageAsync(TimeSpan.FromSeconds(20), skipPongs: true);
            var seq = AckSeq().Match(ack.PayloadText);
            Assert.True(seq.Success, ack.PayloadText);
            seqs.Add(ulong.Parse(seq.Groups[1].Value, System.Globalization.CultureInfo.InvariantCulture));
        }
        return seqs;
    }

    [GeneratedRegex("^\\{\"stream\":\"ORD\",\"seq\":(\\d+)\\}$")]
    private static partial Regex AckSeq();

    [GeneratedRegex("^NATS/1.0\r\nFoo: bar\r\nNats-Stream: DH\r\nNats-Subject: dh.a\r\nNats-Sequence: \\d+\r\nNats-Time-Stamp: \\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d(\\.\\d*[1-9])?Z\r\n\r\n$")]
    private static partial Regex DirectHeaders();
}
