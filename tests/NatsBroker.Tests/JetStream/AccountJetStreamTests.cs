using System.Text;
using System.Text.Json;
using NATS.Client.Core;
using NATS.Client.JetStream;
using NATS.Client.JetStream.Models;
using NATS.Client.KeyValueStore;
using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;

namespace NatsBroker.Tests.JetStream;

/// <summary>
/// JetStream in accounts other than <c>$G</c> (nats-server jetstream.go jsAccount): per-account streams, KV, limits,
/// restart recovery and accounts without JetStream, with NATS.Net JetStream clients logged into each account; the
/// replies nats-server 2.9.10 gives for the same requests are checked by <see cref="AccountJetStreamDifferentialTests"/>.
/// </summary>
public sealed class AccountJetStreamTests(ITestOutputHelper output) : IAsyncLifetime
{
    private readonly string _storeDir = Path.Combine(Path.GetTempPath(), "natsbroker-js-tests", Guid.NewGuid().ToString("N"));

    /// <summary>A and B with unlimited JetStream, L with limits, N without JetStream, and a $G user.</summary>
    private string Config => $$"""
        jetstream { store_dir: "{{_storeDir}}" }
        authorization { users [{user: g, password: g}] }
        accounts {
          A { users [{user: a, password: a}], jetstream: enabled }
          B { users [{user: b, password: b}], jetstream { max_mem: -1 } }
          L { users [{user: l, password: l}], jetstream { max_mem: 1000, max_file: 2500, max_streams: 1, max_consumers: 1, max_ack_pending: 50 } }
          N { users [{user: n, password: n}] }
          W { users [{user: w, password: w}], jetstream { max_file: 2500 } }
        }
        """;

    public Task InitializeAsync() => Task.CompletedTask;

    public Task DisposeAsync()
    {
        try { Directory.Delete(_storeDir, recursive: true); }
        catch (DirectoryNotFoundException) { }
        catch (IOException) { }
        return Task.CompletedTask;
    }

    private static NatsConnection Connect(ServerProcess s, string user) => new(new NatsOpts
    {
        Url = s.Url,
        AuthOpts = new NatsAuthOpts { Username = user, Password = user },
        RequestTimeout = TimeSpan.FromSeconds(5),
    });

    private Task<ServerProcess> StartAsync() =>
        ServerProcess.StartAsync(ServerKind.Ours, new ServerStartOptions { Config = Config }, output);

    [Fact]
    public async Task Streams_of_the_same_name_in_two_accounts_are_separate()
    {
        await using var server = await StartAsync();
        await using var a = Connect(server, "a");
        await using var b = Connect(server, "b");
        var jsA = new NatsJSContext(a);
        var jsB = new NatsJSContext(b);
        await jsA.CreateStreamAsync(new StreamConfig("S", ["s.>"]));
        await jsB.CreateStreamAsync(new StreamConfig("S", ["s.>"]) { Storage = StreamConfigStorage.Memory });
        (await jsA.PublishAsync("s.x", "from a")).EnsureSuccess();
        for (int i = 0; i < 2; i++) (await jsB.PublishAsync("s.y", $"from b {i}")).EnsureSuccess();

        var infoA = await jsA.GetStreamAsync("S");
        var infoB = await jsB.GetStreamAsync("S");
        Assert.Equal(1, infoA.Info.State.Messages);
        Assert.Equal(StreamConfigStorage.File, infoA.Info.Config.Storage);
        Assert.Equal(2, infoB.Info.State.Messages);
        Assert.Equal(StreamConfigStorage.Memory, infoB.Info.Config.Storage);

        // A consumer of A's stream sees only A's message.
        var consumer = await jsA.CreateOrUpdateConsumerAsync("S", new ConsumerConfig("C") { AckPolicy = ConsumerConfigAckPolicy.Explicit });
        var got = new List<string>();
        await foreach (var m in consumer.FetchNoWaitAsync<string>(new NatsJSFetchOpts { MaxMsgs = 10 }))
        {
            got.Add(m.Data!);
            await m.AckAsync();
        }
        Assert.Equal(["from a"], got);
        await Assert.ThrowsAsync<NatsJSApiException>(async () => await jsB.GetConsumerAsync("S", "C"));

        // nats-server's layout: <store_dir>/jetstream/<account>/streams/<stream>; B's memory stream has no directory.
        Assert.True(Directory.Exists(Path.Combine(_storeDir, "jetstream", "A", "streams", "S")));
        Assert.False(Directory.Exists(Path.Combine(_storeDir, "jetstream", "B", "streams", "S")));
        Assert.Equal(1, (await jsA.GetAccountInfoAsync()).Streams);
    }

