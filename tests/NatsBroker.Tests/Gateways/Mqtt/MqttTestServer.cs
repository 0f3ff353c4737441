using System.Diagnostics;
using System.Net;
using System.Net.Sockets;
using MQTTnet;
using MQTTnet.Formatter;
using NATS.Client.Core;
using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Gateways.Mqtt;

/// <summary>A server (ours: core + supervised MQTT gateway; or Go nats-server 2.9.10) with an <c>mqtt {}</c> port.</summary>
internal sealed class MqttTestServer : IAsyncDisposable
{
    /// <summary>Users: alice (all), bob (denied secret.>); MQTT clients without credentials become alice.</summary>
    public const string Users = """
        authorization {
          users = [
            { user: alice, password: secret }
            { user: bob, password: pw, permissions: { publish: { deny: "secret.>" }, subscribe: { deny: "secret.>" } } }
          ]
        }
        """;

    private readonly string _storeDir;

    private MqttTestServer(ServerProcess server, int mqttPort, string storeDir)
    {
        Server = server;
        MqttPort = mqttPort;
        _storeDir = storeDir;
    }

    public ServerProcess Server { get; }
    public int MqttPort { get; }

    public static async Task<MqttTestServer> StartAsync(ServerKind kind, ITestOutputHelper? output, string mqttExtra = "no_auth_user: alice", string rest = Users)
    {
        int mqttPort = TestPorts.Next();
        var storeDir = Path.Combine(Path.GetTempPath(), "natsbroker-tests", "mqtt-js-" + Guid.NewGuid().ToString("N"));
        Directory.CreateDirectory(storeDir);
        var server = await ServerProcess.StartAsync(kind, new ServerStartOptions
        {
            Config = $$"""
                server_name: mqtt_test
                jetstream { store_dir: "{{storeDir}}" }
                mqtt {
                  port: {{mqttPort}}
                  {{mqttExtra}}
                }
                {{rest}}
                """,
            Port = TestPorts.Next(),
        }, output);
        await GatewayTestHelpers.WaitListeningAsync(mqttPort);
        return new MqttTestServer(server, mqttPort, storeDir);
    }

    public NatsConnection Nats(string user = "alice", string password = "secret") => new(new NatsOpts
    {
        Url = Server.Url,
        AuthOpts = new NatsAuthOpts { Username = user, Password = password },
        ConnectTimeout = TimeSpan.FromSeconds(10),
    });

    public MqttClientOptionsBuilder Options(string clientId, MqttProtocolVersion version = MqttProtocolVersion.V311) =>
        new MqttClientOptionsBuilder().WithTcpServer("127.0.0.1", MqttPort).WithClientId(clientId).WithProtocolVersion(version)
            .WithTimeout(TimeSpan.FromSeconds(15));

    public async Task<IMqttClient> ConnectAsync(string clientId, MqttProtocolVersion version = MqttProtocolVersion.V311,
        Action<MqttClientOptionsBuilder>? configure = null)
    {
        var client = new MqttClientFactory().CreateMqttClient();
        await ConnectAsync(client, clientId, version, configure);
        return client;
    }

    /// <summary>Connects an existing client (so its handlers are attached before the first message).</summary>
    public async Task<MqttClientConnectResult> ConnectAsync(IMqttClient client, string clientId, MqttProtocolVersion version = MqttProtocolVersion.V311,
        Action<MqttClientOptionsBuilder>? configure = null)
    {
        var b = Options(clientId, version);
        configure?.Invoke(b);
        using var cts = new CancellationTokenSource(TimeSpan.FromSeconds(20));
        return await client.ConnectAsync(b.Build(), cts.Token);
    }

    public async ValueTask DisposeAsync()
    {
        await Server.DisposeAsync();
        try { Directory.Delete(_storeDir, recursive: true); }
        catch (IOException) { }
        catch (UnauthorizedAccessException) { }
    }
}

/// <summary>Collects messages an MQTTnet client receives.</summary>
internal sealed class Received
{
    private readonly System.Threading.Channels.Channel<MqttApplicationMessage> _channel = System.Threading.Channels.Channel.CreateUnbounded<MqttApplicationMessage>();

    public Received(IMqttClient client)
    {
        client.ApplicationMessageReceivedAsync += e =>
        {
            _channel.Writer.TryWrite(e.ApplicationMessage);
            return Task.CompletedTask;
        };
    }

    public async Task<MqttApplicationMessage> NextAsync(int seconds = 15)
    {
        using var cts = new CancellationTokenSource(TimeSpan.FromSeconds(seconds));
        return await _channel.Reader.ReadAsync(cts.Token);
    }

    /// <summary>True when nothing arrives within <paramref name="ms"/> (used only to show something is NOT delivered).</summary>
    public async Task<bool> NothingWithinAsync(int ms)
    {
        using var cts = new CancellationTokenSource(ms);
        try
        {
            await _channel.Reader.WaitToReadAsync(cts.Token);
            return false;
        }
        catch (OperationCanceledException)
        {
            return true;
        }
    }
}

/// <summary>One MQTT-enabled core per test class (IClassFixture), started when our broker is available.</summary>
public abstract class MqttServerFixture(string mqttExtra, string rest = MqttTestServer.Users) : IAsyncLifetime
{
    internal MqttTestServer? Server { get; private set; }

    public async Task InitializeAsync()
    {
        if (TestEnvironment.UnavailableReason(ServerKind.Ours) is null)
            Server = await MqttTestServer.StartAsync(ServerKind.Ours, null, mqttExtra, rest);
    }

    public async Task DisposeAsync()
    {
        if (Server is not null) await Server.DisposeAsync();
    }

    /// <summary>A client ID unique to this run.</summary>
    internal static string Id(string name) => name + "-" + Guid.NewGuid().ToString("N")[..8];
}
