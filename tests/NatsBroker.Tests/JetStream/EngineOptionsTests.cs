using NATS.Client.Core;
using NATS.Client.JetStream;
using NATS.Client.JetStream.Models;
using NatsBroker.Configuration;
using NatsBroker.Contracts;
using NatsBroker.Tests.Infrastructure;
using NatsBroker.Tests.Monitoring;

namespace NatsBroker.Tests.JetStream;

/// <summary>
/// Per-engine options from nats.conf reach the storage engine: sync_interval, persist_mode (server default and
/// per stream, nats-server 2.12), store_engine_options; a store that turned read-only is reported to the
/// publisher and in /jsz.
/// </summary>
public sealed class EngineOptionsTests
{
    private static ServerOptions LoadConf(string dir, string jetstreamBody)
    {
        var conf = Path.Combine(dir, "js.conf");
        File.WriteAllText(conf, $"jetstream {{ store_dir: \"{dir}\"\n{jetstreamBody}\n}}\n");
        return ConfigLoader.Load(conf);
    }

    private static string TestEnginePath()
    {
        foreach (var cfg in new[] { "Release", "Debug" })
        {
            var p = Path.Combine(TestEnvironment.RepoRoot, "tests", "NatsBroker.Storage.TestEngine", "bin", cfg, "net10.0", "NatsBroker.Storage.TestEngine.dll");
            if (File.Exists(p)) return p;
        }
        throw new InvalidOperationException("tests/NatsBroker.Storage.TestEngine is not built (dotnet test NatsBroker.slnx builds it)");
    }

    private static void CopyJetStreamOptions(ServerOptions from, ServerOptions to)
    {
        to.JetStream = from.JetStream;
        to.StoreDir = from.StoreDir;
        to.JetStreamSyncAlways = from.JetStreamSyncAlways;
        to.JetStreamSyncInterval = from.JetStreamSyncInterval;
        to.JetStreamPersistAsync = from.JetStreamPersistAsync;
        to.StorageEngine = from.StorageEngine;
        to.StorageEnginePaths = from.StorageEnginePaths;
        to.StorageEngineOptions = from.StorageEngineOptions;
    }

    [Fact]
    public void Config_parses_persist_mode_and_store_engine_options()
    {
        var dir = Directory.CreateTempSubdirectory("natsbroker-engopt-");
        try
        {
            var o = LoadConf(dir.FullName, "persist_mode: async\nstore_engine_options { block_size: 4096, name: \"x y\", flag: true }");
            Assert.True(o.JetStreamPersistAsync);
            Assert.Equal("4096", o.StorageEngineOptions["block_size"]);
            Assert.Equal("x y", o.StorageEngineOptions["name"]);
            Assert.Equal("true", o.StorageEngineOptions["flag"]);
            Assert.False(LoadConf(dir.FullName, "persist_mode: default").JetStreamPersistAsync);
            var bad = Assert.Throws<ConfigException>(() => LoadConf(dir.FullName, "persist_mode: later"));
            Assert.Contains("persist_mode must be \"default\" or \"async\"", bad.Message, StringComparison.Ordinal);
            bad = Assert.Throws<ConfigException>(() => LoadConf(dir.FullName, "store_engine_options: 5"));
            Assert.Contains("store_engine_options must be a map", bad.Message, StringComparison.Ordinal);
            bad = Assert.Throws<ConfigException>(() => LoadConf(dir.FullName, "store_engine_options { nested { a: 1 } }"));
            Assert.Contains("store_engine_options value of 'nested'", bad.Message, StringComparison.Ordinal);
        }
        finally
        {
            dir.Delete(recursive: true);
        }
    }

    [Fact]
    public async Task File_engine_gets_sync_interval_persist_mode_and_engine_options()
    {
        var dir = Directory.CreateTempSubdirectory("natsbroker-engopt-");
        var loaded = LoadConf(dir.FullName, "sync_interval: \"30s\"\npersist_mode: async\nstore_engine_options { block_size: 4096 }");
        await using (var s = await JsTestServer.StartAsync(dir.FullName, o => CopyJetStreamOptions(loaded, o)))
        {
            await s.Js.CreateStreamAsync(new StreamConfig("F", ["f.>"]));
            var payload = new byte[1000];
            for (int i = 0; i < 20; i++) (await s.Js.PublishAsync("f.x", payload)).EnsureSuccess();

            Assert.True(s.Server.Server.JetStream!.Account!.TryGet("F", out var stream));
            var cfg = stream.Store.Config;
            Assert.Equal(SyncPolicy.AsyncPersist, cfg.Sync);
            Assert.Equal(TimeSpan.FromSeconds(30), cfg.SyncInterval);
            Assert.Equal("4096", cfg.EngineOptions["block_size"]);
            // Observable in the engine: 20 KB of messages in 4 KiB blocks make several block files (one with the default 4 MiB).
            var blocks = Directory.GetFiles(dir.FullName, "*.blk", SearchOption.AllDirectories);
            Assert.True(blocks.Length >= 4, $"expected several 4 KiB blocks, found {blocks.Length}");
        }
        dir.Delete(recursive: true);
    }

