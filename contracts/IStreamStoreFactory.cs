using System.Diagnostics.CodeAnalysis;
using System.Reflection;
using System.Runtime.Loader;

namespace NatsBroker.Contracts;

/// <summary>Result of opening a store: on success <see cref="Store"/> is set, otherwise <see cref="Error"/> says why.</summary>
public readonly record struct StoreOpenResult(StoreStatus Status, IStreamStore? Store, string? Error)
{
    public bool IsOk => Status == StoreStatus.Ok && Store is not null;
    public static StoreOpenResult Ok(IStreamStore store) => new(StoreStatus.Ok, store, null);
    public static StoreOpenResult Fail(StoreStatus status, string error) => new(status, null, error);
}

/// <summary>
/// A storage engine. The core picks one by <see cref="Name"/> from config (<c>jetstream { store_engine: file }</c>).
/// </summary>
public interface IStreamStoreFactory
{
    /// <summary>Registry name, case-insensitive ("memory", "file").</summary>
    string Name { get; }

    /// <summary>True when the engine keeps data in <c>directory</c> (a directory must then be given).</summary>
    bool IsPersistent { get; }

    /// <summary>Opens or creates the store of one stream. <paramref name="directory"/> is the stream's own directory.</summary>
    StoreOpenResult Open(StreamStoreConfig config, string? directory);
}

/// <summary>
/// Marks an engine assembly and names its factory type, so a plug-in assembly is loaded by reading one
/// attribute, not by scanning types: <c>[assembly: StreamStoreEngine(typeof(MyFactory))]</c>.
/// </summary>
[AttributeUsage(AttributeTargets.Assembly, AllowMultiple = true)]
public sealed class StreamStoreEngineAttribute(Type factoryType) : Attribute
{
    public Type FactoryType { get; } = factoryType;
}

/// <summary>
/// Engines by name. The core registers the built-in engines and then loads each assembly named in config
/// (<c>store_engine_path</c>) with <see cref="LoadEngineAssembly"/>. Only the configured files are loaded:
/// nothing scans a folder.
/// </summary>
public sealed class StoreEngineRegistry
{
    private readonly Dictionary<string, IStreamStoreFactory> _engines = new(StringComparer.OrdinalIgnoreCase);
    private readonly Lock _lock = new();

    public void Register(IStreamStoreFactory factory)
    {
        ArgumentNullException.ThrowIfNull(factory);
        lock (_lock) _engines[factory.Name] = factory;
    }

    public bool TryGet(string name, out IStreamStoreFactory? factory)
    {
        lock (_lock) return _engines.TryGetValue(name, out factory);
    }

    public IReadOnlyList<string> Names
    {
        get { lock (_lock) return [.. _engines.Keys]; }
    }

    /// <summary>Opens a store with the engine registered under <paramref name="engineName"/>.</summary>
    public StoreOpenResult Open(string engineName, StreamStoreConfig config, string? directory)
    {
        if (!TryGet(engineName, out var factory) || factory is null)
        {
            return StoreOpenResult.Fail(StoreStatus.UnknownEngine, $"no storage engine named '{engineName}' (known: {string.Join(", ", Names)})");
        }
        if (factory.IsPersistent && string.IsNullOrEmpty(directory))
        {
            return StoreOpenResult.Fail(StoreStatus.InvalidArgument, $"storage engine '{engineName}' needs a store directory");
        }
        return factory.Open(config, directory);
    }

    /// <summary>
    /// Loads an engine assembly from <paramref name="assemblyPath"/> into its own AssemblyLoadContext (sharing
    /// this contracts assembly with the host, resolving its other dependencies from its own folder), creates the
    /// factories its <see cref="StreamStoreEngineAttribute"/>s name and registers them. Returns the names registered.
    /// </summary>
    [UnconditionalSuppressMessage("Trimming", "IL2026", Justification = "Engine assemblies are loaded only by the managed build; the native executable hands such configurations over to it (core/Hosting/ManagedHandover.cs) and is refused below.")]
    [UnconditionalSuppressMessage("Trimming", "IL2072", Justification = "As IL2026: only the managed, untrimmed build gets here.")]
    public StoreStatus LoadEngineAssembly(string assemblyPath, out IReadOnlyList<string> registered, out string? error)
    {
        if (!System.Runtime.CompilerServices.RuntimeFeature.IsDynamicCodeSupported)
        {
            registered = [];
            error = "engine assemblies cannot be loaded by the native executable; run the managed build (dotnet NatsBroker.dll)";
            return StoreStatus.UnknownEngine;
        }
        registered = [];
        error = null;
        string full;
        try
        {
            full = Path.GetFullPath(assemblyPath);
        }
        catch (Exception e) when (e is ArgumentException or NotSupportedException or PathTooLongException)
        {
            error = $"bad engine assembly path '{assemblyPath}': {e.Message}";
            return StoreStatus.InvalidArgument;
        }
        if (!File.Exists(full))
        {
            error = $"engine assembly '{full}' does not exist";
            return StoreStatus.UnknownEngine;
        }
        try
        {
            var alc = new EngineLoadContext(full);
            var asm = alc.LoadFromAssemblyPath(full);
            var names = new List<string>();
            foreach (var attr in asm.GetCustomAttributes<StreamStoreEngineAttribute>())
            {
                if (!typeof(IStreamStoreFactory).IsAssignableFrom(attr.FactoryType))
                {
                    error = $"{attr.FactoryType.FullName} in '{full}' does not implement IStreamStoreFactory (built against another contracts version?)";
                    return StoreStatus.UnknownEngine;
                }
                var factory = (IStreamStoreFactory)Activator.CreateInstance(attr.FactoryType)!;
                Register(factory);
                names.Add(factory.Name);
            }
            if (names.Count == 0)
            {
                error = $"'{full}' has no [assembly: StreamStoreEngine(typeof(...))] attribute";
                return StoreStatus.UnknownEngine;
            }
            registered = names;
            return StoreStatus.Ok;
        }
        catch (Exception e) when (e is BadImageFormatException or FileLoadException or TypeLoadException or MissingMethodException or TargetInvocationException or InvalidCastException)
        {
            error = $"cannot load engine assembly '{full}': {e.Message}";
            return StoreStatus.UnknownEngine;
        }
    }

    private sealed class EngineLoadContext(string mainAssemblyPath)
        : AssemblyLoadContext($"store-engine:{Path.GetFileNameWithoutExtension(mainAssemblyPath)}", isCollectible: false)
    {
        private readonly AssemblyDependencyResolver _resolver = new(mainAssemblyPath);
        private static readonly string ContractsName = typeof(IStreamStore).Assembly.GetName().Name!;

        protected override Assembly? Load(AssemblyName assemblyName)
        {
            // Share the contracts with the host so the engine's types implement the host's interfaces.
            if (string.Equals(assemblyName.Name, ContractsName, StringComparison.Ordinal)) return null;
            // Anything the host already has (framework, shared libraries) comes from the default context.
            foreach (var loaded in Default.Assemblies)
            {
                if (string.Equals(loaded.GetName().Name, assemblyName.Name, StringComparison.Ordinal)) return null;
            }
            var path = _resolver.ResolveAssemblyToPath(assemblyName);
            return path is null ? null : LoadFromAssemblyPath(path);
        }

        protected override IntPtr LoadUnmanagedDll(string unmanagedDllName)
        {
            var path = _resolver.ResolveUnmanagedDllToPath(unmanagedDllName);
            return path is null ? IntPtr.Zero : LoadUnmanagedDllFromPath(path);
        }
    }
}
