using System.Diagnostics;
using System.Globalization;
using System.Xml.Linq;
using NatsBroker.Tests.Gateways;
using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Hosting;

/// <summary>
/// Issue 43, "one build for everything the core can start": the core's build output and its publish folder run a
/// config with tls {}, websocket {} and mqtt {}, each gateway found where that build put it (GatewaySupervisor
/// FindGateway: next to the core, else gateways/NAME/bin/CONFIGURATION/TFM), and every port accepts at "Server is ready".
/// </summary>
[Collection("Gateways")]
public sealed class OneBuildTests(ITestOutputHelper output)
{
    private static readonly (string Name, string Folder, string Project)[] Gateways =
    [
        ("tls-terminator", "tls-terminator", "NatsBroker.TlsTerminator.csproj"),
        ("websocket", "websocket", "NatsBroker.WebSocketGateway.csproj"),
        ("mqtt", "mqtt", "NatsBroker.MqttGateway.csproj"),
    ];

    private static string Invariant(int value) => value.ToString(CultureInfo.InvariantCulture);

    /// <summary>The core's build includes the gateways (built, not referenced): what makes a fresh clone's `dotnet run` serve them.</summary>
    [Fact]
    public void The_core_project_builds_the_three_gateways_it_starts()
    {
        var csproj = XDocument.Load(Path.Combine(TestEnvironment.RepoRoot, "core", "NatsBroker.csproj"));
        var refs = csproj.Descendants("ProjectReference").ToList();
        foreach (var (_, folder, project) in Gateways)
        {
            var r = refs.SingleOrDefault(e => ((string?)e.Attribute("Include"))?.Replace('\\', '/') == $"../gateways/{folder}/{project}");
            Assert.True(r is not null, $"core/NatsBroker.csproj has no ProjectReference to gateways/{folder}/{project}");
            Assert.Equal("false", (string?)r!.Attribute("ReferenceOutputAssembly"));
        }
    }

    private static (string Config, int Client, int Ws, int Mqtt) WriteConfig(TestPki pki, string dir)
    {
        int client = TestPorts.Next(), ws = TestPorts.Next(), mqtt = TestPorts.Next();
        var path = Path.Combine(dir, "all-gateways.conf");
        File.WriteAllText(path, $$"""
            server_name: onebuild
            host: 127.0.0.1
            port: {{Invariant(client)}}
            jetstream { store_dir: "{{Path.Combine(dir, "js")}}" }
            tls { cert_file: "{{pki.ServerCert}}", key_file: "{{pki.ServerKey}}" }
            websocket { port: {{Invariant(ws)}}, no_tls: true }
            mqtt { port: {{Invariant(mqtt)}} }
            """);
        return (path, client, ws, mqtt);
    }

    /// <summary>Starts <paramref name="executable"/> on the three-gateway config and checks the ports and where each gateway came from.</summary>
    private async Task RunAllGatewaysAsync(string executable, Func<string, string> expectedDirOf)
    {
        using var pki = new TestPki();
        var dir = Directory.CreateTempSubdirectory("natsbroker-onebuild-").FullName;
        try
        {
            var (config, client, ws, mqtt) = WriteConfig(pki, dir);
            var psi = new ProcessStartInfo(executable) { ArgumentList = { "-c", config } };
            // The supervisor would otherwise take a gateway path from the environment instead of the build output.
            foreach (var v in new[] { "NATSBROKER_TLS_TERMINATOR", "NATSBROKER_WEBSOCKET_GATEWAY", "NATSBROKER_MQTT_GATEWAY" }) psi.Environment.Remove(v);
            using var core = CoreRun.Start(psi, output);
            await core.WaitReadyAsync();
            Assert.True(CoreRun.Accepts(client), "the client port (tls-terminator) does not accept");
            Assert.True(CoreRun.Accepts(ws), "the websocket port does not accept");
            Assert.True(CoreRun.Accepts(mqtt), "the mqtt port does not accept");
            var pids = core.GatewayPids();
            foreach (var (name, folder, _) in Gateways)
            {
                Assert.True(pids.TryGetValue(name, out var pid), $"no 'Started the {name} gateway' line");
                var cmd = CoreRun.CommandLine(pid);
                output.WriteLine($"{name}: {cmd}");
                Assert.Contains(expectedDirOf(folder), cmd, StringComparison.Ordinal);
            }
        }
        finally
        {
            Directory.Delete(dir, recursive: true);
        }
    }

