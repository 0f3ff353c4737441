using NatsBroker.Tests.Auth;
using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Gateways.Mqtt;

/// <summary>
/// Ours (core + supervised MQTT gateway) or nats-server 2.14.5 (MQTT in process), with JetStream, an
/// <c>mqtt {}</c> block and the given users: for the tests that compare what MQTT clients see on both.
/// </summary>
internal sealed class MqttOracle : IAsyncDisposable
{
    private readonly IAsyncDisposable? _ours;
    private readonly IDisposable? _go;
    private readonly string _dir;

    private MqttOracle(IAsyncDisposable? ours, IDisposable? go, int natsPort, int mqttPort, string dir)
    {
        _ours = ours;
        _go = go;
        NatsPort = natsPort;
        MqttPort = mqttPort;
        _dir = dir;
    }

    /// <summary>Ours: the core's output so far (the supervised gateway's log included); empty for nats-server.</summary>
    public string Output => (_ours as ServerProcess)?.Output ?? "";

    public int NatsPort { get; }
    public int MqttPort { get; }

    /// <summary><paramref name="server"/>: "ours" or "2.14.5" (skipped when that binary is missing).</summary>
    public static async Task<MqttOracle> StartAsync(string server, ITestOutputHelper output, string users, string mqttExtra = "")
    {
        string? oracle = server == "2.14.5" ? Prerequisites.RequireOracle214(output) : null;
        if (oracle is null) Prerequisites.RequireServer(ServerKind.Ours, output);
        int mqttPort = TestPorts.Next();
        string dir = Directory.CreateTempSubdirectory("natsbroker-mqttspec-").FullName;
        string config = $$"""
            server_name: mqttspec
            jetstream { store_dir: "{{dir}}" }
            mqtt {
              port: {{mqttPort}}
              {{mqttExtra}}
            }
            {{users}}
            """;
        MqttOracle running;
        if (oracle is not null)
        {
            var go = new NatsServerOracle(config, oracle);
            running = new MqttOracle(null, go, go.Port, mqttPort, dir);
        }
        else
        {
            var ours = await ServerProcess.StartAsync(ServerKind.Ours, new ServerStartOptions { Config = config, Port = TestPorts.Next() }, output);
            running = new MqttOracle(ours, null, ours.Port, mqttPort, dir);
        }
        await GatewayTestHelpers.WaitListeningAsync(mqttPort);
        return running;
    }

    public async ValueTask DisposeAsync()
    {
        if (_ours is not null) await _ours.DisposeAsync();
        _go?.Dispose();
        try { Directory.Delete(_dir, recursive: true); }
        catch (IOException) { }
        catch (UnauthorizedAccessException) { }
    }
}