    [Fact]
    public async Task Advisories_go_to_the_account_of_the_stream()
    {
        await using var server = await StartAsync();
        await using var a = Connect(server, "a");
        await using var b = Connect(server, "b");
        await using var subA = await a.SubscribeCoreAsync<byte[]>("$JS.EVENT.ADVISORY.STREAM.CREATED.>");
        await using var subB = await b.SubscribeCoreAsync<byte[]>("$JS.EVENT.ADVISORY.STREAM.CREATED.>");
        await a.PingAsync();
        await b.PingAsync();
        await new NatsJSContext(a).CreateStreamAsync(new StreamConfig("ADV", ["adv"]));
        using var cts = new CancellationTokenSource(TimeSpan.FromSeconds(10));
        var advisory = await subA.Msgs.ReadAsync(cts.Token);
        Assert.Equal("$JS.EVENT.ADVISORY.STREAM.CREATED.ADV", advisory.Subject);
        await b.PingAsync();
        await Task.Delay(200);
        Assert.False(subB.Msgs.TryRead(out _), "an advisory of account A reached account B");
    }

    [Fact]
    public async Task Key_value_store_works_in_a_non_global_account_and_stays_in_it()
    {
        await using var server = await StartAsync();
        await using var a = Connect(server, "a");
        await using var b = Connect(server, "b");
        var kvA = new NatsKVContext(new NatsJSContext(a));
        var kvB = new NatsKVContext(new NatsJSContext(b));
        var bucket = await kvA.CreateStoreAsync(new NatsKVConfig("cfg") { History = 3 });
        await bucket.PutAsync("k", "v1");
        await bucket.PutAsync("k", "v2");
        var entry = await bucket.GetEntryAsync<string>("k");
        Assert.Equal("v2", entry.Value);
        Assert.Equal(2ul, entry.Revision);
        await Assert.ThrowsAsync<NatsJSApiException>(async () => await kvB.GetStoreAsync("cfg"));

        // B's bucket of the same name is its own.
        var other = await kvB.CreateStoreAsync(new NatsKVConfig("cfg"));
        await Assert.ThrowsAsync<NatsKVKeyNotFoundException>(async () => await other.GetEntryAsync<string>("k"));
    }

    [Fact]
    public async Task Accounts_without_JetStream_are_answered_not_enabled()
    {
        await using var server = await StartAsync();
        foreach (var user in new[] { "n", "g" })
        {
            await using var c = Connect(server, user);
            var js = new NatsJSContext(c);
            var info = await Assert.ThrowsAsync<NatsJSApiException>(async () => await js.GetAccountInfoAsync());
            Assert.Equal(503, info.Error.Code);
            Assert.Equal(10039, info.Error.ErrCode);
            Assert.Equal("JetStream not enabled for account", info.Error.Description);
            var create = await Assert.ThrowsAsync<NatsJSApiException>(async () => await js.CreateStreamAsync(new StreamConfig("S", ["s"])));
            Assert.Equal(10039, create.Error.ErrCode);
        }
        Assert.False(Directory.Exists(Path.Combine(_storeDir, "jetstream", "N")));
    }

    [Fact]
    public async Task Account_limits_are_enforced_with_nats_server_errors()
    {
        await using var server = await StartAsync();
        await using var l = Connect(server, "l");
        var js = new NatsJSContext(l);

        var info = await js.GetAccountInfoAsync();
        Assert.Equal(1000, info.Limits.MaxMemory);
        Assert.Equal(2500, info.Limits.MaxStorage);
        Assert.Equal(1, info.Limits.MaxStreams);
        Assert.Equal(1, info.Limits.MaxConsumers);

        async Task<long> ErrCode(Func<Task> call) => (await Assert.ThrowsAsync<NatsJSApiException>(call)).Error.ErrCode;
        Assert.Equal(10028, await ErrCode(async () => await js.CreateStreamAsync(new StreamConfig("M", ["m"]) { Storage = StreamConfigStorage.Memory, MaxBytes = 2000 })));
        Assert.Equal(10047, await ErrCode(async () => await js.CreateStreamAsync(new StreamConfig("F", ["f"]) { MaxBytes = 3000 })));
        Assert.Equal(10026, await ErrCode(async () => await js.CreateStreamAsync(new StreamConfig("F", ["f"]) { MaxConsumers = 5 })));
        await js.CreateStreamAsync(new StreamConfig("F", ["f"]));
        Assert.Equal(10027, await ErrCode(async () => await js.CreateStreamAsync(new StreamConfig("G", ["g"]))));

        Assert.Equal(10121, await ErrCode(async () => await js.CreateOrUpdateConsumerAsync("F", new ConsumerConfig("C1") { AckPolicy = ConsumerConfigAckPolicy.Explicit, MaxAckPending = 100 })));
        var c1 = await js.CreateOrUpdateConsumerAsync("F", new ConsumerConfig("C1") { AckPolicy = ConsumerConfigAckPolicy.Explicit });
        Assert.Equal(50, c1.Info.Config.MaxAckPending);
        Assert.Equal(10026, await ErrCode(async () => await js.CreateOrUpdateConsumerAsync("F", new ConsumerConfig("C2") { AckPolicy = ConsumerConfigAckPolicy.Explicit })));

        // max_file 2500: two 1000-byte messages fit, the third is refused with 10002 and not stored.
        var payload = new byte[1000];
        (await js.PublishAsync("f", payload)).EnsureSuccess();
        (await js.PublishAsync("f", payload)).EnsureSuccess();
        var refused = await js.PublishAsync("f", payload);
        Assert.NotNull(refused.Error);
        Assert.Equal(10002, refused.Error!.ErrCode);
        Assert.Equal("resource limits exceeded for account", refused.Error.Description);
        Assert.Equal(2, (await js.GetStreamAsync("F")).Info.State.Messages);

        // Room again once the stream is purged.
        await (await js.GetStreamAsync("F")).PurgeAsync(new StreamPurgeRequest());
        (await js.PublishAsync("f", payload)).EnsureSuccess();
        info = await js.GetAccountInfoAsync();
        Assert.Equal(1, info.Streams);
        Assert.InRange(info.Storage, 1000UL, 1100UL);
    }

