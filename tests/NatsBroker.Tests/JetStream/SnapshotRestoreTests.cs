using System.Text.Json.Nodes;
using NATS.Client.Core;
using NATS.Client.JetStream;
using NATS.Client.JetStream.Models;

namespace NatsBroker.Tests.JetStream;

/// <summary>
/// STREAM.SNAPSHOT / STREAM.RESTORE driven as the nats CLI drives them (<see cref="SnapshotClient"/>): a stream with
/// gaps, headers and durable consumers with acks is backed up, deleted and restored, on either engine and across
/// engines; broken snapshots, taken names, limits and flow control are refused as nats-server refuses them.
/// </summary>
public sealed class SnapshotRestoreTests
{
    private static CancellationToken Timeout(int seconds = 20) => new CancellationTokenSource(TimeSpan.FromSeconds(seconds)).Token;

    private sealed record Msg(ulong Seq, string Subject, string? Hdrs, string? Data, string Time);

    /// <summary>Every message of the stream as MSG.GET answers it (base64 headers and data, the stored time).</summary>
    private static async Task<List<Msg>> ReadAllAsync(NatsConnection nc, string stream, ulong last)
    {
        var all = new List<Msg>();
        for (ulong seq = 1; seq <= last; seq++)
        {
            var r = await SnapshotClient.RequestJsonAsync(nc, $"$JS.API.STREAM.MSG.GET.{stream}", $"{{\"seq\":{seq}}}", Timeout());
            if (SnapshotClient.ErrCode(r) == 10037) continue;
            var m = r["message"]!;
            all.Add(new Msg(m["seq"]!.GetValue<ulong>(), m["subject"]!.GetValue<string>(), m["hdrs"]?.GetValue<string>(), m["data"]?.GetValue<string>(), m["time"]!.GetValue<string>()));
        }
        return all;
    }

    /// <summary>20 messages on s.0..s.2 (headers on the even ones), 4 and 7 deleted; C has 8 delivered and 3 acked, D none.</summary>
    private static async Task<INatsJSStream> PopulateAsync(JsTestServer t, StreamConfigStorage storage)
    {
        var stream = await t.Js.CreateStreamAsync(new StreamConfig("S", ["s.>"]) { Storage = storage }, Timeout());
        for (int i = 1; i <= 20; i++)
        {
            var headers = i % 2 == 0 ? new NatsHeaders { ["X-I"] = i.ToString(System.Globalization.CultureInfo.InvariantCulture) } : null;
            (await t.Js.PublishAsync($"s.{i % 3}", $"m{i}", headers: headers, cancellationToken: Timeout())).EnsureSuccess();
        }
        await stream.DeleteMessageAsync(new StreamMsgDeleteRequest { Seq = 4 }, Timeout());
        await stream.DeleteMessageAsync(new StreamMsgDeleteRequest { Seq = 7 }, Timeout());
        var c = await t.Js.CreateOrUpdateConsumerAsync("S", new ConsumerConfig("C") { AckPolicy = ConsumerConfigAckPolicy.Explicit, AckWait = TimeSpan.FromSeconds(30) }, Timeout());
        await t.Js.CreateOrUpdateConsumerAsync("S", new ConsumerConfig("D") { AckPolicy = ConsumerConfigAckPolicy.Explicit, FilterSubject = "s.1" }, Timeout());
        int n = 0;
        await foreach (var m in c.FetchAsync<string>(new NatsJSFetchOpts { MaxMsgs = 8, Expires = TimeSpan.FromSeconds(2) }, cancellationToken: Timeout()))
        {
            if (n++ < 3) await m.AckAsync(new AckOpts { DoubleAck = true }, cancellationToken: Timeout());
        }
        Assert.Equal(8, n);
        return stream;
    }

