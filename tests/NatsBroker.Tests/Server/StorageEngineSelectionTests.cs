using System.Diagnostics;
using NatsBroker.Configuration;
using NatsBroker.JetStream;
using NatsBroker.Tests.Infrastructure;

namespace NatsBroker.Tests.Server;

/// <summary>The broker picks the storage engine by config name and loads third-party engines by path.</summary>
public class StorageEngineSelectionTests
{
    internal static string TestEnginePath()
    {
        foreach (var cfg in new[] { "Release", "Debug" })
        {
            var p = Path.Combine(TestEnvironment.RepoRoot, "tests", "NatsBroker.Storage.TestEngine", "bin", cfg, "net10.0", "NatsBroker.Storage.TestEngine.dll");
            if (File.Exists(p)) return p;
        }
        throw new InvalidOperationException("tests/NatsBroker.Storage.TestEngine is not built (dotnet test NatsBroker.slnx builds it)");
    }

    [Fact]
    public void Built_in_file_engine_is_the_default()
    {
        var engines = StorageEngines.Create(new ServerOptions { JetStream = true });
        Assert.Equal("file", engines.PersistentEngine);
        Assert.True(engines.Registry.TryGet("memory", out _));
        Assert.Empty(engines.LoadedFromPaths);
    }

    [Fact]
    public void Config_file_selects_a_third_party_engine_loaded_by_path()
    {
        var dir = Directory.CreateTempSubdirectory("natsbroker-engines-");
        var conf = Path.Combine(dir.FullName, "js.conf");
        File.WriteAllText(conf, $"jetstream {{ store_dir: \"{dir.FullName}\", store_engine: testlist, store_engine_path: [\"{TestEnginePath()}\"] }}\n");
        var options = ConfigLoader.Load(conf);
        var engines = StorageEngines.Create(options);
        Assert.Equal("testlist", engines.PersistentEngine);
        Assert.Equal(["testlist"], engines.LoadedFromPaths);
        var open = engines.Registry.Open("testlist", new NatsBroker.Contracts.StreamStoreConfig { StreamName = "S" }, dir.FullName);
        Assert.True(open.IsOk, open.Error);
        (open.Store as IDisposable)?.Dispose();
        dir.Delete(recursive: true);
    }

    [Fact]
    public void Unknown_engine_stops_the_broker_at_start_with_a_clear_error()
    {
        var dir = Directory.CreateTempSubdirectory("natsbroker-engines-");
        var conf = Path.Combine(dir.FullName, "js.conf");
        File.WriteAllText(conf, $"jetstream {{ store_dir: \"{dir.FullName}\", store_engine: nope }}\n");
        var psi = TestEnvironment.OursStartInfo("-a", "127.0.0.1", "-p", "-1", "-c", conf);
        psi.RedirectStandardError = true;
        psi.RedirectStandardOutput = true;
        using var p = Process.Start(psi)!;
        var stderr = p.StandardError.ReadToEnd();
        Assert.True(p.WaitForExit(TimeSpan.FromSeconds(20)));
        Assert.Equal(1, p.ExitCode);
        Assert.Contains("store_engine \"nope\" is not a known storage engine", stderr, StringComparison.Ordinal);
        dir.Delete(recursive: true);
    }
}