    [Fact]
    public async Task Stream_persist_mode_async_wins_over_sync_always_and_cannot_change()
    {
        await using var s = await JsTestServer.StartAsync(configure: o => o.JetStreamSyncAlways = true);
        await s.Js.CreateStreamAsync(new StreamConfig("A", ["a.>"]) { PersistMode = StreamConfigPersistMode.Async });
        await s.Js.CreateStreamAsync(new StreamConfig("D", ["d.>"]));
        var js = s.Server.Server.JetStream!;
        Assert.True(js.Account!.TryGet("A", out var a));
        Assert.True(js.Account!.TryGet("D", out var d));
        Assert.Equal(SyncPolicy.AsyncPersist, a.Store.Config.Sync);
        Assert.Equal(SyncPolicy.Always, d.Store.Config.Sync);
        var info = await s.Js.GetStreamAsync("A");
        Assert.Equal(StreamConfigPersistMode.Async, info.Info.Config.PersistMode);

        var change = await Assert.ThrowsAsync<NatsJSApiException>(() => s.Js.UpdateStreamAsync(new StreamConfig("A", ["a.>"]) { PersistMode = StreamConfigPersistMode.Default }).AsTask());
        Assert.Equal(10052, change.Error.ErrCode);
        Assert.Equal("stream configuration update can not change persist mode", change.Error.Description);
        var memory = await Assert.ThrowsAsync<NatsJSApiException>(() => s.Js.CreateStreamAsync(new StreamConfig("M", ["m.>"]) { Storage = StreamConfigStorage.Memory, PersistMode = StreamConfigPersistMode.Async }).AsTask());
        Assert.Equal("async persist mode is only supported on file storage", memory.Error.Description);
    }

    [Fact]
    public async Task Third_party_engine_gets_store_engine_options_and_its_failure_shows_in_puback_and_jsz()
    {
        var dir = Directory.CreateTempSubdirectory("natsbroker-engopt-");
        try
        {
            var loaded = LoadConf(dir.FullName, $"store_engine: testlist\nstore_engine_path: [\"{TestEnginePath()}\"]\nstore_engine_options {{ fail_after_appends: 2 }}");
            var log = new CapturingLogger();
            await using var broker = await MonitoredBroker.StartAsync(o => CopyJetStreamOptions(loaded, o), log);
            await using var nats = new NatsConnection(new NatsOpts { Url = $"nats://127.0.0.1:{broker.ClientPort}" });
            var js = new NatsJSContext(nats);
            await js.CreateStreamAsync(new StreamConfig("T", ["t.>"]));

            var before = await broker.GetJsonAsync("/jsz");
            Assert.False(before.TryGetProperty("store_failures", out _));

            (await js.PublishAsync("t.1", "a")).EnsureSuccess();
            (await js.PublishAsync("t.2", "b")).EnsureSuccess();
            var refused = await js.PublishAsync("t.3", "c");
            Assert.NotNull(refused.Error);
            Assert.Contains("injected write failure after 2 appends", refused.Error!.Description, StringComparison.Ordinal);

            var jsz = await broker.GetJsonAsync("/jsz");
            var failures = jsz.GetProperty("store_failures");
            Assert.Equal(1, failures.GetArrayLength());
            Assert.Equal("T", failures[0].GetProperty("stream").GetString());
            Assert.Contains("injected write failure", failures[0].GetProperty("error").GetString(), StringComparison.Ordinal);

            // The operator's log names the stream and the reason, once per stream (not once per refused publish).
            Assert.NotNull((await js.PublishAsync("t.4", "d")).Error);
            var logged = Assert.Single(log.Lines, l => l.Contains("store is read-only", StringComparison.Ordinal));
            Assert.StartsWith("JetStream stream T: store is read-only: ", logged, StringComparison.Ordinal);
            Assert.Contains("injected write failure after 2 appends", logged, StringComparison.Ordinal);
        }
        finally
        {
            dir.Delete(recursive: true);
        }
    }
}