    [Fact]
    public async Task Space_freed_inside_a_store_counts_again_for_the_account()
    {
        await using var server = await StartAsync();
        await using var w = Connect(server, "w");
        var js = new NatsJSContext(w);
        await js.CreateStreamAsync(new StreamConfig("WQ", ["wq"]) { Retention = StreamConfigRetention.Workqueue });
        var payload = new byte[1000];
        (await js.PublishAsync("wq", payload)).EnsureSuccess();
        (await js.PublishAsync("wq", payload)).EnsureSuccess();
        Assert.Equal(10002, (await js.PublishAsync("wq", payload)).Error?.ErrCode);

        // Acked work-queue messages leave the store; within a second or so the account's usage follows.
        var consumer = await js.CreateOrUpdateConsumerAsync("WQ", new ConsumerConfig("C") { AckPolicy = ConsumerConfigAckPolicy.Explicit });
        await foreach (var m in consumer.FetchAsync<byte[]>(new NatsJSFetchOpts { MaxMsgs = 2, Expires = TimeSpan.FromSeconds(5) }))
            await m.AckAsync(new AckOpts { DoubleAck = true });
        PubAckResponse ack;
        var deadline = DateTime.UtcNow.AddSeconds(10);
        while ((ack = await js.PublishAsync("wq", payload)).Error is not null && DateTime.UtcNow < deadline) await Task.Delay(200);
        ack.EnsureSuccess();
    }

    [Fact]
    public async Task Streams_and_buckets_of_every_account_come_back_after_a_restart()
    {
        var server = await StartAsync();
        try
        {
            await using (var a = Connect(server, "a"))
            await using (var b = Connect(server, "b"))
            {
                var jsA = new NatsJSContext(a);
                var jsB = new NatsJSContext(b);
                await jsA.CreateStreamAsync(new StreamConfig("S", ["s.>"]));
                await jsB.CreateStreamAsync(new StreamConfig("S", ["s.>"]));
                for (int i = 0; i < 3; i++) (await jsA.PublishAsync("s.a", i)).EnsureSuccess();
                (await jsB.PublishAsync("s.b", 1)).EnsureSuccess();
                await jsB.CreateOrUpdateConsumerAsync("S", new ConsumerConfig("D") { AckPolicy = ConsumerConfigAckPolicy.Explicit });
                var kv = await new NatsKVContext(jsA).CreateStoreAsync(new NatsKVConfig("bucket"));
                await kv.PutAsync("key", "value");
            }
            await server.RestartAsync();
            await using (var a = Connect(server, "a"))
            await using (var b = Connect(server, "b"))
            {
                var jsA = new NatsJSContext(a);
                var jsB = new NatsJSContext(b);
                Assert.Equal(3, (await jsA.GetStreamAsync("S")).Info.State.Messages);
                Assert.Equal(1, (await jsB.GetStreamAsync("S")).Info.State.Messages);
                Assert.Equal("D", (await jsB.GetConsumerAsync("S", "D")).Info.Name);
                await Assert.ThrowsAsync<NatsJSApiException>(async () => await jsA.GetConsumerAsync("S", "D"));
                var kv = await new NatsKVContext(jsA).GetStoreAsync("bucket");
                Assert.Equal("value", (await kv.GetEntryAsync<string>("key")).Value);
            }
        }
        finally
        {
            await server.DisposeAsync();
        }
    }

