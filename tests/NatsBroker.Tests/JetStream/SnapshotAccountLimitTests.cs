using NATS.Client.Core;
using NATS.Client.JetStream;
using NATS.Client.JetStream.Models;
using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;

namespace NatsBroker.Tests.JetStream;

/// <summary>A restore counts against the restoring account's JetStream limits (nats-server RestoreStream's checkAllLimits).</summary>
public sealed class SnapshotAccountLimitTests(ITestOutputHelper output) : IAsyncLifetime
{
    private readonly string _storeDir = Path.Combine(Path.GetTempPath(), "natsbroker-js-tests", Guid.NewGuid().ToString("N"));

    private string Config => $$"""
        jetstream { store_dir: "{{_storeDir}}" }
        accounts {
          A { users [{user: a, password: a}], jetstream: enabled }
          L { users [{user: l, password: l}], jetstream { max_file: 2500, max_mem: 2500 } }
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

    private static CancellationToken Timeout(int seconds = 20) => new CancellationTokenSource(TimeSpan.FromSeconds(seconds)).Token;

    private static NatsConnection Connect(ServerProcess s, string user) => new(new NatsOpts
    {
        Url = s.Url,
        AuthOpts = new NatsAuthOpts { Username = user, Password = user },
        RequestTimeout = TimeSpan.FromSeconds(5),
    });

    [Fact]
    public async Task Restore_beyond_the_accounts_max_file_is_refused_and_within_it_works()
    {
        await using var server = await ServerProcess.StartAsync(ServerKind.Ours, new ServerStartOptions { Config = Config }, output);
        await using var a = Connect(server, "a");
        await using var l = Connect(server, "l");
        var jsA = new NatsJSContext(a);
        await jsA.CreateStreamAsync(new StreamConfig("BIG", ["big.>"]), Timeout());
        for (int i = 0; i < 20; i++) (await jsA.PublishAsync("big.x", new string('x', 200), cancellationToken: Timeout())).EnsureSuccess();
        await jsA.CreateStreamAsync(new StreamConfig("SMALL", ["small.>"]), Timeout());
        for (int i = 0; i < 5; i++) (await jsA.PublishAsync("small.x", new string('y', 200), cancellationToken: Timeout())).EnsureSuccess();
        var big = await SnapshotClient.BackupAsync(a, "BIG", ct: Timeout());
        var small = await SnapshotClient.BackupAsync(a, "SMALL", ct: Timeout());

        // 20 x ~205 bytes into an account with max_file 2500 (memory too: the request's storage decides).
        var refused = await SnapshotClient.RestoreAsync(l, "BIG", big.Response["config"]!, null, big.Data, Timeout());
        Assert.Equal(10047, SnapshotClient.ErrCode(refused));
        var memory = big.Response["config"]!.DeepClone();
        memory["storage"] = "memory";
        var refusedMem = await SnapshotClient.RestoreAsync(l, "BIG", memory, null, big.Data, Timeout());
        Assert.Equal(10028, SnapshotClient.ErrCode(refusedMem));
        Assert.Equal(10059, SnapshotClient.ErrCode(await SnapshotClient.RequestJsonAsync(l, "$JS.API.STREAM.INFO.BIG", "", Timeout())));

        var ok = await SnapshotClient.RestoreAsync(l, "SMALL", small.Response["config"]!, null, small.Data, Timeout());
        Assert.True(ok["error"] is null, SnapshotClient.Describe(ok));
        var info = await SnapshotClient.RequestJsonAsync(l, "$JS.API.INFO", "", Timeout());
        Assert.True(info["storage"]!.GetValue<long>() > 1000, "the restored bytes count in the account's usage");
    }
}
