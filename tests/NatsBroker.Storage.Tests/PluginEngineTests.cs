using NatsBroker.Contracts;

namespace NatsBroker.Storage.Tests;

internal static class Plugin
{
    public static string Path => System.IO.Path.Combine(AppContext.BaseDirectory, "plugins", "NatsBroker.Storage.TestEngine.dll");

    private static readonly Lazy<StoreEngineRegistry> Shared = new(() =>
    {
        var reg = new StoreEngineRegistry();
        reg.Register(new Memory.MemoryStoreFactory());
        reg.Register(new File.FileStoreFactory());
        var st = reg.LoadEngineAssembly(Path, out _, out var err);
        Assert.True(st == StoreStatus.Ok, err);
        return reg;
    });

    public static StoreEngineRegistry Registry => Shared.Value;
}

/// <summary>The contract suite against the third-party engine, which this test assembly does not reference.</summary>
public sealed class PluginEngineContractTests : StoreContractTests
{
    protected override IStreamStoreFactory Factory
    {
        get
        {
            Assert.True(Plugin.Registry.TryGet("testlist", out var f));
            return f!;
        }
    }

    protected override bool ZeroAllocAppend => false;
}

public sealed class EngineRegistryTests
{
    [Fact]
    public void Plugin_engine_is_loaded_from_its_path_in_its_own_context()
    {
        var reg = new StoreEngineRegistry();
        Assert.Equal(StoreStatus.Ok, reg.LoadEngineAssembly(Plugin.Path, out var names, out var err));
        Assert.Null(err);
        Assert.Equal(["testlist"], names);
        Assert.True(reg.TryGet("TESTLIST", out var f));
        var asm = f!.GetType().Assembly;
        Assert.NotSame(System.Runtime.Loader.AssemblyLoadContext.Default, System.Runtime.Loader.AssemblyLoadContext.GetLoadContext(asm));
        // The contracts are shared with the host, so the engine's store is a host IStreamStore.
        var r = reg.Open("testlist", new StreamStoreConfig { StreamName = "p" }, null);
        Assert.True(r.IsOk);
        Assert.True(r.Store!.Append("a"u8, default, "x"u8).IsOk);
        Assert.Equal("testlist", r.Store.EngineName);
    }

    [Fact]
    public void Built_in_engines_are_chosen_by_name()
    {
        var reg = Plugin.Registry;
        using var mem = reg.Open("memory", new StreamStoreConfig { StreamName = "m" }, null).Store!;
        Assert.Equal("memory", mem.EngineName);
        var dir = U.TempDir("reg");
        try
        {
            using var file = reg.Open("FILE", new StreamStoreConfig { StreamName = "f" }, dir).Store!;
            Assert.Equal("file", file.EngineName);
        }
        finally
        {
            Directory.Delete(dir, true);
        }
    }

    [Fact]
    public void Unknown_engines_and_bad_assemblies_are_named_errors()
    {
        var reg = new StoreEngineRegistry();
        reg.Register(new Memory.MemoryStoreFactory());
        var r = reg.Open("rocks", new StreamStoreConfig { StreamName = "x" }, null);
        Assert.Equal(StoreStatus.UnknownEngine, r.Status);
        Assert.Contains("rocks", r.Error);
        Assert.Contains("memory", r.Error);
        Assert.True(reg.Open("memory", new StreamStoreConfig { StreamName = "x" }, null).IsOk);
        reg.Register(new File.FileStoreFactory());
        Assert.Equal(StoreStatus.InvalidArgument, reg.Open("file", new StreamStoreConfig { StreamName = "x" }, null).Status);

        Assert.Equal(StoreStatus.UnknownEngine, reg.LoadEngineAssembly("/nonexistent/engine.dll", out _, out var err));
        Assert.Contains("does not exist", err);
        // An assembly without the engine attribute (this test assembly) is refused with a reason.
        Assert.Equal(StoreStatus.UnknownEngine, reg.LoadEngineAssembly(typeof(EngineRegistryTests).Assembly.Location, out _, out err));
        Assert.Contains("StreamStoreEngine", err);
        // A file that is not an assembly.
        var junk = Path.GetTempFileName();
        System.IO.File.WriteAllText(junk, "not a dll");
        Assert.Equal(StoreStatus.UnknownEngine, reg.LoadEngineAssembly(junk, out _, out err));
        Assert.Contains("cannot load", err);
        System.IO.File.Delete(junk);
    }
}