    [Fact]
    public async Task Global_account_keeps_JetStream_when_no_account_is_configured()
    {
        var config = $$"""jetstream { store_dir: "{{_storeDir}}" }""";
        await using var server = await ServerProcess.StartAsync(ServerKind.Ours, new ServerStartOptions { Config = config }, output);
        await using var c = new NatsConnection(new NatsOpts { Url = server.Url });
        var js = new NatsJSContext(c);
        await js.CreateStreamAsync(new StreamConfig("S", ["s"]));
        Assert.Equal(-1, (await js.GetAccountInfoAsync()).Limits.MaxStreams);
        Assert.True(Directory.Exists(Path.Combine(_storeDir, "jetstream", "$G", "streams", "S")));
    }

    [Fact]
    public async Task A_client_without_credentials_uses_the_JetStream_of_the_no_auth_users_account()
    {
        string config = $$"""
            jetstream { store_dir: "{{_storeDir}}" }
            no_auth_user: a
            accounts { A { users [{user: a, password: a}], jetstream: enabled } }
            """;
        await using var server = await ServerProcess.StartAsync(ServerKind.Ours, new ServerStartOptions { Config = config }, output);
        await using (var anonymous = new NatsConnection(new NatsOpts { Url = server.Url }))
        {
            await new NatsJSContext(anonymous).CreateStreamAsync(new StreamConfig("S", ["s"]));
        }
        await using var a = Connect(server, "a");
        Assert.Equal("S", (await new NatsJSContext(a).GetStreamAsync("S")).Info.Config.Name);
        Assert.True(Directory.Exists(Path.Combine(_storeDir, "jetstream", "A", "streams", "S")));
    }

    [Fact]
    public async Task An_account_added_by_a_reload_gets_its_JetStream()
    {
        string before = $$"""
            jetstream { store_dir: "{{_storeDir}}" }
            accounts { A { users [{user: a, password: a}], jetstream: enabled } }
            """;
        string after = $$"""
            jetstream { store_dir: "{{_storeDir}}" }
            accounts {
              A { users [{user: a, password: a}], jetstream: enabled }
              R { users [{user: r, password: r}], jetstream { max_streams: 1 } }
            }
            """;
        await using var server = await ServerProcess.StartAsync(ServerKind.Ours, new ServerStartOptions { Config = before }, output);
        server.WriteConfig(after);
        server.Reload();
        AccountInfoResponse? info = null;
        var deadline = DateTime.UtcNow.AddSeconds(15);
        while (info is null)
        {
            await using var r = new NatsConnection(new NatsOpts
            {
                Url = server.Url,
                AuthOpts = new NatsAuthOpts { Username = "r", Password = "r" },
                MaxReconnectRetry = 0,
                RequestTimeout = TimeSpan.FromSeconds(5),
            });
            try
            {
                await r.ConnectAsync();
                info = await new NatsJSContext(r).GetAccountInfoAsync();
                await new NatsJSContext(r).CreateStreamAsync(new StreamConfig("S", ["s"]));
                (await new NatsJSContext(r).PublishAsync("s", "x")).EnsureSuccess();
                Assert.Equal(1, (await new NatsJSContext(r).GetStreamAsync("S")).Info.State.Messages);
            }
            catch (NatsException) when (DateTime.UtcNow < deadline)
            {
                await Task.Delay(200); // the reload has not made user r yet
            }
        }
        Assert.Equal(1, info.Limits.MaxStreams);
        Assert.True(Directory.Exists(Path.Combine(_storeDir, "jetstream", "R", "streams", "S")));
    }

    [Fact]
    public async Task JetStream_on_the_system_account_is_refused_at_start()
    {
        var o = new NatsBroker.Configuration.ServerOptions { Host = "127.0.0.1", Port = -1, JetStream = true, StoreDir = _storeDir };
        o.Accounts.Add(new NatsBroker.Configuration.AccountConfig { Name = "SYS", JetStream = NatsBroker.Configuration.JetStreamAccountLimits.Dynamic });
        o.Operator.SystemAccount = "SYS";
        var server = new NatsBroker.Server.NatsServer(o, Microsoft.Extensions.Logging.Abstractions.NullLogger.Instance);
        try
        {
            var e = Assert.Throws<InvalidOperationException>(server.Start);
            Assert.Equal("Not allowed to enable JetStream on the system account", e.Message);
        }
        finally
        {
            await server.DisposeAsync();
        }
    }

    /// <summary>Raw JSON of one API request (for checks NATS.Net's models do not expose).</summary>
    internal static async Task<JsonElement> RequestAsync(NatsConnection nats, string subject, string body = "")
    {
        var reply = await nats.RequestAsync<byte[], byte[]>(subject, Encoding.UTF8.GetBytes(body), replyOpts: new NatsSubOpts { Timeout = TimeSpan.FromSeconds(5) });
        return JsonDocument.Parse(reply.Data ?? []).RootElement.Clone();
    }
}