    private static async Task AssertConsumersResumeAsync(JsTestServer t)
    {
        var c = await t.Js.GetConsumerAsync("S", "C", Timeout());
        Assert.Equal(10ul, c.Info.Delivered.StreamSeq);
        Assert.Equal(8ul, c.Info.Delivered.ConsumerSeq);
        // 1-3 acked, 4 deleted: the floor is below the first pending message (5), as before the snapshot.
        Assert.Equal(4ul, c.Info.AckFloor.StreamSeq);
        Assert.Equal(5L, (long)c.Info.NumAckPending);
        Assert.Equal(10L, (long)c.Info.NumPending);
        var d = await t.Js.GetConsumerAsync("S", "D", Timeout());
        Assert.Equal("s.1", d.Info.Config.FilterSubject);
        Assert.Equal(0ul, d.Info.Delivered.StreamSeq);
        Assert.Equal(5L, (long)d.Info.NumPending); // s.1: 1, 10, 13, 16, 19 (4 and 7 deleted)
        // The next delivery of C is the first message it never got: 11.
        await foreach (var m in c.FetchAsync<string>(new NatsJSFetchOpts { MaxMsgs = 1, Expires = TimeSpan.FromSeconds(2) }, cancellationToken: Timeout()))
        {
            Assert.Equal(11ul, m.Metadata!.Value.Sequence.Stream);
            Assert.Equal("m11", m.Data);
        }
    }

    [Theory]
    [InlineData(StreamConfigStorage.File, StreamConfigStorage.File)]
    [InlineData(StreamConfigStorage.Memory, StreamConfigStorage.Memory)]
    [InlineData(StreamConfigStorage.File, StreamConfigStorage.Memory)]
    [InlineData(StreamConfigStorage.Memory, StreamConfigStorage.File)]
    public async Task Snapshot_delete_restore_keeps_messages_and_consumer_positions(StreamConfigStorage from, StreamConfigStorage to)
    {
        await using var t = await JsTestServer.StartAsync();
        await PopulateAsync(t, from);
        var before = await ReadAllAsync(t.Nats, "S", 20);
        Assert.Equal(18, before.Count);
        var cBefore = (await t.Js.GetConsumerAsync("S", "C", Timeout())).Info;

        var backup = await SnapshotClient.BackupAsync(t.Nats, "S", chunkSize: 1024, ct: Timeout());
        Assert.Equal("io.nats.jetstream.api.v1.stream_snapshot_response", backup.Response["type"]!.GetValue<string>());
        Assert.Equal("S", backup.Response["config"]!["name"]!.GetValue<string>());
        Assert.Equal(18, backup.Response["state"]!["messages"]!.GetValue<int>());
        Assert.Equal(20, backup.Response["state"]!["last_seq"]!.GetValue<int>());
        Assert.Equal(204, backup.EndStatus);
        Assert.True(backup.Chunks > 1, "a 1 KiB chunk size cuts the snapshot into several chunks");

        await t.Js.DeleteStreamAsync("S", Timeout());
        var config = backup.Response["config"]!.DeepClone();
        config["storage"] = to == StreamConfigStorage.File ? "file" : "memory";
        var restored = await SnapshotClient.RestoreAsync(t.Nats, "S", config, backup.Response["state"], backup.Data, Timeout());
        Assert.True(restored["error"] is null, SnapshotClient.Describe(restored));
        Assert.Equal("io.nats.jetstream.api.v1.stream_create_response", restored["type"]!.GetValue<string>());
        Assert.Equal(18, restored["state"]!["messages"]!.GetValue<int>());
        Assert.Equal(1, restored["state"]!["first_seq"]!.GetValue<int>());
        Assert.Equal(20, restored["state"]!["last_seq"]!.GetValue<int>());
        Assert.Equal(to == StreamConfigStorage.File ? "file" : "memory", restored["config"]!["storage"]!.GetValue<string>());

        Assert.Equal(before, await ReadAllAsync(t.Nats, "S", 20));
        var cAfter = (await t.Js.GetConsumerAsync("S", "C", Timeout())).Info;
        Assert.Equal(cBefore.Created, cAfter.Created);
        Assert.Equal((cBefore.Delivered.StreamSeq, cBefore.Delivered.ConsumerSeq, cBefore.AckFloor.StreamSeq, cBefore.AckFloor.ConsumerSeq, cBefore.NumAckPending, cBefore.NumPending),
            (cAfter.Delivered.StreamSeq, cAfter.Delivered.ConsumerSeq, cAfter.AckFloor.StreamSeq, cAfter.AckFloor.ConsumerSeq, cAfter.NumAckPending, cAfter.NumPending));
        await AssertConsumersResumeAsync(t);

        // New messages continue the sequence.
        var ack = await t.Js.PublishAsync("s.0", "after", cancellationToken: Timeout());
        Assert.Equal(21ul, ack.Seq);
    }
}
