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
        await using var advisories = await t.Nats.SubscribeCoreAsync<byte[]>("$JS.EVENT.ADVISORY.STREAM.*.S", cancellationToken: Timeout());
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

        // nats-server's advisories (snapshot_complete may come after the client saw the end marker: compared as a set).
        var types = new List<string>();
        while (types.Count < 4)
        {
            var a = await advisories.Msgs.ReadAsync(Timeout());
            var type = JsonNode.Parse(a.Data!)!["type"]!.GetValue<string>();
            if (type.Contains("snapshot", StringComparison.Ordinal) || type.Contains("restore", StringComparison.Ordinal)) types.Add(type);
        }
        types.Sort(StringComparer.Ordinal);
        Assert.Equal(["io.nats.jetstream.advisory.v1.restore_complete", "io.nats.jetstream.advisory.v1.restore_create",
            "io.nats.jetstream.advisory.v1.snapshot_complete", "io.nats.jetstream.advisory.v1.snapshot_create"], types);

        // New messages continue the sequence.
        var ack = await t.Js.PublishAsync("s.0", "after", cancellationToken: Timeout());
        Assert.Equal(21ul, ack.Seq);
    }

    /// <summary>The snapshot is a valid Snappy framing stream (what the nats CLI's s2 reader needs) around our format.</summary>
    [Fact]
    public async Task Snapshot_data_is_a_snappy_framed_stream_of_our_format()
    {
        await using var t = await JsTestServer.StartAsync();
        await PopulateAsync(t, StreamConfigStorage.File);
        var backup = await SnapshotClient.BackupAsync(t.Nats, "S", ct: Timeout());
        Assert.Equal(204, backup.EndStatus);
        await using var snappy = new Snappier.SnappyStream(new MemoryStream(backup.Data), System.IO.Compression.CompressionMode.Decompress);
        var inner = new MemoryStream();
        await snappy.CopyToAsync(inner, Timeout());
        Assert.Equal("NBJSSNAP"u8.ToArray(), inner.ToArray()[..8]);
        Assert.True(inner.Length > 18 * 3, "holds the messages");
    }

    /// <summary>Messages larger than a chunk and than a framing block (64 KiB) cross both boundaries intact.</summary>
    [Fact]
    public async Task Large_messages_cross_chunk_boundaries()
    {
        await using var t = await JsTestServer.StartAsync();
        await t.Js.CreateStreamAsync(new StreamConfig("S", ["s.>"]), Timeout());
        var big = new byte[300_000];
        new Random(7).NextBytes(big);
        (await t.Js.PublishAsync("s.big", big, cancellationToken: Timeout())).EnsureSuccess();
        (await t.Js.PublishAsync("s.small", "x", cancellationToken: Timeout())).EnsureSuccess();
        var before = await ReadAllAsync(t.Nats, "S", 2);
        var backup = await SnapshotClient.BackupAsync(t.Nats, "S", chunkSize: 50_000, ct: Timeout());
        Assert.Equal(204, backup.EndStatus);
        await t.Js.DeleteStreamAsync("S", Timeout());
        var config = backup.Response["config"]!.DeepClone();
        config["storage"] = "memory";
        var r = await SnapshotClient.RestoreAsync(t.Nats, "S", config, null, backup.Data, Timeout());
        Assert.True(r["error"] is null, SnapshotClient.Describe(r));
        var after = await ReadAllAsync(t.Nats, "S", 2);
        Assert.Equal(before, after);
        Assert.Equal(Convert.ToBase64String(big), after[0].Data);
    }

    [Fact]
    public async Task Restore_of_a_truncated_or_corrupted_snapshot_fails_and_leaves_no_stream()
    {
        await using var t = await JsTestServer.StartAsync();
        await PopulateAsync(t, StreamConfigStorage.File);
        var backup = await SnapshotClient.BackupAsync(t.Nats, "S", ct: Timeout());
        Assert.Equal(204, backup.EndStatus);
        await t.Js.DeleteStreamAsync("S", Timeout());
        var config = backup.Response["config"]!;

        var truncated = await SnapshotClient.RestoreAsync(t.Nats, "S", config, null, backup.Data[..(backup.Data.Length - 20)], Timeout());
        Assert.Equal(10062, SnapshotClient.ErrCode(truncated));
        Assert.Contains("truncated", truncated["error"]!["description"]!.GetValue<string>(), StringComparison.Ordinal);
        await AssertNoStreamAsync(t);

        var corrupt = backup.Data.ToArray();
        corrupt[corrupt.Length / 2] ^= 0x40;
        var bad = await SnapshotClient.RestoreAsync(t.Nats, "S", config, null, corrupt, Timeout());
        Assert.Equal(10062, SnapshotClient.ErrCode(bad));
        Assert.Contains("checksum", bad["error"]!["description"]!.GetValue<string>(), StringComparison.Ordinal);
        await AssertNoStreamAsync(t);

        var notOurs = await SnapshotClient.RestoreAsync(t.Nats, "S", config, null, "not a snapshot at all"u8.ToArray(), Timeout());
        Assert.Equal(10062, SnapshotClient.ErrCode(notOurs));
        await AssertNoStreamAsync(t);

        // Nothing was left behind: the name is free again and the intact snapshot restores.
        string restores = Path.Combine(t.StoreDir, "jetstream", "$G", "restores");
        Assert.True(!Directory.Exists(restores) || Directory.GetFileSystemEntries(restores).Length == 0, "no restore directory left");
        var good = await SnapshotClient.RestoreAsync(t.Nats, "S", config, null, backup.Data, Timeout());
        Assert.True(good["error"] is null, SnapshotClient.Describe(good));
        Assert.Equal(18, good["state"]!["messages"]!.GetValue<int>());
    }

    private static async Task AssertNoStreamAsync(JsTestServer t)
    {
        var info = await SnapshotClient.RequestJsonAsync(t.Nats, "$JS.API.STREAM.INFO.S", "", Timeout());
        Assert.Equal(10059, SnapshotClient.ErrCode(info));
    }

    [Fact]
    public async Task Restore_to_an_existing_name_is_refused()
    {
        await using var t = await JsTestServer.StartAsync();
        await PopulateAsync(t, StreamConfigStorage.Memory);
        var backup = await SnapshotClient.BackupAsync(t.Nats, "S", ct: Timeout());
        var r = await SnapshotClient.RestoreAsync(t.Nats, "S", backup.Response["config"]!, null, backup.Data, Timeout());
        Assert.Equal(10130, SnapshotClient.ErrCode(r));
        Assert.Equal("stream name already in use, cannot restore", r["error"]!["description"]!.GetValue<string>());
        Assert.Equal("io.nats.jetstream.api.v1.stream_restore_response", r["type"]!.GetValue<string>());
        // The stream is untouched.
        Assert.Equal(18, (await t.Js.GetStreamAsync("S", cancellationToken: Timeout())).Info.State.Messages);

        var mismatch = await SnapshotClient.RestoreAsync(t.Nats, "OTHER", backup.Response["config"]!, null, backup.Data, Timeout());
        Assert.Equal(10056, SnapshotClient.ErrCode(mismatch));
    }

    /// <summary>
    /// As nats-server 2.14.5 (jsStreamRestoreRequest / RestoreStream): a name being restored is not held. A second
    /// restore of it and a create are accepted; a restore that ends after the name was taken fails with 10130; a
    /// stalled restore answers a late chunk with its error. RestoreDifferentialTests compares this with 2.14.5.
    /// </summary>
    [Fact]
    public async Task A_name_being_restored_is_not_held_and_the_later_restore_fails()
    {
        await using var t = await JsTestServer.StartAsync();
        await PopulateAsync(t, StreamConfigStorage.File);
        var backup = await SnapshotClient.BackupAsync(t.Nats, "S", ct: Timeout());
        await t.Js.DeleteStreamAsync("S", Timeout());
        var config = backup.Response["config"]!;
        var first = await SnapshotClient.RestoreRequestAsync(t.Nats, "S", config, null, Timeout());
        Assert.StartsWith("$JS.SNAPSHOT.RESTORE.S.", first["deliver_subject"]!.GetValue<string>(), StringComparison.Ordinal);
        var second = await SnapshotClient.RestoreRequestAsync(t.Nats, "S", config, null, Timeout());
        Assert.True(second["error"] is null, SnapshotClient.Describe(second));
        Assert.NotEqual(first["deliver_subject"]!.GetValue<string>(), second["deliver_subject"]!.GetValue<string>());

        var done = await SnapshotClient.SendRestoreDataAsync(t.Nats, second["deliver_subject"]!.GetValue<string>(), backup.Data, Timeout());
        Assert.True(done["error"] is null, SnapshotClient.Describe(done));
        var late = await SnapshotClient.SendRestoreDataAsync(t.Nats, first["deliver_subject"]!.GetValue<string>(), backup.Data, Timeout());
        Assert.Equal(10130, SnapshotClient.ErrCode(late));
        Assert.Equal("io.nats.jetstream.api.v1.stream_create_response", late["type"]!.GetValue<string>());
        // The stream the second restore made is untouched by the failed one.
        Assert.Equal(18, (await t.Js.GetStreamAsync("S", cancellationToken: Timeout())).Info.State.Messages);

        // A create while a restore is reading takes the name; the restore then fails.
        await t.Js.DeleteStreamAsync("S", Timeout());
        var third = await SnapshotClient.RestoreRequestAsync(t.Nats, "S", config, null, Timeout());
        var create = await SnapshotClient.RequestJsonAsync(t.Nats, "$JS.API.STREAM.CREATE.S", "{\"name\":\"S\",\"subjects\":[\"s.>\"]}", Timeout());
        Assert.True(create["error"] is null, SnapshotClient.Describe(create));
        var refused = await SnapshotClient.SendRestoreDataAsync(t.Nats, third["deliver_subject"]!.GetValue<string>(), backup.Data, Timeout());
        Assert.Equal(10130, SnapshotClient.ErrCode(refused));
        Assert.Equal(0, (await t.Js.GetStreamAsync("S", cancellationToken: Timeout())).Info.State.Messages);
    }

    /// <summary>No chunk for 5 s: the restore ends, and a late chunk is answered with its error.</summary>
    [Fact]
    public async Task A_stalled_restore_answers_a_late_chunk_with_its_error()
    {
        await using var t = await JsTestServer.StartAsync();
        const string config = "{\"config\":{\"name\":\"R\",\"subjects\":[\"r.>\"],\"storage\":\"file\"},\"state\":{}}";
        var first = await SnapshotClient.RequestJsonAsync(t.Nats, "$JS.API.STREAM.RESTORE.R", config, Timeout());
        Assert.StartsWith("$JS.SNAPSHOT.RESTORE.R.", first["deliver_subject"]!.GetValue<string>(), StringComparison.Ordinal);
        await Task.Delay(TimeSpan.FromSeconds(6.5));
        var later = await SnapshotClient.RequestJsonAsync(t.Nats, "$JS.API.STREAM.CREATE.R", "{\"name\":\"R\",\"subjects\":[\"r.>\"]}", Timeout());
        Assert.True(later["error"] is null, SnapshotClient.Describe(later));
        var late = await t.Nats.RequestAsync<byte[], byte[]>(first["deliver_subject"]!.GetValue<string>(), [1, 2, 3], cancellationToken: Timeout());
        Assert.Contains("stalled", System.Text.Encoding.UTF8.GetString(late.Data!), StringComparison.Ordinal);
    }

    [Fact]
    public async Task Snapshot_request_errors_are_nats_servers()
    {
        await using var t = await JsTestServer.StartAsync();
        await t.Js.CreateStreamAsync(new StreamConfig("S", ["s.>"]), Timeout());
        Assert.Equal(10059, SnapshotClient.ErrCode(await SnapshotClient.RequestJsonAsync(t.Nats, "$JS.API.STREAM.SNAPSHOT.NOPE", "{\"deliver_subject\":\"x\"}", Timeout())));
        Assert.Equal(10015, SnapshotClient.ErrCode(await SnapshotClient.RequestJsonAsync(t.Nats, "$JS.API.STREAM.SNAPSHOT.S", "{\"deliver_subject\":\"x.*\"}", Timeout())));
        Assert.Equal(10003, SnapshotClient.ErrCode(await SnapshotClient.RequestJsonAsync(t.Nats, "$JS.API.STREAM.SNAPSHOT.S", "", Timeout())));
        Assert.Equal(10003, SnapshotClient.ErrCode(await SnapshotClient.RequestJsonAsync(t.Nats, "$JS.API.STREAM.RESTORE.S", "{}", Timeout())));
    }

    [Fact]
    public async Task No_consumers_leaves_them_out()
    {
        await using var t = await JsTestServer.StartAsync();
        await PopulateAsync(t, StreamConfigStorage.File);
        var backup = await SnapshotClient.BackupAsync(t.Nats, "S", consumers: false, ct: Timeout());
        await t.Js.DeleteStreamAsync("S", Timeout());
        var r = await SnapshotClient.RestoreAsync(t.Nats, "S", backup.Response["config"]!, null, backup.Data, Timeout());
        Assert.True(r["error"] is null, SnapshotClient.Describe(r));
        var stream = await t.Js.GetStreamAsync("S", cancellationToken: Timeout());
        Assert.Equal(18, stream.Info.State.Messages);
        Assert.Equal(0, stream.Info.State.ConsumerCount);
    }

    [Fact]
    public async Task Restore_beyond_the_servers_file_store_limit_is_refused()
    {
        SnapshotClient.Backup backup;
        await using (var source = await JsTestServer.StartAsync())
        {
            await source.Js.CreateStreamAsync(new StreamConfig("S", ["s.>"]), Timeout());
            for (int i = 0; i < 20; i++) (await source.Js.PublishAsync("s.x", new string('x', 200), cancellationToken: Timeout())).EnsureSuccess();
            backup = await SnapshotClient.BackupAsync(source.Nats, "S", ct: Timeout());
        }
        await using var t = await JsTestServer.StartAsync(configure: o => o.JetStreamMaxStore = 2000);
        var r = await SnapshotClient.RestoreAsync(t.Nats, "S", backup.Response["config"]!, null, backup.Data, Timeout());
        Assert.Equal(10047, SnapshotClient.ErrCode(r));
        await AssertNoStreamAsync(t);
    }

    [Fact]
    public async Task A_receiver_that_does_not_ack_stops_the_snapshot_with_408()
    {
        await using var t = await JsTestServer.StartAsync();
        await PopulateAsync(t, StreamConfigStorage.Memory);
        // One chunk in flight (window = chunk = 1 KiB), never acknowledged: the server waits 5 s, then gives up.
        var backup = await SnapshotClient.BackupAsync(t.Nats, "S", chunkSize: 1024, windowSize: 1024, ack: false, ct: Timeout(30));
        Assert.Equal(408, backup.EndStatus);
        Assert.Equal("No Flow Response", backup.EndDescription);
        Assert.Equal(1, backup.Chunks);
    }

    [Fact]
    public async Task A_restored_file_stream_and_its_consumers_survive_a_restart()
    {
        string dir = Path.Combine(Path.GetTempPath(), "natsbroker-js-tests", Guid.NewGuid().ToString("N"));
        try
        {
            var t = await JsTestServer.StartAsync(dir);
            await PopulateAsync(t, StreamConfigStorage.Memory);
            var backup = await SnapshotClient.BackupAsync(t.Nats, "S", ct: Timeout());
            await t.Js.DeleteStreamAsync("S", Timeout());
            var config = backup.Response["config"]!.DeepClone();
            config["storage"] = "file";
            var r = await SnapshotClient.RestoreAsync(t.Nats, "S", config, null, backup.Data, Timeout());
            Assert.True(r["error"] is null, SnapshotClient.Describe(r));
            await t.StopKeepingStoreAsync();
            // What a restore interrupted by a stop would leave: removed when the account starts.
            string leftover = Path.Combine(dir, "jetstream", "$G", "restores", "unfinished", "store");
            Directory.CreateDirectory(leftover);
            await File.WriteAllTextAsync(Path.Combine(leftover, "x"), "partial");

            await using var again = await JsTestServer.StartAsync(dir);
            Assert.False(Directory.Exists(Path.GetDirectoryName(leftover)), "the unfinished restore is removed");
            var stream = await again.Js.GetStreamAsync("S", cancellationToken: Timeout());
            Assert.Equal(18, stream.Info.State.Messages);
            await AssertConsumersResumeAsync(again);
        }
        finally
        {
            try { Directory.Delete(dir, recursive: true); }
            catch (IOException) { }
        }
    }
}