    /// <summary>The executable `dotnet run -c Release --project core` starts (core/bin/Release/net10.0/NatsBroker).</summary>
    [SkippableFact]
    public async Task The_build_output_serves_tls_websocket_and_mqtt()
    {
        var exe = TestEnvironment.OursExecutablePath();
        if (exe is null) Prerequisites.Missing("core/bin/Release/net10.0/NatsBroker is not built (or NATSBROKER_DLL names another build)", output);
        await RunAllGatewaysAsync(exe!, folder => Path.Combine(TestEnvironment.RepoRoot, "gateways", folder, "bin", "Release", "net10.0") + "/");
    }

    /// <summary>
    /// `dotnet publish core` (deploy/natsbroker.service, deploy/Containerfile): the gateways land in the same folder and
    /// the core starts them from there. --no-build publishes what the test run was built from (bounded: 5 minutes).
    /// </summary>
    [SkippableFact]
    public async Task The_publish_folder_holds_the_gateways_and_serves_them()
    {
        if (TestEnvironment.OursExecutablePath() is null) Prerequisites.Missing("core/bin/Release/net10.0/NatsBroker is not built (or NATSBROKER_DLL names another build)", output);
        var publish = Directory.CreateTempSubdirectory("natsbroker-publish-").FullName;
        try
        {
            var psi = new ProcessStartInfo(TestEnvironment.DotnetHost())
            {
                ArgumentList = { "publish", Path.Combine(TestEnvironment.RepoRoot, "core", "NatsBroker.csproj"), "-c", "Release", "--no-build", "-nologo", "-v:q", "-o", publish },
                RedirectStandardOutput = true,
                RedirectStandardError = true,
            };
            if (!TestEnvironment.OursExecutableIsNative) psi.ArgumentList.Add("-p:NatsBrokerNativeAot=false");
            using (var p = Process.Start(psi)!)
            {
                var stdout = p.StandardOutput.ReadToEndAsync();
                var stderr = p.StandardError.ReadToEndAsync();
                using var cts = new CancellationTokenSource(TimeSpan.FromMinutes(5));
                try
                {
                    await p.WaitForExitAsync(cts.Token);
                }
                catch (OperationCanceledException)
                {
                    p.Kill(entireProcessTree: true);
                    Assert.Fail("dotnet publish took more than 5 minutes");
                }
                output.WriteLine(await stdout + await stderr);
                Assert.Equal(0, p.ExitCode);
            }
            foreach (var assembly in new[] { "NatsBroker", "NatsBroker.TlsTerminator", "NatsBroker.WebSocketGateway", "NatsBroker.MqttGateway" })
            {
                Assert.True(File.Exists(Path.Combine(publish, assembly + ".dll")), assembly + ".dll is not in the publish folder");
                var exe = Path.Combine(publish, assembly);
                Assert.True(File.Exists(exe), assembly + " (the executable) is not in the publish folder");
                // The same kind of executable the build made: the Native AOT image (~13 MB) or the apphost (~80 KB).
                Assert.Equal(TestEnvironment.OursExecutableIsNative, new FileInfo(exe).Length > 4 * 1024 * 1024);
            }
            await RunAllGatewaysAsync(Path.Combine(publish, "NatsBroker"), _ => publish + "/");
        }
        finally
        {
            Directory.Delete(publish, recursive: true);
        }
    }
}
