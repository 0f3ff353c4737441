using System.Security.Cryptography;
using NATS.Client.KeyValueStore;
using NATS.Client.ObjectStore;
using NATS.Client.ObjectStore.Models;

namespace NatsBroker.Tests.JetStream;

/// <summary>NATS.Net 3.3.2's KV and object store clients against our broker.</summary>
public sealed class KeyValueAndObjectStoreTests
{
    private static CancellationToken Timeout(int seconds = 10) => new CancellationTokenSource(TimeSpan.FromSeconds(seconds)).Token;

    [Fact]
    public async Task Kv_put_get_update_delete_and_history()
    {
        await using var t = await JsTestServer.StartAsync();
        var kv = new NatsKVContext(t.Js);
        var store = await kv.CreateStoreAsync(new NatsKVConfig("cfg") { History = 5 }, Timeout());

        ulong r1 = await store.PutAsync("color", "red", cancellationToken: Timeout());
        ulong r2 = await store.PutAsync("color", "blue", cancellationToken: Timeout());
        Assert.Equal(r1 + 1, r2);
        var entry = await store.GetEntryAsync<string>("color", cancellationToken: Timeout());
        Assert.Equal("blue", entry.Value);
        Assert.Equal(r2, entry.Revision);

        // Update with the right revision works, with a stale one fails (wrong last sequence).
        ulong r3 = await store.UpdateAsync("color", "green", r2, cancellationToken: Timeout());
        await Assert.ThrowsAsync<NatsKVWrongLastRevisionException>(async () => await store.UpdateAsync("color", "pink", r2, cancellationToken: Timeout()));
        // Create fails when the key exists.
        await Assert.ThrowsAnyAsync<NatsKVException>(async () => await store.CreateAsync("color", "x", cancellationToken: Timeout()));

        var history = new List<string?>();
        await foreach (var e in store.HistoryAsync<string>("color", cancellationToken: Timeout())) history.Add(e.Value);
        Assert.Equal(["red", "blue", "green"], history);

        await store.DeleteAsync("color", cancellationToken: Timeout());
        await Assert.ThrowsAsync<NatsKVKeyDeletedException>(async () => await store.GetEntryAsync<string>("color", cancellationToken: Timeout()));
        await Assert.ThrowsAsync<NatsKVKeyNotFoundException>(async () => await store.GetEntryAsync<string>("missing", cancellationToken: Timeout()));
        // Create after delete is allowed.
        ulong r5 = await store.CreateAsync("color", "again", cancellationToken: Timeout());
        Assert.True(r5 > r3);
    }

    [Fact]
    public async Task Kv_keys_and_watch()
    {
        await using var t = await JsTestServer.StartAsync();
        var kv = new NatsKVContext(t.Js);
        var store = await kv.CreateStoreAsync("w", Timeout());
        await store.PutAsync("a", 1, cancellationToken: Timeout());
        await store.PutAsync("b", 2, cancellationToken: Timeout());
        await store.PutAsync("a", 3, cancellationToken: Timeout());

        var keys = new List<string>();
        await foreach (var k in store.GetKeysAsync(cancellationToken: Timeout())) keys.Add(k);
        keys.Sort(StringComparer.Ordinal);
        Assert.Equal(["a", "b"], keys);

        var cts = new CancellationTokenSource(TimeSpan.FromSeconds(15));
        var seen = new List<(string, int)>();
        var watch = Task.Run(async () =>
        {
            await foreach (var e in store.WatchAsync<int>(cancellationToken: cts.Token))
            {
                seen.Add((e.Key, e.Value));
                if (seen.Count == 3) break;
            }
        });
        // The watcher first gets the latest value of each key, then live updates.
        await Task.Delay(300);
        await store.PutAsync("c", 4, cancellationToken: Timeout());
        await watch.WaitAsync(TimeSpan.FromSeconds(15));
        Assert.Equal([("b", 2), ("a", 3), ("c", 4)], seen);
    }

    [Fact]
    public async Task Kv_purge_and_status()
    {
        await using var t = await JsTestServer.StartAsync();
        var kv = new NatsKVContext(t.Js);
        var store = await kv.CreateStoreAsync(new NatsKVConfig("p") { History = 10 }, Timeout());
        for (int i = 0; i < 4; i++) await store.PutAsync("k", i, cancellationToken: Timeout());
        await store.PurgeAsync("k", cancellationToken: Timeout());
        var status = await store.GetStatusAsync(Timeout());
        // Purge is a rollup: only the purge marker is left for the key.
        Assert.Equal(1, status.Info.State.Messages);
        Assert.Equal("KV_p", status.Info.Config.Name);
        Assert.True(status.Info.Config.AllowDirect);
        Assert.True(status.Info.Config.AllowRollupHdrs);
    }

    [Fact]
    public async Task Object_store_put_and_get_a_multi_chunk_object()
    {
        await using var t = await JsTestServer.StartAsync();
        var obj = new NatsObjContext(t.Js);
        var store = await obj.CreateObjectStoreAsync("files", Timeout());
        var data = RandomNumberGenerator.GetBytes(300_000); // about 3 chunks of 128 KiB
        var meta = await store.PutAsync("blob.bin", data, Timeout());
        Assert.Equal(300_000ul, meta.Size);
        Assert.True(meta.Chunks >= 3);

        var back = await store.GetBytesAsync("blob.bin", Timeout());
        Assert.Equal(data, back);

        var info = await store.GetInfoAsync("blob.bin", cancellationToken: Timeout());
        Assert.Equal("blob.bin", info.Name);

        // Replacing the object rolls up its metadata and purges the old chunks.
        var small = RandomNumberGenerator.GetBytes(10);
        await store.PutAsync("blob.bin", small, Timeout());
        Assert.Equal(small, await store.GetBytesAsync("blob.bin", Timeout()));

        await store.DeleteAsync("blob.bin", Timeout());
        await Assert.ThrowsAnyAsync<NatsObjException>(async () => await store.GetBytesAsync("blob.bin", Timeout()));
    }

    [Fact]
    public async Task Object_store_lists_objects()
    {
        await using var t = await JsTestServer.StartAsync();
        var obj = new NatsObjContext(t.Js);
        var store = await obj.CreateObjectStoreAsync(new NatsObjConfig("docs"), Timeout());
        await store.PutAsync("a.txt", "hello"u8.ToArray(), Timeout());
        await store.PutAsync("b.txt", "world"u8.ToArray(), Timeout());
        var names = new List<string>();
        await foreach (var m in store.ListAsync(cancellationToken: Timeout())) names.Add(m.Name);
        names.Sort(StringComparer.Ordinal);
        Assert.Equal(["a.txt", "b.txt"], names);
        _ = typeof(ObjectMetadata);
    }
}
