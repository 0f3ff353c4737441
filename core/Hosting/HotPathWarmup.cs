using System.Diagnostics.CodeAnalysis;
using System.Reflection;
using System.Runtime.CompilerServices;
using System.Text.Json;
using Microsoft.Extensions.Logging;
using NatsBroker.Connections;
using NatsBroker.Contracts;
using NatsBroker.JetStream;
using NatsBroker.Protocol;
using NatsBroker.Routing;
using NatsBroker.Server;
using NatsBroker.Storage.File;
using NatsBroker.Storage.Memory;
using NatsBroker.Subscriptions;

namespace NatsBroker.Hosting;

/// <summary>
/// The per-message methods are <c>AggressiveOptimization</c> (core/Routing/README.md "Hot path and the JIT"), which
/// ReadyToRun never precompiles: each was JIT-compiled, fully optimised, at its first call, so a fresh server's first
/// client paid for it (a refused CONNECT took 86-93 ms on a fresh server and 0.5 ms after; the parser alone is three
/// methods of 1-5 KB of machine code). Once the server is ready, a below-normal-priority thread compiles them ahead of
/// that first call with <see cref="RuntimeHelpers.PrepareMethod(RuntimeMethodHandle)"/>: CPU the first messages would
/// have spent anyway, spent while the server waits for clients. A method still being compiled when a client calls it
/// is waited for, not compiled twice (the runtime's per-method JIT lock).
/// </summary>
internal static class HotPathWarmup
{
    /// <summary>The types declaring the per-message methods; a test checks that no such method is outside them.</summary>
    internal static readonly Type[] HotTypes =
    [
        typeof(ProtocolParser), typeof(ClientConnection), typeof(Connection), typeof(OutboundBuffer), typeof(AsyncSignal), typeof(DeliveryBatch),
        typeof(Router), typeof(SubList), typeof(SubjectResultCache), typeof(ByteArrayComparer),
        // A route's per-message methods (RMSG in, RMSG out): two methods, warmed up on every server.
        typeof(NatsBroker.Cluster.RouteConnection),
    ];

    /// <summary>
    /// The types declaring JetStream's per-message methods (consumer deliveries and acks), warmed up only when
    /// JetStream is enabled.
    /// </summary>
    internal static readonly Type[] JetStreamHotTypes = [typeof(JsConsumer), typeof(JsStream), typeof(AckTokens)];

    /// <summary>
    /// The assemblies below the JetStream core whose per-message methods (store loads, consumer state updates,
    /// checksums) are all warmed up: their types are internal to them, so every type is walked.
    /// </summary>
    internal static readonly Assembly[] JetStreamHotAssemblies =
        [typeof(IStreamStore).Assembly, typeof(FileStoreFactory).Assembly, typeof(MemoryStoreFactory).Assembly];

    public static void Start(ILogger log, bool jetStream)
    {
        // The Native AOT executable (Directory.Build.targets) compiled everything ahead of time: nothing to JIT.
        if (!RuntimeFeature.IsDynamicCodeCompiled) return;
        var thread = new Thread(() => Run(log, jetStream)) { IsBackground = true, Priority = ThreadPriority.BelowNormal, Name = "hot path warm-up" };
        thread.Start();
    }

    private static void Run(ILogger log, bool jetStream)
    {
        int count = 0;
        foreach (var method in jetStream ? Methods().Concat(JetStreamMethods()) : Methods())
        {
            try
            {
                RuntimeHelpers.PrepareMethod(method.MethodHandle);
                count++;
            }
            catch (Exception ex) when (ex is ArgumentException or NotSupportedException or TypeLoadException)
            {
                // Only time is lost: the method is compiled at its first call instead.
                log.LogDebug("warm-up of {Type}.{Method} failed: {Error}", method.DeclaringType?.Name, method.Name, ex.Message);
            }
        }
        // Every client's CONNECT is read with the source-generated metadata, whose first use builds its property
        // tables (generic instantiations over System.Text.Json's value types, which ReadyToRun cannot precompile).
        try
        {
            JsonSerializer.Deserialize("""{"verbose":false,"pedantic":false,"name":"","lang":"","version":"","protocol":1,"echo":true,"headers":true,"no_responders":true}"""u8,
                ProtocolJsonContext.Default.ConnectOptions);
        }
        catch (JsonException ex)
        {
            log.LogDebug("warm-up of CONNECT parsing failed: {Error}", ex.Message);
        }
        log.LogDebug("hot path warm-up: {Count} methods compiled", count);
    }

    /// <summary>
    /// Every <c>AggressiveOptimization</c> method of <see cref="HotTypes"/> and their nested types; the parser's methods
    /// generic over the protocol handler are instantiated with the client connection's handler (the one the core runs).
    /// </summary>
    internal static IEnumerable<MethodInfo> Methods() => MethodsOf(HotTypes, ClientConnection.ProtocolHandlerType);

    /// <summary>
    /// Every non-generic <c>AggressiveOptimization</c> method of <see cref="JetStreamHotTypes"/> and of the types of
    /// <see cref="JetStreamHotAssemblies"/>.
    /// </summary>
    [UnconditionalSuppressMessage("Trimming", "IL2026", Justification = "Runs only where code is JIT-compiled (Start returns in the native image); the JIT build is not trimmed.")]
    [UnconditionalSuppressMessage("Trimming", "IL2070", Justification = "As IL2026: the JIT build is not trimmed.")]
    [UnconditionalSuppressMessage("Trimming", "IL2075", Justification = "As IL2026: the JIT build is not trimmed.")]
    [UnconditionalSuppressMessage("Trimming", "IL2060", Justification = "As IL2026: the JIT build is not trimmed.")]
    [UnconditionalSuppressMessage("AOT", "IL3050", Justification = "Instantiates only where dynamic code is supported (Start returns in the native image).")]
    internal static IEnumerable<MethodInfo> JetStreamMethods() =>
        MethodsOf(JetStreamHotTypes.Concat(JetStreamHotAssemblies.SelectMany(a => a.GetTypes())), genericArgument: null);

    [UnconditionalSuppressMessage("Trimming", "IL2026", Justification = "Runs only where code is JIT-compiled (Start returns in the native image); the JIT build is not trimmed.")]
    [UnconditionalSuppressMessage("Trimming", "IL2070", Justification = "As IL2026: the JIT build is not trimmed.")]
    [UnconditionalSuppressMessage("Trimming", "IL2075", Justification = "As IL2026: the JIT build is not trimmed.")]
    [UnconditionalSuppressMessage("Trimming", "IL2060", Justification = "As IL2026: the JIT build is not trimmed.")]
    [UnconditionalSuppressMessage("AOT", "IL3050", Justification = "Instantiates only where dynamic code is supported (Start returns in the native image).")]
    private static IEnumerable<MethodInfo> MethodsOf(IEnumerable<Type> types, Type? genericArgument)
    {
        foreach (var type in types.SelectMany(t => t.GetNestedTypes(BindingFlags.NonPublic | BindingFlags.Public).Prepend(t)).Distinct())
        {
            if (type.IsGenericTypeDefinition) continue;
            foreach (var m in type.GetMethods(BindingFlags.DeclaredOnly | BindingFlags.Instance | BindingFlags.Static | BindingFlags.Public | BindingFlags.NonPublic))
            {
                if ((m.MethodImplementationFlags & MethodImplAttributes.AggressiveOptimization) == 0) continue;
                if (!m.IsGenericMethodDefinition) yield return m;
                else if (genericArgument is not null && m.GetGenericArguments().Length == 1) yield return m.MakeGenericMethod(genericArgument);
            }
        }
    }
}
