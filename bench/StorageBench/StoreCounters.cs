using System.Diagnostics.CodeAnalysis;
using System.Globalization;
using System.Reflection;
using NatsBroker.Contracts;

namespace NatsBroker.Bench.Storage;

/// <summary>
/// The file engine's index counters (IndexedStore.IndexChunks and IndexBytes), read by name: IndexedStore is internal
/// to each engine assembly (the same source compiled into both, so the bench cannot name it), and reading by name
/// also works against older builds (IndexBytes exists only in engines with the sparse index). The properties are kept
/// for the Native AOT build of the bench (`dotnet publish`) by the DynamicDependency below.
/// </summary>
internal static class StoreCounters
{
    private const BindingFlags Internal = BindingFlags.Instance | BindingFlags.NonPublic;

    /// <summary>Dense index chunks allocated, and the index's bytes (null where the engine does not report them).</summary>
    [DynamicDependency(DynamicallyAccessedMemberTypes.NonPublicProperties, "NatsBroker.Storage.Internal.IndexedStore", "NatsBroker.Storage.File")]
    [UnconditionalSuppressMessage("Trimming", "IL2075", Justification = "The two properties are kept by the DynamicDependency above; the store is always the file engine's.")]
    public static (long Chunks, long? Bytes) Index(IStreamStore s)
    {
        var t = s.GetType();
        long chunks = Convert.ToInt64(t.GetProperty("IndexChunks", Internal)!.GetValue(s), CultureInfo.InvariantCulture);
        var bytes = t.GetProperty("IndexBytes", Internal)?.GetValue(s);
        return (chunks, bytes is null ? null : Convert.ToInt64(bytes, CultureInfo.InvariantCulture));
    }
}
