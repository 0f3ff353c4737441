using NatsBroker.Configuration;
using NatsBroker.Contracts;
using NatsBroker.Storage.File;
using NatsBroker.Storage.Memory;

namespace NatsBroker.JetStream;

/// <summary>
/// The storage engines the broker can put streams in: the built-in <c>memory</c> and <c>file</c> engines plus any
/// third-party assemblies listed in <c>jetstream { store_engine_path }</c>, each loaded by path into its own load
/// context (storage/README.md). <c>store_engine</c> names the engine used for file-backed streams. Built at
/// start-up when JetStream is requested, so a bad engine name or assembly stops the server with a clear error
/// before it accepts clients; the JetStream API (a later issue) opens stores through <see cref="Registry"/>.
/// </summary>
public sealed class StorageEngines
{
    public const string DefaultPersistentEngine = "file";

    private StorageEngines(StoreEngineRegistry registry, string persistentEngine, IReadOnlyList<string> loaded)
    {
        Registry = registry;
        PersistentEngine = persistentEngine;
        LoadedFromPaths = loaded;
    }

    public StoreEngineRegistry Registry { get; }
    /// <summary>Engine for streams with storage=file.</summary>
    public string PersistentEngine { get; }
    /// <summary>Engine names that came from store_engine_path assemblies.</summary>
    public IReadOnlyList<string> LoadedFromPaths { get; }

    /// <exception cref="ConfigException">An engine assembly cannot be loaded, or store_engine names no engine.</exception>
    public static StorageEngines Create(ServerOptions options)
    {
        var registry = new StoreEngineRegistry();
        registry.Register(new MemoryStoreFactory());
        registry.Register(new FileStoreFactory());
        var loaded = new List<string>();
        foreach (var path in options.StorageEnginePaths)
        {
            if (registry.LoadEngineAssembly(path, out var names, out var error) != StoreStatus.Ok)
            {
                throw new ConfigException(null, $"store_engine_path: {error}");
            }
            loaded.AddRange(names);
        }
        var engine = options.StorageEngine ?? DefaultPersistentEngine;
        if (!registry.TryGet(engine, out _))
        {
            throw new ConfigException(null,
                $"store_engine \"{engine}\" is not a known storage engine (known: memory, file{string.Concat(loaded.Select(n => ", " + n))})");
        }
        return new StorageEngines(registry, engine, loaded);
    }
}
