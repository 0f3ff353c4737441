using System.Text;
using System.Text.Json;
using NATS.Client.Core;
using NATS.Client.JetStream;
using NATS.Client.KeyValueStore;
using NATS.Client.ObjectStore;
using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;

namespace NatsBroker.Tests.JetStream;

/// <summary>
/// NATS.Net 3.3.2's KV and object store status figures (the bucket stream's state bytes) against nats-server, for
/// memory and file buckets. A KV script is deterministic, so its figures must be equal. An object's metadata carries
/// its modification time (a different length from run to run), so for object stores each server's status must equal
/// the sum of nats-server's per-engine figure over the bucket's messages as read back (STREAM.MSG.GET), on both
/// servers, with the same message count.
/// </summary>
public sealed class KvObjectSizeDifferentialTests(ITestOutputHelper output)
{
    private static CancellationToken Timeout(int seconds = 20) => new CancellationTokenSource(TimeSpan.FromSeconds(seconds)).Token;

    private static long Figure(bool memory, int subject, int headers, int payload) => memory
        ? subject + headers + payload + 16
        : headers == 0 ? 22 + subject + payload + 8 : 22 + subject + 4 + headers + payload + 8;

    [SkippableTheory]
    [InlineData("2.14.5")]
    [InlineData("2.9.10")]
    public async Task Kv_and_object_store_status_sizes_match_nats_server(string version)
    {
        string? binary = version == "2.14.5" ? Prerequisites.RequireOracle214(output) : Prerequisites.RequireGoServer(output);
        var ours = await RunAsync(ServerKind.Ours, null);
        var go = await RunAsync(ServerKind.Go, binary);
        foreach (var line in ours) output.WriteLine("ours " + line);
        foreach (var line in go) output.WriteLine("go   " + line);
        Assert.Equal(go, ours);
    }

    private async Task<List<string>> RunAsync(ServerKind kind, string? goBinary)
    {
        var dir = Path.Combine(Path.GetTempPath(), "natsbroker-js-tests", Guid.NewGuid().ToString("N"));
        try
        {
            await using var server = await ServerProcess.StartAsync(kind, new ServerStartOptions { ExtraArgs = ["-js", "-sd", dir], GoBinary = goBinary }, output);
            await using var nats = new NatsConnection(new NatsOpts { Url = server.Url });
            await nats.ConnectAsync();
            var js = new NatsJSContext(nats);
            var lines = new List<string>();
            foreach (bool memory in new[] { true, false })
            {
                var kv = new NatsKVContext(js);
                string bucket = memory ? "km" : "kf";
                var store = await kv.CreateStoreAsync(new NatsKVConfig(bucket) { History = 2, Storage = memory ? NatsKVStorageType.Memory : NatsKVStorageType.File }, Timeout());
                await store.PutAsync("k", "v", cancellationToken: Timeout());
                await store.PutAsync("config.service.europe-west.replica-7.timeout", new string('t', 300), cancellationToken: Timeout());
                await store.PutAsync("k", "value-2", cancellationToken: Timeout());
                await store.PutAsync("k", "value-3", cancellationToken: Timeout()); // history 2: the first "k" goes
                await store.DeleteAsync("config.service.europe-west.replica-7.timeout", cancellationToken: Timeout()); // a marker with headers
                var status = await store.GetStatusAsync(Timeout());
                lines.Add($"kv {bucket}: messages {status.Info.State.Messages} bytes {status.Info.State.Bytes}");

                var obj = new NatsObjContext(js);
                string ob = memory ? "om" : "of";
                var os = await obj.CreateObjectStoreAsync(new NatsObjConfig(ob) { Storage = memory ? NatsObjStorageType.Memory : NatsObjStorageType.File }, Timeout());
                await os.PutAsync("a.txt", Encoding.UTF8.GetBytes(new string('a', 1000)), Timeout());
                await os.PutAsync("reports/2026/q4/summary-with-a-long-name.bin", new byte[200_000], Timeout()); // two chunks
                var ostatus = await os.GetStatusAsync(Timeout());
                var (count, figure) = await ContentFigureAsync(nats, "OBJ_" + ob, memory);
                lines.Add($"obj {ob}: messages {ostatus.Info.State.Messages} (read back {count}); status bytes {((long)ostatus.Info.State.Bytes == figure ? "= the figure of its messages" : $"{ostatus.Info.State.Bytes} != the figure {figure}")}");
            }
            return lines;
        }
        finally
        {
            try { Directory.Delete(dir, recursive: true); }
            catch (DirectoryNotFoundException) { }
            catch (IOException) { }
            catch (UnauthorizedAccessException) { }
        }
    }

    /// <summary>The live messages of a stream read back one by one, and the sum of their per-engine figures.</summary>
    private static async Task<(int Count, long Figure)> ContentFigureAsync(NatsConnection nats, string stream, bool memory)
    {
        var info = await AccountJetStreamTests.RequestAsync(nats, "$JS.API.STREAM.INFO." + stream);
        var state = info.GetProperty("state");
        ulong first = state.GetProperty("first_seq").GetUInt64(), last = state.GetProperty("last_seq").GetUInt64();
        int count = 0;
        long figure = 0;
        for (ulong q = first; q <= last && q > 0; q++)
        {
            var reply = await AccountJetStreamTests.RequestAsync(nats, "$JS.API.STREAM.MSG.GET." + stream, $$"""{"seq":{{q}}}""");
            if (!reply.TryGetProperty("message", out var m)) continue; // deleted
            int subject = Encoding.UTF8.GetByteCount(m.GetProperty("subject").GetString()!);
            int headers = m.TryGetProperty("hdrs", out var h) ? Convert.FromBase64String(h.GetString()!).Length : 0;
            int payload = m.TryGetProperty("data", out var d) ? Convert.FromBase64String(d.GetString()!).Length : 0;
            figure += Figure(memory, subject, headers, payload);
            count++;
        }
        return (count, figure);
    }
}
