using NATS.Client.Core;
using NATS.Client.JetStream;
using NATS.Client.JetStream.Models;
using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Server;

/// <summary>
/// The core's executable is a Native AOT image (Directory.Build.targets): the process tests, benches and
/// `dotnet run --project core` start. It cannot load assemblies, so a configuration naming third-party storage
/// engines is handed over to the managed build next to it (core/Hosting/ManagedHandover.cs).
/// </summary>
public sealed class NativeExecutableTests(ITestOutputHelper output)
{
    [SkippableFact]
    public void The_release_build_executable_is_the_native_image()
    {
        Prerequisites.RequireNativeExecutable(output);
        var exe = TestEnvironment.OursExecutablePath()!;
        // An ELF executable with no managed entry assembly beside it needed: the runtime is compiled in.
        var head = new byte[4];
        using (var f = File.OpenRead(exe)) f.ReadExactly(head);
        Assert.Equal("\x7f" + "ELF", System.Text.Encoding.ASCII.GetString(head));
        output.WriteLine($"{exe}: {new FileInfo(exe).Length / 1024} KB");
    }

    [SkippableFact]
    public async Task A_third_party_engine_config_is_handed_to_the_managed_build_in_the_same_process()
    {
        Prerequisites.RequireNativeExecutable(output);
        var engine = StorageEngineSelectionTests.TestEnginePath();
        var dir = Directory.CreateTempSubdirectory("natsbroker-handover-");
        try
        {
            await using var server = await ServerProcess.StartAsync(ServerKind.Ours, new ServerStartOptions
            {
                Config = $"jetstream {{ store_dir: \"{dir.FullName}\", store_engine: testlist, store_engine_path: [\"{engine}\"] }}\n",
            }, output);
            // execve(2) kept the process id the harness started and replaced the image with the dotnet host.
            var image = new FileInfo($"/proc/{server.Pid}/exe").LinkTarget;
            Assert.NotNull(image);
            Assert.Equal("dotnet", Path.GetFileName(image));

            await using var nats = new NatsConnection(new NatsOpts { Url = server.Url });
            var js = new NatsJSContext(nats);
            var stream = await js.CreateStreamAsync(new StreamConfig("HANDOVER", ["handover.>"]) { Storage = StreamConfigStorage.File });
            var ack = await js.PublishAsync("handover.a", "x");
            ack.EnsureSuccess();
            Assert.Equal(1UL, ack.Seq);
            Assert.Equal("HANDOVER", stream.Info.Config.Name);
        }
        finally
        {
            dir.Delete(recursive: true);
        }
    }
}
