using NATS.Client.Core;
using NATS.Client.JetStream;
using NatsBroker.Tests.Server;

namespace NatsBroker.Tests.JetStream;

/// <summary>An in-process broker with JetStream on (its own temporary store directory) and a NATS.Net connection.</summary>
internal sealed class JsTestServer : IAsyncDisposable
{
    private readonly bool _ownsDir;

    private JsTestServer(EmbeddedServer server, NatsConnection nats, string storeDir, bool ownsDir)
    {
        Server = server;
        Nats = nats;
        StoreDir = storeDir;
        _ownsDir = ownsDir;
        Js = new NatsJSContext(nats);
    }

    public EmbeddedServer Server { get; }
    public NatsConnection Nats { get; }
    public NatsJSContext Js { get; }
    public string StoreDir { get; }
    public string Url => $"nats://127.0.0.1:{Server.Port}";

    /// <summary>Starts a broker; pass <paramref name="storeDir"/> to reopen an earlier one's store (restart tests).</summary>
    public static async Task<JsTestServer> StartAsync(string? storeDir = null, Action<NatsBroker.Configuration.ServerOptions>? configure = null)
    {
        bool owns = storeDir is null;
        storeDir ??= Path.Combine(Path.GetTempPath(), "natsbroker-js-tests", Guid.NewGuid().ToString("N"));
        var server = new EmbeddedServer(o =>
        {
            o.JetStream = true;
            o.StoreDir = storeDir;
            configure?.Invoke(o);
        });
        var nats = new NatsConnection(new NatsOpts { Url = $"nats://127.0.0.1:{server.Port}", RequestTimeout = TimeSpan.FromSeconds(5) });
        await nats.ConnectAsync();
        return new JsTestServer(server, nats, storeDir, owns);
    }

    /// <summary>Stops the broker but keeps the store directory (for a restart).</summary>
    public async Task StopKeepingStoreAsync()
    {
        await Nats.DisposeAsync();
        await Server.DisposeAsync();
    }

    public async ValueTask DisposeAsync()
    {
        await Nats.DisposeAsync();
        await Server.DisposeAsync();
        if (_ownsDir)
        {
            try { Directory.Delete(StoreDir, recursive: true); }
            catch (IOException) { }
            catch (UnauthorizedAccessException) { }
        }
    }
}
